//! The engine: text in, audio out.
//!
//! - [`Synthesizer`]: synchronous, one sentence at a time (`hark speak --out`, `hark bench`).
//! - [`Engine`]: the streaming engine (a phonemiser thread, a bounded phoneme queue, an engine
//!   thread owning the backend and the audio output, adaptive step sizes); see `api.rs`.

mod api;
pub mod output;
pub mod overrides;
mod producer;
pub mod queue;
pub mod segment;
pub mod steps;
mod worker;

pub use api::{Engine, EngineConfig, Event, Events, Mode, Settings, Stats, UtteranceId};
pub use hark_model::gpu::persist::GpuEngine;
pub use output::Output;
pub use overrides::Overrides;
pub use steps::StepMode;

use hark_model::backend::{Backend, CpuBackend};
use hark_model::cpu::pipeline;
use hark_model::gpu::persist::{PersistentBackend, choice};
use hark_model::gpu::{CudaBackend, GpuError};
use hark_voice::Scales;
use hark_voice::Voice;
use std::sync::Arc;

/// Longest piece of text phonemised in one go; longer runs are cut at sentence punctuation,
/// then at whitespace.
const MAX_PIECE_CHARS: usize = 2000;

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

/// The backend for `choice`; called on the engine thread, which then owns it.
pub fn make_backend(
    choice: BackendChoice,
    voice: &Arc<Voice>,
) -> Result<Box<dyn Backend>, EngineError> {
    make_backend_with(choice, GpuEngine::Auto, voice)
}

/// The backend for `choice`, with `engine` picking how the CUDA backend runs.
pub fn make_backend_with(
    choice: BackendChoice,
    engine: GpuEngine,
    voice: &Arc<Voice>,
) -> Result<Box<dyn Backend>, EngineError> {
    let cpu = || -> Box<dyn Backend> { Box::new(CpuBackend::new(Arc::clone(voice))) };
    match choice {
        BackendChoice::Cpu => Ok(cpu()),
        BackendChoice::Cuda => cuda_backend(voice, Some(Arc::clone(voice)), engine)
            .map_err(|e| EngineError::CudaUnavailable(e.to_string())),
        BackendChoice::Auto => match cuda_backend(voice, Some(Arc::clone(voice)), engine) {
            Ok(b) => Ok(b),
            Err(e) => {
                tracing::warn!("{e}; using the CPU backend");
                Ok(cpu())
            }
        },
    }
}

/// The CUDA backend running `engine` (Auto: the cached calibration's pick, else graphs).
/// A persistent kernel that cannot start leaves the graph path speaking (logged); one that
/// hangs later hands over to the CPU if `cpu_voice` is given.
pub fn cuda_backend(
    voice: &Voice,
    cpu_voice: Option<Arc<Voice>>,
    engine: GpuEngine,
) -> Result<Box<dyn Backend>, GpuError> {
    let graph = CudaBackend::new(voice)?;
    match choice::resolve(engine, &graph.model.gpu.name) {
        GpuEngine::Persistent => Ok(Box::new(PersistentBackend::from_graph(graph, cpu_voice))),
        _ => Ok(Box::new(graph)),
    }
}

/// What one `speak` produced.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpeakReport {
    pub sentences: usize,
    pub samples: usize,
}

pub struct Synthesizer {
    pub voice: Voice,
    pub scales: Scales,
    pub seed: u64,
    /// Normalise and segment text before phonemising (`false`: raw text straight to espeak).
    pub normalize: bool,
    pub segment: hark_text::segment::SegmentOptions,
    /// The GPU backend when one was chosen and works; otherwise the CPU reference runs.
    cuda: Option<std::sync::Mutex<Box<dyn Backend>>>,
}

impl Synthesizer {
    pub fn new(voice: Voice, backend: BackendChoice) -> Result<Self, EngineError> {
        Self::with_engine(voice, backend, GpuEngine::Auto)
    }

