//! MP3 through LAME (`mp3lame-encoder`, its bundled LAME 3.100): 64 kbit/s CBR mono at the
//! voice's rate (22,050 Hz is an MPEG-2 rate, so nothing is resampled), with LAME's Info
//! frame, which tells decoders the encoder delay and padding (gapless playback and exact
//! lengths; at 48 kbit/s a frame is too small to hold it, and LAME leaves it out). Chapters are an ID3v2.4 tag in front: a `CTOC` listing one `CHAP` per chapter
//! (times in ms), each with its title as `TIT2`. The tag is written with placeholder times
//! first and again at the end with the real ones: the same size, since times are fixed-width.

use super::{Encoder, ExportError, Target, chapter_span, clean_title};
use crate::partial::Partial;
use id3::{Frame, Tag, TagLike, frame};
use mp3lame_encoder::{Bitrate, Builder, FlushGap, MonoPcm, Quality};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

pub(crate) struct Mp3Encoder {
    out: BufWriter<File>,
    partial: Partial,
    target: PathBuf,
    lame: mp3lame_encoder::Encoder,
    titles: Vec<String>,
    rate: u32,
    buf: Vec<u8>,
    samples: u64,
    tag_len: usize,
}

impl Mp3Encoder {
    pub(crate) fn create(target: &Target) -> Result<Self, ExportError> {
        let (path, sample_rate, titles) = (target.path, target.rate, target.titles);
        let err = ExportError::at(path);
        let mut b = Builder::new().ok_or_else(|| err(&"LAME could not start"))?;
        b.set_num_channels(1).map_err(|e| err(&e))?;
        b.set_sample_rate(sample_rate).map_err(|e| err(&e))?;
        b.set_brate(Bitrate::Kbps64).map_err(|e| err(&e))?;
        b.set_quality(Quality::Good).map_err(|e| err(&e))?;
        b.set_to_write_vbr_tag(true).map_err(|e| err(&e))?;
        let lame = b.build().map_err(|e| err(&e))?;
        let (partial, file) = Partial::create(path).map_err(|e| err(&e))?;
        let tag = chapter_tag(titles, &[], 0, sample_rate).map_err(|e| err(&e))?;
        let mut out = BufWriter::new(file);
        out.write_all(&tag).map_err(|e| err(&e))?;
        Ok(Self {
            out,
            partial,
            target: path.to_path_buf(),
            lame,
            titles: titles.to_vec(),
            rate: sample_rate,
            buf: Vec::new(),
            samples: 0,
            tag_len: tag.len(),
        })
    }
}

/// The ID3v2 tag with the chapters at `starts` (of `total` samples at `rate`); empty without
/// chapters.
fn chapter_tag(titles: &[String], starts: &[u64], total: u64, rate: u32) -> id3::Result<Vec<u8>> {
    if titles.is_empty() {
        return Ok(Vec::new());
    }
    let ms = |s: u64| (s * 1000 / rate.max(1) as u64).min(u32::MAX as u64 - 1) as u32;
    let mut tag = Tag::new();
    let ids: Vec<String> = (1..=titles.len()).map(|i| format!("chp{i}")).collect();
    tag.add_frame(frame::TableOfContents {
        element_id: "toc".into(),
        top_level: true,
        ordered: true,
        elements: ids.clone(),
        frames: Vec::new(),
    });
    for (i, (id, title)) in ids.into_iter().zip(titles).enumerate() {
        let (start, end) = chapter_span(starts, i, total);
        tag.add_frame(frame::Chapter {
            element_id: id,
            start_time: ms(start),
            end_time: ms(end),
            start_offset: u32::MAX,
            end_offset: u32::MAX,
            frames: vec![Frame::text("TIT2", clean_title(title))],
        });
    }
    let mut out = Vec::new();
    tag.write_to(&mut out, id3::Version::Id3v24)?;
    Ok(out)
}

impl Encoder for Mp3Encoder {
    fn write(&mut self, samples: &[f32]) -> Result<(), ExportError> {
        let err = ExportError::at(&self.target);
        // LAME takes at most an int's worth of samples per call; a sentence is far less.
        for piece in samples.chunks(1 << 20) {
            self.buf.clear();
            self.buf
                .reserve(mp3lame_encoder::max_required_buffer_size(piece.len()));
            self.lame
                .encode_to_vec(MonoPcm(piece), &mut self.buf)
                .map_err(|e| err(&e))?;
            self.out.write_all(&self.buf).map_err(|e| err(&e))?;
        }
        self.samples += samples.len() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>, chapter_starts: &[u64]) -> Result<(), ExportError> {
        let target = self.target.clone();
        let err = ExportError::at(&target);
        self.buf.clear();
        self.buf.reserve(7200);
        self.lame
            .flush_to_vec::<FlushGap>(&mut self.buf)
            .map_err(|e| err(&e))?;
        self.out.write_all(&self.buf).map_err(|e| err(&e))?;
        // The Info frame, now that the lengths are known: it replaces the first frame.
        self.buf.clear();
        self.buf.reserve(self.lame.lame_tag_size());
        let info = self.lame.lame_tag_encode_to_vec(&mut self.buf).is_some();
        let tag = chapter_tag(&self.titles, chapter_starts, self.samples, self.rate)
            .map_err(|e| err(&e))?;
        if tag.len() != self.tag_len {
            return Err(err(&"the chapters do not fit the room reserved for them"));
        }
        let Self {
            out,
            partial,
            buf,
            tag_len,
            ..
        } = *self;
        let mut file = out.into_inner().map_err(|e| err(e.error()))?;
        file.seek(SeekFrom::Start(0)).map_err(|e| err(&e))?;
        file.write_all(&tag).map_err(|e| err(&e))?;
        if info {
            file.seek(SeekFrom::Start(tag_len as u64))
                .map_err(|e| err(&e))?;
            file.write_all(&buf).map_err(|e| err(&e))?;
        }
        drop(file);
        partial.commit().map_err(|e| err(&e))
    }
}
