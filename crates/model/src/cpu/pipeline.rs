//! The whole CPU reference: ids → audio, stage by stage, keeping the intermediates that the
//! parity tests and the GPU twins compare against.

use super::decoder::{decode, decode_cols};
use super::duration::duration_logw;
use super::durations::{durations, expand_frames};
use super::encoder::{EncoderOut, text_encoder};
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
    if ids.is_empty() {
        return Err(ModelError::Input("no phoneme ids to synthesise".into()));
    }
    let enc = text_encoder(w, d, ids)?;
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

/// Sentences up to this many frames (11.9 s at 22.05 kHz, hop 256) are decoded in one go;
/// longer ones in windows of [`DECODE_WINDOW_FRAMES`], each with its full receptive field, so
/// the decoder's memory (tens of kB per frame at once) stays bounded: an 800-id sentence
/// stretched to 7,900 frames peaked at 214 MB for the whole `hark speak --out`, against 505 MB
/// decoded whole. The windows equal the whole decode (bit for bit on the Joe voice; the
/// decoder's tests allow 1e-6).
pub const DIRECT_DECODE_FRAMES: usize = 1024;
/// Frames per decoder window past [`DIRECT_DECODE_FRAMES`].
pub const DECODE_WINDOW_FRAMES: usize = 256;

/// The decoder's audio for all of `z`, in windows when it is long.
fn decode_bounded(w: &Weights, d: &ModelDims, z: &Tensor) -> Result<Vec<f32>> {
    let frames = z.dim(1);
    if frames <= DIRECT_DECODE_FRAMES {
        return decode(w, d, z);
    }
    let (left, right) = d.decoder_receptive_span();
    let mut audio = Vec::with_capacity(frames * d.samples_per_frame());
    for start in (0..frames).step_by(DECODE_WINDOW_FRAMES) {
        let end = (start + DECODE_WINDOW_FRAMES).min(frames);
        let (lo, hi) = (start.saturating_sub(left), (end + right).min(frames));
        let keep = start - lo..end - lo;
        audio.extend(decode_cols(w, d, &z.cols(lo..hi), keep, super::NEVER)?);
    }
    Ok(audio)
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
    let audio = decode_bounded(w, d, &z)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::testutil::{random_tensor, random_weights, tiny_dims};
    use hark_voice::tensor::rel_l2;

    #[test]
    fn a_long_sentence_is_decoded_in_windows_equal_to_the_whole() {
        let d = tiny_dims();
        let w = random_weights(&d, 31);
        let f = DIRECT_DECODE_FRAMES + DECODE_WINDOW_FRAMES + 77;
        let z = random_tensor(5, &[d.inter_channels, f], 1.0);
        let got = decode_bounded(&w, &d, &z).unwrap();
        let want = decode(&w, &d, &z).unwrap();
        assert_eq!(got.len(), want.len());
        assert!(rel_l2(&got, &want) <= 1e-6);
    }
}
