//! Ogg Opus (RFC 7845) through libopus (the `opus` crate, with its bundled libopus 1.5) and
//! the `ogg` crate's page writer.
//!
//! The voice's samples are resampled to 24 kHz (an Opus input rate; wide enough for a 22 kHz
//! voice) with the resampler's delay removed, encoded in 20 ms packets, and the stream says
//! exactly how long it is: the header's pre-skip is the encoder's look-ahead, and the last
//! page's granule position (48 kHz) cuts the final packet's padding, so a decoder gives back
//! as many samples as went in (at its rate).

use super::{Encoder, ExportError, Target, tags};
use crate::partial::Partial;
use crate::resample::StreamResampler;
use ogg::writing::{PacketWriteEndInfo, PacketWriter};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The rate libopus is fed at.
const OPUS_RATE: u32 = 24_000;
/// 20 ms at [`OPUS_RATE`].
const FRAME: usize = 480;
/// Granule positions count 48 kHz samples whatever the input rate.
const GRANULE_PER_SAMPLE: u64 = (48_000 / OPUS_RATE) as u64;
const BITRATE: i32 = 32_000;
/// Packets per Ogg page: one page a second, for seeking.
const PACKETS_PER_PAGE: u64 = 50;
const SERIAL: u32 = 0x6861_726b; // "hark"

pub(crate) struct OpusEncoder {
    pages: PacketWriter<'static, BufWriter<File>>,
    partial: Partial,
    target: PathBuf,
    opus: opus::Encoder,
    resampler: StreamResampler,
    input_rate: u32,
    titles: Vec<String>,
    /// Samples at [`OPUS_RATE`] waiting for a whole frame.
    pcm: Vec<f32>,
    resampled: Vec<f32>,
    /// The newest packet, held back until it is known whether it is the last.
    held: Option<Vec<u8>>,
    packets: u64,
    /// Input samples taken (at the voice's rate).
    taken: u64,
    pre_skip: u16,
    /// The bytes of the header pages, rewritten with the chapters at the end.
    header_len: usize,
}

impl OpusEncoder {
    pub(crate) fn create(target: &Target) -> Result<Self, ExportError> {
        let (path, sample_rate, titles) = (target.path, target.rate, target.titles);
        let err = ExportError::at(path);
        let mut opus =
            opus::Encoder::new(OPUS_RATE, opus::Channels::Mono, opus::Application::Audio)
                .map_err(|e| err(&e))?;
        opus.set_bitrate(opus::Bitrate::Bits(BITRATE))
            .map_err(|e| err(&e))?;
        let lookahead = opus.get_lookahead().map_err(|e| err(&e))?;
        let pre_skip = (lookahead as u64 * GRANULE_PER_SAMPLE) as u16;
        let resampler = StreamResampler::new(sample_rate, OPUS_RATE).map_err(|e| err(&e))?;
        let (partial, file) = Partial::create(path).map_err(|e| err(&e))?;
        let mut pages = PacketWriter::new(BufWriter::new(file));
        for h in headers(pre_skip, sample_rate, titles, &[]) {
            pages
                .write_packet(h, SERIAL, PacketWriteEndInfo::EndPage, 0)
                .map_err(|e| err(&e))?;
        }
        let header_len = header_pages(pre_skip, sample_rate, titles, &[])
            .map_err(|e| err(&e))?
            .len();
        Ok(Self {
            pages,
            partial,
            target: path.to_path_buf(),
            opus,
            resampler,
            input_rate: sample_rate,
            titles: titles.to_vec(),
            pcm: Vec::with_capacity(FRAME * 8),
            resampled: Vec::new(),
            held: None,
            packets: 0,
            taken: 0,
            pre_skip,
            header_len,
        })
    }

    /// Encodes every whole frame in `pcm`, writing all but the newest packet.
    fn encode_frames(&mut self) -> Result<(), ExportError> {
        let mut at = 0;
        while self.pcm.len() - at >= FRAME {
            let packet = self
                .opus
                .encode_vec_float(&self.pcm[at..at + FRAME], 4000)
                .map_err(|e| ExportError::new(&self.target, e))?;
            at += FRAME;
            if let Some(prev) = self.held.replace(packet) {
                self.put(prev, None)?;
            }
        }
        self.pcm.drain(..at);
        Ok(())
    }

