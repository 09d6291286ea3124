//! The whole CPU reference: ids → audio, stage by stage, keeping the intermediates that the
//! parity tests and the GPU twins compare against.

use super::decoder::decode;
use super::duration::duration_logw;
use super::durations::{durations, expand_frames};
use super::encoder::{EncoderOut, EncoderPacks, text_encoder_packed};
use super::flow::flow_reverse;
use super::noise::{NoiseSource, sample_prior};
use super::{ModelError, Result};
use hark_voice::Scales;
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};

/// Every intermediate of one synthesis, named as in the VITS paper and Piper's code.
pub struct Synthesis {
    pub m_p: Tensor,
    pub logs_p: Tensor,
    pub logw: Vec<f32>,
    pub durations: Vec<usize>,
    pub z_p: Tensor,
    pub z: Tensor,
    pub audio: Vec<f32>,
}

/// Front half: encoder, duration predictor, expansion and prior sampling (`z_p`).
pub struct Frontend {
    pub m_p: Tensor,
    pub logs_p: Tensor,
    pub logw: Vec<f32>,
    pub durations: Vec<usize>,
    pub z_p: Tensor,
}

pub fn frontend(
    w: &Weights,
    d: &ModelDims,
    ids: &[i64],
    scales: &Scales,
    rng: &mut NoiseSource,
) -> Result<Frontend> {
    frontend_packed(w, d, None, ids, scales, rng)
}

/// [`frontend`] with the encoder's FFN on Winograd `packs` when given (the CPU backend's).
pub fn frontend_packed(
    w: &Weights,
    d: &ModelDims,
    packs: Option<&EncoderPacks>,
    ids: &[i64],
    scales: &Scales,
    rng: &mut NoiseSource,
) -> Result<Frontend> {
    if ids.is_empty() {
        return Err(ModelError::Input("no phoneme ids to synthesise".into()));
    }
    let enc = text_encoder_packed(w, d, packs, ids)?;
    frontend_after_encoder(w, d, enc, scales, rng)
}

/// The front half after the text encoder: duration predictor, expansion and prior sampling.
pub fn frontend_after_encoder(
    w: &Weights,
    d: &ModelDims,
    enc: EncoderOut,
    scales: &Scales,
    rng: &mut NoiseSource,
) -> Result<Frontend> {
    let t = enc.m_p.dim(1);
    let mut noise = if scales.noise_w == 0.0 {
        Tensor::zeros(vec![2, t])
    } else {
        rng.normal(vec![2, t])
    };
    noise.data.iter_mut().for_each(|v| *v *= scales.noise_w);
    let logw = duration_logw(w, d, &enc.x, &noise)?;
    let durs = durations(&logw, scales.length_scale);
    let m_f = expand_frames(&enc.m_p, &durs);
    let logs_f = expand_frames(&enc.logs_p, &durs);
    let z_p = sample_prior(&m_f, &logs_f, scales.noise_scale, rng);
    Ok(Frontend {
        m_p: enc.m_p,
        logs_p: enc.logs_p,
        logw,
        durations: durs,
        z_p,
    })
}

pub fn synthesize(
    w: &Weights,
    d: &ModelDims,
    ids: &[i64],
    scales: &Scales,
    seed: u64,
) -> Result<Synthesis> {
    let mut rng = NoiseSource::new(seed);
    let f = frontend(w, d, ids, scales, &mut rng)?;
    let z = flow_reverse(w, d, &f.z_p)?;
    let audio = decode(w, d, &z)?;
    Ok(Synthesis {
        m_p: f.m_p,
        logs_p: f.logs_p,
        logw: f.logw,
        durations: f.durations,
        z_p: f.z_p,
        z,
        audio,
    })
}
