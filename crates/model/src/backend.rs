//! The backend interface the engine drives: one utterance at a time, front half once, then
//! audio in frame chunks of any size (the streaming engine picks the size adaptively).

use super::cpu::{self, pipeline};
use hark_voice::Scales;
use hark_voice::tensor::Tensor;
use hark_voice::{Voice, Weights};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Model(#[from] cpu::ModelError),
    #[error("{0}")]
    Device(String),
    #[error("no utterance has been started")]
    NoUtterance,
}

/// What the front half decided about an utterance.
#[derive(Clone, Debug)]
pub struct UtteranceInfo {
    /// Frames per id (Σ = frames).
    pub durations: Vec<usize>,
    pub frames: usize,
    /// The duration predictor's log-durations per id, before the length scale (so the
    /// durations at any other length scale are known: `cpu::durations::durations`); `None`
    /// where the backend does not bring them back (the persistent CUDA kernel).
    pub logw: Option<Vec<f32>>,
}

pub trait Backend {
    /// e.g. "cpu" or "cuda: NVIDIA H200".
    fn name(&self) -> String;

    /// Runs the encoder, duration predictor, expansion and prior sampling for one utterance
    /// (a sentence of phoneme ids) and keeps `z_p` for `decode`.
    fn begin(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError>;

    /// Audio for frames `[start, end)` of the current utterance (`hop` samples per frame).
    /// Chunks decoded with enough context equal the full-utterance decode.
    fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, BackendError>;

    /// [`Backend::decode`] that may give up early, returning `Ok(None)`, once `cancelled()`
    /// is true (a stop arrived: the audio is no longer wanted), so a stop need not wait for
    /// a long step. By default it is not cancellable.
    fn decode_cancellable(
        &mut self,
        start: usize,
        end: usize,
        cancelled: cpu::CancelFn,
    ) -> Result<Option<Vec<f32>>, BackendError> {
        let _ = cancelled;
        self.decode(start, end).map(Some)
    }
}

/// The warm-up utterance (any voice's vocabulary has ids below 50) and its scales.
pub fn warm_up_ids() -> Vec<i64> {
    (0..120)
        .map(|i| if i % 2 == 0 { 0 } else { 20 + i % 30 })
        .collect()
}
pub const WARM_UP_SCALES: Scales = Scales::PIPER;

/// Runs the warm-up utterance through `b`: its front half, then chunks of `steps` frames, so
/// that the first real utterance pays no first-touch, thread-start or cache cost.
pub fn warm_up(b: &mut dyn Backend, steps: &[usize]) -> Result<(), BackendError> {
    let info = b.begin(&warm_up_ids(), &WARM_UP_SCALES, 0)?;
    let mut a = 0;
    for &size in steps {
        if a >= info.frames {
            break;
        }
        let e = (a + size).min(info.frames);
        b.decode(a, e)?;
        a = e;
    }
    Ok(())
}

/// The f32 reference on the CPU, speaking as the voice's speaker (`Voice::speaker`).
pub struct CpuBackend {
    voice: Arc<Voice>,
    /// The voice's weights conditioned on its speaker (`cpu::speaker`; the voice's own for a
    /// single speaker), or why they could not be (reported by `begin`).
    weights: Result<Weights, String>,
    /// The decoder's upsamplers packed once from `weights`.
    packs: Option<cpu::decoder::DecoderPacks>,
    /// The encoder's FFN and the flow's WaveNet convolutions transformed once for Winograd's
    /// algorithm.
    enc_packs: Option<cpu::encoder::EncoderPacks>,
    flow_packs: Option<cpu::flow::FlowPacks>,
    context: usize,
    z_p: Option<Tensor>,
}

impl CpuBackend {
    pub fn new(voice: Arc<Voice>) -> Self {
        let context = voice.config.dims.flow_decoder_receptive_frames();
        let weights =
            cpu::speaker::speaker_weights(&voice.weights, &voice.config.dims, voice.speaker)
                .map_err(|e| e.to_string());
        let packs = weights
            .as_ref()
            .ok()
            .and_then(|w| cpu::decoder::DecoderPacks::with_winograd(w, &voice.config.dims).ok());
        let flow_packs = weights
            .as_ref()
            .ok()
            .and_then(|w| cpu::flow::FlowPacks::new(w, &voice.config.dims).ok());
        let enc_packs = weights
            .as_ref()
            .ok()
            .and_then(|w| cpu::encoder::EncoderPacks::new(w, &voice.config.dims).ok())
            .flatten();
        Self {
            voice,
            weights,
            packs,
            enc_packs,
            flow_packs,
            context,
            z_p: None,
        }
    }

    fn weights(&self) -> Result<&Weights, BackendError> {
        self.weights
            .as_ref()
            .map_err(|e| cpu::ModelError::Input(e.clone()).into())
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn begin(
        &mut self,
        ids: &[i64],
        scales: &Scales,
        seed: u64,
    ) -> Result<UtteranceInfo, BackendError> {
        let dims = &self.voice.config.dims;
        let mut rng = cpu::noise::NoiseSource::new(seed);
        let w = self.weights()?;
        let packs = self.enc_packs.as_ref();
        let front =
            cpu::team::hot(|| pipeline::frontend_packed(w, dims, packs, ids, scales, &mut rng))?;
        let frames = front.z_p.dim(1);
        self.z_p = Some(front.z_p);
        Ok(UtteranceInfo {
            durations: front.durations,
            frames,
            logw: Some(front.logw),
        })
    }

    fn decode(&mut self, start: usize, end: usize) -> Result<Vec<f32>, BackendError> {
        Ok(self
            .decode_cancellable(start, end, cpu::NEVER)?
            .unwrap_or_default())
    }

    fn decode_cancellable(
        &mut self,
        start: usize,
        end: usize,
        cancelled: cpu::CancelFn,
    ) -> Result<Option<Vec<f32>>, BackendError> {
        let z_p = self.z_p.as_ref().ok_or(BackendError::NoUtterance)?;
        let d = &self.voice.config.dims;
        let (w, ctx) = (self.weights()?, self.context);
        let audio = cpu::team::hot(|| {
            let flow = self.flow_packs.as_ref();
            cpu::decoder::window_flow(w, d, flow, z_p, start, end, ctx, cancelled).and_then(
                |(z, keep)| match &self.packs {
                    Some(p) => cpu::decoder::decode_cols_packed(w, d, p, &z, keep, cancelled),
                    None => cpu::decoder::decode_cols(w, d, &z, keep, cancelled),
                },
            )
        });
        match audio {
            Ok(audio) => Ok(Some(audio)),
            Err(cpu::ModelError::Cancelled) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
