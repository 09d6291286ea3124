//! The engine: text in, audio out, on one pipeline: the text crate's [`Segmenter`] (read a
//! window at a time), the phonemiser loop ([`phonemise::sentences`]), and a backend from
//! [`make_backend`].
//!
//! - [`Engine`]: the streaming engine (a phonemiser thread, a bounded phoneme queue, an engine
//!   thread owning the backend and the audio output, adaptive step sizes); see `api.rs`.
//! - [`Synthesizer`]: blocking, each sentence decoded whole into a sink (`hark speak --out`,
//!   `hark bench`).
//!
//! [`Segmenter`]: hark_text::segment::Segmenter

mod api;
pub mod espeak;
mod failover;
mod gpu_later;
mod navigate;
pub mod output;
pub mod overrides;
pub mod phonemise;
mod producer;
pub mod queue;
pub mod steps;
mod synth;
pub mod tempo;
pub mod timing;
mod worker;

pub use api::{
    Engine, EngineConfig, Event, Events, KEEP_AUDIO, Mode, Settings, Stats, TIMELINE_SENTENCES,
    UtteranceId,
};
pub use hark_model::gpu::GpuOptions;
pub use hark_model::gpu::persist::GpuEngine;
pub use output::{Clip, Output};
pub use overrides::Overrides;
pub use phonemise::{Input, Piece};
pub use steps::StepMode;
pub use synth::{SpeakReport, Synthesizer};
pub use timing::{SentenceTiming, WordTiming};

use hark_model::backend::{Backend, CpuBackend};
use hark_model::gpu::persist::{PersistentBackend, choice};
use hark_model::gpu::{CudaBackend, GpuError};
use hark_voice::Voice;
use std::sync::Arc;

/// Which backend runs the model. Serialised by its lower-case name ("auto", "cpu", "cuda";
/// the app's settings once said "gpu" for CUDA, still read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The GPU when one works, else the CPU.
    #[default]
    Auto,
    Cpu,
    #[serde(alias = "gpu")]
    Cuda,
}

impl BackendChoice {
    pub const ALL: [BackendChoice; 3] = [Self::Auto, Self::Cpu, Self::Cuda];
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("nothing to speak: the text is empty")]
    EmptyText,
    #[error("nothing to speak: the text has no speakable sounds")]
    NothingSpeakable,
    #[error("{0}; use --backend cpu")]
    CudaUnavailable(String),
    #[error(transparent)]
    Text(#[from] hark_text::TextError),
    #[error(transparent)]
    Model(#[from] hark_model::cpu::ModelError),
    #[error(transparent)]
    Backend(#[from] hark_model::backend::BackendError),
    #[error("{0}")]
    Sink(String),
}

/// The backend for `choice`, with `engine` picking how the CUDA backend runs and `gpu` its
/// switches: the one backend
/// factory of both synthesis paths. `Auto` takes the GPU when one works, else the CPU (the
/// normal case on a machine without one, logged at info level); `Cuda` is an error without
/// one. The streaming engine calls it on its engine thread, which then owns the backend.
///
/// The backend speaks as the voice's speaker (`Voice::speaker`). Only the CPU conditions on
/// a speaker: for a multi-speaker voice the CUDA backend refuses to start, so `Auto` takes
/// the CPU (logged at info level) and `Cuda` is an error, never audio in the wrong voice.
pub fn make_backend(
    choice: BackendChoice,
    engine: GpuEngine,
    voice: &Arc<Voice>,
    gpu: &GpuOptions,
) -> Result<Box<dyn Backend>, EngineError> {
    let cpu = || -> Box<dyn Backend> { Box::new(CpuBackend::new(Arc::clone(voice))) };
    match choice {
        BackendChoice::Cpu => Ok(cpu()),
        BackendChoice::Cuda => cuda_backend(voice, engine, gpu)
            .map_err(|e| EngineError::CudaUnavailable(e.to_string())),
        BackendChoice::Auto => match cuda_backend(voice, engine, gpu) {
            Ok(b) => Ok(b),
            Err(e) => {
                tracing::info!("{e}; using the CPU backend");
                Ok(cpu())
            }
        },
    }
}

/// The CUDA backend running `engine` (Auto: the cached calibration's pick, else graphs).
/// A persistent kernel that cannot start leaves the graph path speaking (logged); one that
/// hangs later hands over to the CPU.
pub fn cuda_backend(
    voice: &Arc<Voice>,
    engine: GpuEngine,
    gpu: &GpuOptions,
) -> Result<Box<dyn Backend>, GpuError> {
    let graph = CudaBackend::new(voice, gpu)?;
    match choice::resolve(engine, &graph.model.gpu.name) {
        GpuEngine::Persistent => Ok(Box::new(PersistentBackend::from_graph(
            graph,
            Some(Arc::clone(voice)),
        ))),
        _ => Ok(Box::new(graph)),
    }
}
