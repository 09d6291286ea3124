//! `voice.safetensors`: the voice's weights under PyTorch module names, f32 or f16 on disk,
//! always f32 in memory for the CPU reference.

use crate::tensor::Tensor;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::Path;

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
#[derive(Clone, Debug, Default)]
pub struct Weights {
    tensors: HashMap<String, Tensor>,
}

impl Weights {
    pub fn from_map(tensors: HashMap<String, Tensor>) -> Self {
        Self { tensors }
    }

    pub fn load(path: &Path) -> Result<Self, WeightsError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| WeightsError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_bytes(&bytes).map_err(|reason| WeightsError::Corrupt {
            path: shown,
            reason,
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
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
            tensors.insert(name, Tensor::new(view.shape().to_vec(), data));
        }
        Ok(Self { tensors })
    }

    pub fn get(&self, name: &str) -> Result<&Tensor, WeightsError> {
        self.tensors
            .get(name)
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
        self.tensors.iter().map(|(k, v)| (k.as_str(), v))
    }
}