    /// As `new`, with `engine` picking how the CUDA backend runs.
    pub fn with_engine(
        voice: Voice,
        backend: BackendChoice,
        engine: GpuEngine,
    ) -> Result<Self, EngineError> {
        // No CPU hand-over inside the backend: this synthesiser's errors go to its caller.
        let cuda = match backend {
            BackendChoice::Cpu => None,
            BackendChoice::Cuda => Some(
                cuda_backend(&voice, None, engine)
                    .map_err(|e| EngineError::CudaUnavailable(e.to_string()))?,
            ),
            BackendChoice::Auto => match cuda_backend(&voice, None, engine) {
                Ok(b) => Some(b),
                Err(e) => {
                    tracing::warn!("{e}; using the CPU backend");
                    None
                }
            },
        };
        let scales = voice.config.inference;
        Ok(Self {
            voice,
            scales,
            seed: 0,
            normalize: true,
            segment: Default::default(),
            cuda: cuda.map(std::sync::Mutex::new),
        })
    }

    /// "cpu" or the GPU backend's name.
    pub fn backend_name(&self) -> String {
        match &self.cuda {
            Some(b) => b.lock().map(|b| b.name()).unwrap_or_else(|_| "cuda".into()),
            None => "cpu".into(),
        }
    }

    /// Phonemises and speaks `text`, handing each sentence's audio to `sink` as soon as it exists.
    pub fn speak_text(
        &self,
        raw: &str,
        mut sink: impl FnMut(&[f32]) -> Result<(), String>,
    ) -> Result<SpeakReport, EngineError> {
        if raw.trim().is_empty() {
            return Err(EngineError::EmptyText);
        }
        let cfg = &self.voice.config;
        let mut report = SpeakReport::default();
        // Normalised segments are made as they are spoken, so a long text is never held whole.
        let pieces: Box<dyn Iterator<Item = String>> = if self.normalize {
            Box::new(hark_text::segment::Segments::new(raw, &self.segment).map(|s| s.text))
        } else {
            Box::new(
                hark_text::split_sentences(raw, MAX_PIECE_CHARS)
                    .into_iter()
                    .map(|r| raw[r].to_string()),
            )
        };
        for piece in pieces {
            let ids = hark_text::text_to_ids(&piece, &cfg.espeak_voice, &cfg.phoneme_id_map);
            let sentences = match ids {
                Ok(s) => s,
                // espeak-ng died on this piece in its child (logged there): skip the piece.
                Err(hark_text::TextError::EspeakCrashed(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            for sentence in sentences {
                // BOS, PAD, EOS alone: nothing audible to say.
                if sentence.ids.len() <= 3 {
                    continue;
                }
                self.speak_one(&sentence.ids, report.sentences, &mut sink, &mut report)?;
            }
        }
        if report.sentences == 0 {
            return Err(EngineError::NothingSpeakable);
        }
        Ok(report)
    }

    /// Speaks raw phoneme ids, bypassing the text front-end.
    pub fn speak_ids(
        &self,
        ids: &[i64],
        mut sink: impl FnMut(&[f32]) -> Result<(), String>,
    ) -> Result<SpeakReport, EngineError> {
        let mut report = SpeakReport::default();
        self.speak_one(ids, 0, &mut sink, &mut report)?;
        Ok(report)
    }

    fn speak_one(
        &self,
        ids: &[i64],
        index: usize,
        sink: &mut impl FnMut(&[f32]) -> Result<(), String>,
        report: &mut SpeakReport,
    ) -> Result<(), EngineError> {
        let v = &self.voice;
        // Each sentence gets its own seed so any sentence can be re-synthesised alone.
        let seed = self.seed.wrapping_add(index as u64);
        let audio = match &self.cuda {
            Some(b) => {
                let mut b = b
                    .lock()
                    .map_err(|_| EngineError::Sink("backend poisoned".into()))?;
                let info = b.begin(ids, &self.scales, seed)?;
                if info.frames == 0 {
                    Vec::new()
                } else {
                    b.decode(0, info.frames)?
                }
            }
            None => {
                pipeline::synthesize(&v.weights, &v.config.dims, ids, &self.scales, seed)?.audio
            }
        };
        sink(&audio).map_err(EngineError::Sink)?;
        report.sentences += 1;
        report.samples += audio.len();
        Ok(())
    }
}
