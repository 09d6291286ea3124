//! WAV output through `hound`, written incrementally so long texts never sit in memory whole.
//! The samples go to a hidden partial file beside the target, renamed into place when the WAV
//! is complete (`crate::partial`).

use crate::partial::Partial;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WavFormat {
    /// 16-bit signed integer PCM.
    Pcm16,
    /// 32-bit float samples, bit-exact with the model output.
    F32,
}

impl WavFormat {
    pub const ALL: [WavFormat; 2] = [Self::Pcm16, Self::F32];
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write WAV file {path}: {source}")]
pub struct WavError {
    path: String,
    #[source]
    source: hound::Error,
}

impl WavError {
    fn io(path: &str, e: std::io::Error) -> Self {
        Self {
            path: path.to_string(),
            source: hound::Error::IoError(e),
        }
    }
}

pub struct WavSink {
    writer: hound::WavWriter<BufWriter<File>>,
    format: WavFormat,
    path: String,
    partial: Partial,
}

impl WavSink {
    pub fn create(path: &Path, sample_rate: u32, format: WavFormat) -> Result<Self, WavError> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate,
            bits_per_sample: match format {
                WavFormat::Pcm16 => 16,
                WavFormat::F32 => 32,
            },
            sample_format: match format {
                WavFormat::Pcm16 => hound::SampleFormat::Int,
                WavFormat::F32 => hound::SampleFormat::Float,
            },
        };
        let shown = path.display().to_string();
        let (partial, file) = Partial::create(path).map_err(|e| WavError::io(&shown, e))?;
        let writer =
            hound::WavWriter::new(BufWriter::new(file), spec).map_err(|source| WavError {
                path: shown.clone(),
                source,
            })?;
        Ok(Self {
            writer,
            format,
            path: shown,
            partial,
        })
    }

    pub fn write(&mut self, samples: &[f32]) -> Result<(), WavError> {
        let result: Result<(), hound::Error> =
            samples.iter().try_for_each(|&s| match self.format {
                WavFormat::F32 => self.writer.write_sample(s),
                WavFormat::Pcm16 => self.writer.write_sample(to_pcm16(s)),
            });
        result.map_err(|source| WavError {
            path: self.path.clone(),
            source,
        })
    }

    /// Completes the WAV and puts it in place; until then the target is untouched.
    pub fn finish(self) -> Result<(), WavError> {
        let Self {
            writer,
            path,
            partial,
            ..
        } = self;
        writer.finalize().map_err(|source| WavError {
            path: path.clone(),
            source,
        })?;
        partial.commit().map_err(|e| WavError::io(&path, e))
    }
}

/// Piper scales by 32767 and clips; do the same so PCM output matches Piper's.
pub fn to_pcm16(s: f32) -> i16 {
    (s * 32767.0).round().clamp(-32768.0, 32767.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_round_trips_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.wav");
        let samples: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).sin() * 0.9).collect();
        let mut sink = WavSink::create(&path, 22050, WavFormat::F32).unwrap();
        sink.write(&samples).unwrap();
        sink.finish().unwrap();
        let mut r = hound::WavReader::open(&path).unwrap();
        assert_eq!(r.spec().sample_rate, 22050);
        let back: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).collect();
        assert_eq!(back, samples);
    }

    #[test]
    fn the_target_appears_only_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.wav");
        let names = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let mut sink = WavSink::create(&path, 22050, WavFormat::Pcm16).unwrap();
        sink.write(&[0.1; 100]).unwrap();
        assert!(!path.exists(), "not before it is complete");
        assert_eq!(names().len(), 1);
        drop(sink); // a failure: given up before finish
        assert!(
            names().is_empty(),
            "the partial file is removed: {:?}",
            names()
        );
        // An older file stays intact until a complete new one replaces it.
        std::fs::write(&path, b"old").unwrap();
        let sink = WavSink::create(&path, 22050, WavFormat::Pcm16).unwrap();
        drop(sink);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let mut sink = WavSink::create(&path, 22050, WavFormat::Pcm16).unwrap();
        sink.write(&[0.1; 100]).unwrap();
        sink.finish().unwrap();
        assert_eq!(hound::WavReader::open(&path).unwrap().len(), 100);
        assert_eq!(names(), ["x.wav"]);
        // A folder that cannot be written to is an error, and nothing is left.
        assert!(WavSink::create(&dir.path().join("no/such/x.wav"), 22050, WavFormat::F32).is_err());
    }

    #[test]
    fn pcm16_clips_instead_of_wrapping() {
        assert_eq!(to_pcm16(2.0), 32767);
        assert_eq!(to_pcm16(-2.0), -32768);
        assert_eq!(to_pcm16(0.0), 0);
    }
}