    /// Writes a packet; `last` carries the stream's final granule position.
    fn put(&mut self, packet: Vec<u8>, last: Option<u64>) -> Result<(), ExportError> {
        self.packets += 1;
        let (end, granule) = match last {
            Some(g) => (PacketWriteEndInfo::EndStream, g),
            None if self.packets.is_multiple_of(PACKETS_PER_PAGE) => (
                PacketWriteEndInfo::EndPage,
                self.packets * FRAME as u64 * GRANULE_PER_SAMPLE,
            ),
            None => (
                PacketWriteEndInfo::NormalPacket,
                self.packets * FRAME as u64 * GRANULE_PER_SAMPLE,
            ),
        };
        self.pages
            .write_packet(packet, SERIAL, end, granule)
            .map_err(|e| ExportError::new(&self.target, e))
    }
}

/// The first two pages, as [`headers`] makes them: the same bytes as the stream's own, since
/// the same writer state (a new stream, sequence numbers from 0) makes them.
fn header_pages(
    pre_skip: u16,
    input_rate: u32,
    titles: &[String],
    starts: &[u64],
) -> std::io::Result<Vec<u8>> {
    let mut pages = PacketWriter::new(Vec::new());
    for h in headers(pre_skip, input_rate, titles, starts) {
        pages.write_packet(h, SERIAL, PacketWriteEndInfo::EndPage, 0)?;
    }
    Ok(pages.into_inner())
}

/// OpusHead and OpusTags (with the chapters at `starts`, padded to their reserved length).
fn headers(pre_skip: u16, input_rate: u32, titles: &[String], starts: &[u64]) -> [Vec<u8>; 2] {
    let mut head = b"OpusHead".to_vec();
    head.push(1); // version
    head.push(1); // channels
    head.extend_from_slice(&pre_skip.to_le_bytes());
    head.extend_from_slice(&input_rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes()); // output gain
    head.push(0); // mapping family: mono
    let mut comments = b"OpusTags".to_vec();
    comments.extend(tags::vorbis_comments(&tags::chapter_comments(
        titles, starts, input_rate,
    )));
    // Padding after the comments starts with a 0 byte, which marks it as discardable
    // (RFC 7845 §5.2).
    comments.resize(8 + tags::reserved_len(titles, input_rate), 0);
    [head, comments]
}

impl Encoder for OpusEncoder {
    fn write(&mut self, samples: &[f32]) -> Result<(), ExportError> {
        self.taken += samples.len() as u64;
        self.resampled.clear();
        self.resampler
            .process(samples, &mut self.resampled)
            .map_err(|e| ExportError::new(&self.target, e))?;
        self.pcm.extend_from_slice(&self.resampled);
        self.encode_frames()
    }

    fn finish(mut self: Box<Self>, chapter_starts: &[u64]) -> Result<(), ExportError> {
        let err = |t: &Path, e: &dyn std::fmt::Display| ExportError::new(t, e);
        // What the input comes to at 24 kHz; everything beyond is the resampler's tail.
        let wanted = (self.taken as f64 * OPUS_RATE as f64 / self.input_rate as f64).round() as u64;
        self.resampled.clear();
        self.resampler
            .drain(&mut self.resampled)
            .map_err(|e| err(&self.target, &e))?;
        self.pcm.extend_from_slice(&self.resampled);
        let produced = self.packets + self.held.is_some() as u64;
        let so_far = produced * FRAME as u64 + self.pcm.len() as u64;
        self.pcm
            .truncate(self.pcm.len() - so_far.saturating_sub(wanted) as usize);
        // Zeros to push the last real sample through the encoder's look-ahead, whole frames.
        let lookahead = self.pre_skip as usize / GRANULE_PER_SAMPLE as usize;
        let end = self.pcm.len() + lookahead;
        self.pcm.resize(end.div_ceil(FRAME).max(1) * FRAME, 0.0);
        self.encode_frames()?;
        let last = self.held.take().expect("at least one frame was encoded");
        let granule = self.pre_skip as u64 + wanted * GRANULE_PER_SAMPLE;
        self.put(last, Some(granule))?;
        let Self {
            pages,
            partial,
            target,
            pre_skip,
            input_rate,
            titles,
            header_len,
            ..
        } = *self;
        let header = header_pages(pre_skip, input_rate, &titles, chapter_starts)
            .map_err(|e| err(&target, &e))?;
        if header.len() != header_len {
            return Err(err(
                &target,
                &"the chapters do not fit the room reserved for them",
            ));
        }
        let mut file = pages
            .into_inner()
            .into_inner()
            .map_err(|e| err(&target, e.error()))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| err(&target, &e))?;
        file.write_all(&header).map_err(|e| err(&target, &e))?;
        drop(file);
        partial.commit().map_err(|e| err(&target, &e))
    }
}
