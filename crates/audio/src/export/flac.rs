//! FLAC through `flacenc`, one frame at a time (its whole-stream entry point would hold the
//! book in memory): 16-bit samples, as the 16-bit WAV has them, in blocks of 4,096.
//!
//! Layout: `fLaC`, STREAMINFO (rewritten at the end with the sample count, frame sizes and
//! MD5), VORBIS_COMMENT with the chapters and a PADDING block that together fill the room
//! reserved at the start, then the frames.

use super::{Encoder, ExportError, Target, tags};
use crate::partial::Partial;
use crate::wav::to_pcm16;
use flacenc::bitsink::ByteSink;
use flacenc::component::{BitRepr, StreamInfo};
use flacenc::error::{Verified, Verify};
use flacenc::source::{Context, Fill, FrameBuf};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

const BLOCK: usize = 4096;
const BITS: usize = 16;
/// `fLaC` and STREAMINFO's block (header and 34 bytes).
const STREAMINFO_END: u64 = 4 + 4 + 34;
const VORBIS_COMMENT: u8 = 4;
const PADDING: u8 = 1;
const LAST_BLOCK: u8 = 0x80;

pub(crate) struct FlacEncoder {
    out: BufWriter<File>,
    partial: Partial,
    target: PathBuf,
    config: Verified<flacenc::config::Encoder>,
    info: StreamInfo,
    titles: Vec<String>,
    /// Bytes from the end of STREAMINFO to the first frame: comments and padding.
    tag_room: usize,
    block: Vec<i32>,
    framebuf: FrameBuf,
    context: Context,
    sink: ByteSink,
    frame_sizes: (usize, usize),
}

impl FlacEncoder {
    pub(crate) fn create(target: &Target) -> Result<Self, ExportError> {
        let (path, sample_rate, titles) = (target.path, target.rate, target.titles);
        let err = ExportError::at(path);
        let mut info = StreamInfo::new(sample_rate as usize, 1, BITS).map_err(|e| err(&e))?;
        info.set_block_sizes(BLOCK, BLOCK).map_err(|e| err(&e))?;
        let config = flacenc::config::Encoder::default()
            .into_verified()
            .map_err(|(_, e)| err(&e))?;
        let (partial, file) = Partial::create(path).map_err(|e| err(&e))?;
        // A comment block and a padding block, each with its 4-byte header.
        let tag_room = 4 + tags::reserved_len(titles, sample_rate) + 4;
        let mut enc = Self {
            out: BufWriter::new(file),
            partial,
            target: path.to_path_buf(),
            config,
            info,
            titles: titles.to_vec(),
            tag_room,
            block: Vec::with_capacity(BLOCK),
            framebuf: FrameBuf::with_size(1, BLOCK).map_err(|e| err(&e))?,
            context: Context::new(BITS, 1),
            sink: ByteSink::new(),
            frame_sizes: (usize::MAX, 0),
        };
        let head = enc.header(&[])?;
        enc.out.write_all(&head).map_err(|e| err(&e))?;
        Ok(enc)
    }

    /// `fLaC`, STREAMINFO as it stands, and the comments with chapters at `starts`, padded to
    /// the reserved room.
    fn header(&self, starts: &[u64]) -> Result<Vec<u8>, ExportError> {
        let mut h = b"fLaC".to_vec();
        h.extend_from_slice(&block_header(0, 34));
        let mut info = ByteSink::new();
        self.info
            .write(&mut info)
            .map_err(|e| ExportError::new(&self.target, e))?;
        h.extend_from_slice(info.as_slice());
        let rate = self.info.sample_rate() as u32;
        let comments = tags::vorbis_comments(&tags::chapter_comments(&self.titles, starts, rate));
        h.extend_from_slice(&block_header(VORBIS_COMMENT, comments.len()));
        h.extend_from_slice(&comments);
        let padding = self.tag_room - 8 - comments.len();
        h.extend_from_slice(&block_header(PADDING | LAST_BLOCK, padding));
        h.resize(STREAMINFO_END as usize + self.tag_room, 0);
        Ok(h)
    }

    /// Encodes the samples gathered in `block` as the next frame.
    fn flush_block(&mut self) -> Result<(), ExportError> {
        let err = ExportError::at(&self.target);
        (&mut self.framebuf, &mut self.context)
            .fill_interleaved(&self.block)
            .map_err(|e| err(&e))?;
        let number = self.context.current_frame_number().unwrap_or(0);
        let frame =
            flacenc::encode_fixed_size_frame(&self.config, &self.framebuf, number, &self.info)
                .map_err(|e| err(&e))?;
        self.sink.clear();
        frame.write(&mut self.sink).map_err(|e| err(&e))?;
        let bytes = self.sink.as_slice();
        self.frame_sizes = (
            self.frame_sizes.0.min(bytes.len()),
            self.frame_sizes.1.max(bytes.len()),
        );
        self.out.write_all(bytes).map_err(|e| err(&e))?;
        self.block.clear();
        Ok(())
    }
}

fn block_header(kind: u8, len: usize) -> [u8; 4] {
    let l = (len as u32).to_be_bytes();
    [kind, l[1], l[2], l[3]]
}

impl Encoder for FlacEncoder {
    fn write(&mut self, samples: &[f32]) -> Result<(), ExportError> {
        for &s in samples {
            self.block.push(to_pcm16(s) as i32);
            if self.block.len() == BLOCK {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, chapter_starts: &[u64]) -> Result<(), ExportError> {
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        let target = self.target.clone();
        let err = ExportError::at(&target);
        let total = self.context.total_samples();
        self.info.set_total_samples(total);
        self.info.set_md5_digest(&self.context.md5_digest());
        if total > 0 {
            let (min, max) = self.frame_sizes;
            self.info.set_frame_sizes(min, max).map_err(|e| err(&e))?;
        }
        let head = self.header(chapter_starts)?;
        let Self { out, partial, .. } = *self;
        let mut file = out.into_inner().map_err(|e| err(&e.error().to_string()))?;
        file.seek(SeekFrom::Start(0)).map_err(|e| err(&e))?;
        file.write_all(&head).map_err(|e| err(&e))?;
        drop(file);
        partial.commit().map_err(|e| err(&e))
    }
}
