//! `voice.safetensors`: the voice's weights under PyTorch module names, f32 or f16 on disk,
//! always f32 in memory for the CPU reference.

use crate::tensor::Tensor;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("cannot read weights file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("weights file {path} is corrupt: {reason}")]
    Corrupt { path: String, reason: String },
    #[error("the voice has no weight named `{0}`")]
    Missing(String),
    #[error("weight `{name}` has shape {got:?}, expected {want:?}")]
    Shape {
        name: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
}

/// All weights of a voice, by PyTorch name (e.g. `enc_p.encoder.attn_layers.0.conv_q.weight`).
/// The tensors are shared: a clone, or a set with a few tensors replaced
/// ([`Weights::with_replaced`], a speaker's conditioned biases), copies no weight data.
#[derive(Clone, Debug, Default)]
pub struct Weights {
    tensors: HashMap<String, Arc<Tensor>>,
}

impl Weights {
    pub fn from_map(tensors: HashMap<String, Tensor>) -> Self {
        Self {
            tensors: tensors.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        }
    }

    /// These weights with the tensors of `new` in place of (or beside) those of their names;
    /// the others are shared with `self`.
    pub fn with_replaced(&self, new: impl IntoIterator<Item = (String, Tensor)>) -> Self {
        let mut tensors = self.tensors.clone();
        tensors.extend(new.into_iter().map(|(k, v)| (k, Arc::new(v))));
        Self { tensors }
    }

    /// Reads `voice.safetensors` through a read-only map, a tensor at a time: each tensor's
    /// file pages are dropped from the process once it is converted, so loading holds the
    /// f32 weights plus one tensor's bytes, not the whole file twice (a 63 MB voice peaked at
    /// ~126 MB read whole; docs/RELIABILITY.md, "Memory bounded by design").
    pub fn load(path: &Path) -> Result<Self, WeightsError> {
        let shown = path.display().to_string();
        let io = |source| WeightsError::Io {
            path: shown.clone(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and lives only for this call. Voice files are written
        // whole and renamed into place (`hark voice import`), never rewritten in place, so
        // the pages cannot change under it; a file cut short by another process while mapped
        // is the one case this trusts away.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Self::convert(&map, |bytes| drop_pages(&map, bytes)).map_err(|reason| {
            WeightsError::Corrupt {
                path: shown.clone(),
                reason,
            }
        })
    }

    /// Parses a whole safetensors file held in memory (the tests, the fuzzer).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        Self::convert(bytes, |_| {})
    }

    /// Converts every tensor to f32; `done` is told each tensor's bytes once they are read.
    fn convert(bytes: &[u8], mut done: impl FnMut(&[u8])) -> Result<Self, String> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?;
        let mut tensors = HashMap::new();
        for (name, view) in st.tensors() {
            let raw = view.data();
            let data: Vec<f32> = match view.dtype() {
                Dtype::F32 => raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => raw
                    .chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                other => return Err(format!("tensor `{name}` has unsupported type {other:?}")),
            };
            done(raw);
            tensors.insert(name, Arc::new(Tensor::new(view.shape().to_vec(), data)));
        }
        Ok(Self { tensors })
    }

    pub fn get(&self, name: &str) -> Result<&Tensor, WeightsError> {
        self.tensors
            .get(name)
            .map(|t| &**t)
            .ok_or_else(|| WeightsError::Missing(name.to_string()))
    }

    /// Like `get`, but also checks the shape.
    pub fn get_shaped(&self, name: &str, want: &[usize]) -> Result<&Tensor, WeightsError> {
        let t = self.get(name)?;
        if t.shape != want {
            return Err(WeightsError::Shape {
                name: name.to_string(),
                got: t.shape.clone(),
                want: want.to_vec(),
            });
        }
        Ok(t)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.tensors.iter().map(|(k, v)| (k.as_str(), &**v))
    }
}

/// Drops the file pages under `bytes` (a part of `map`) from the process's resident set; the
/// kernel reads them from the file again if they are touched. Best effort: a refusal costs
/// memory, not correctness.
#[cfg(unix)]
fn drop_pages(map: &memmap2::Mmap, bytes: &[u8]) {
    // A multiple of every page size in use (4, 16 and 64 KiB).
    const PAGE: usize = 64 * 1024;
    let start = bytes.as_ptr() as usize - map.as_ptr() as usize;
    // madvise needs a page-aligned start; a page shared with the next tensor is read again.
    let from = start / PAGE * PAGE;
    let len = start + bytes.len() - from;
    // SAFETY: `DontNeed` on a read-only file map only drops clean pages, which later reads
    // fetch from the file again; no data of the map is lost or changed.
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, len) };
}

#[cfg(not(unix))]
fn drop_pages(_: &memmap2::Mmap, _: &[u8]) {}
