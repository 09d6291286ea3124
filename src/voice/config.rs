//! `voice.json`: everything Hark needs to know about a voice besides its weights.
//! Dimensions are read from the ONNX graph at import time, never assumed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of Hark's voice folder format; bump when `voice.json` or tensor names change.
pub const VOICE_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VoiceConfig {
    pub format_version: u32,
    /// Folder name, e.g. `en_US-joe-medium`.
    pub name: String,
    pub sample_rate: u32,
    /// Audio samples per frame (Piper: product of the upsample rates).
    pub hop_length: usize,
    /// espeak-ng voice used for phonemisation, e.g. `en-us`.
    pub espeak_voice: String,
    /// Phoneme (one Unicode scalar as a string) → ids, as in Piper's config.
    pub phoneme_id_map: BTreeMap<String, Vec<i64>>,
    pub inference: InferenceDefaults,
    pub num_speakers: usize,
    pub num_symbols: usize,
    pub dims: ModelDims,
    /// Storage type of `voice.safetensors`: "f32" or "f16".
    pub weights_dtype: String,
    /// Provenance: the ONNX file's SHA-256 and Piper's version string.
    pub source: VoiceSource,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct InferenceDefaults {
    pub noise_scale: f32,
    pub length_scale: f32,
    pub noise_w: f32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VoiceSource {
    pub onnx_sha256: String,
    pub piper_version: String,
}

/// Architecture dimensions of a Piper VITS voice.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelDims {
    // Text encoder.
    pub n_vocab: usize,
    pub hidden_channels: usize,
    pub filter_channels: usize,
    pub n_heads: usize,
    pub n_layers: usize,
    /// FFN kernel size.
    pub ffn_kernel_size: usize,
    /// Relative attention window (offsets −w..=w).
    pub window_size: usize,
    /// Channels of m_p / logs_p (the latent z).
    pub inter_channels: usize,
    // Stochastic duration predictor.
    pub dp_filter_channels: usize,
    pub dp_kernel_size: usize,
    /// DDSConv layers (dilations kernel_size^i).
    pub dp_ddsconv_layers: usize,
    /// ConvFlows used in the reverse pass, in the order they run (e.g. [7, 5, 3]).
    pub dp_flow_indices: Vec<usize>,
    pub dp_num_bins: usize,
    pub dp_tail_bound: f32,
    // Flow.
    pub flow_n_couplings: usize,
    pub flow_wn_layers: usize,
    pub flow_kernel_size: usize,
    pub flow_dilation_rate: usize,
    // Decoder (HiFi-GAN).
    pub upsample_initial_channel: usize,
    pub upsample_rates: Vec<usize>,
    pub upsample_kernel_sizes: Vec<usize>,
    pub resblock_kernel_sizes: Vec<usize>,
    pub resblock_dilation_sizes: Vec<Vec<usize>>,
    /// Decoder pre/post conv kernel size (7 in Piper).
    pub dec_pre_kernel_size: usize,
    pub dec_post_kernel_size: usize,
}

impl ModelDims {
    /// Receptive field of flow + decoder in frames, each side: how much context a chunk needs.
    pub fn flow_decoder_receptive_frames(&self) -> usize {
        let flow = self.flow_n_couplings
            * self.flow_wn_layers
            * (self.flow_kernel_size - 1)
            * self.flow_dilation_rate.max(1)
            / 2;
        // Decoder: receptive field in samples at each resolution, converted back to frames.
        let mut samples_per_frame = 1usize;
        let mut field = ((self.dec_pre_kernel_size - 1) / 2) as f64; // in frames
        for (i, &rate) in self.upsample_rates.iter().enumerate() {
            let k = self.upsample_kernel_sizes[i];
            samples_per_frame *= rate;
            // Transposed conv: (k - 1) / 2 input-rate taps either side, roughly.
            field += ((k / rate) as f64) / 2.0 * (rate as f64) / samples_per_frame as f64;
            let mut res = 0usize;
            for (ks, dils) in self
                .resblock_kernel_sizes
                .iter()
                .zip(&self.resblock_dilation_sizes)
            {
                res = res.max(dils.iter().map(|d| (ks - 1) * d / 2).sum());
            }
            field += res as f64 / samples_per_frame as f64;
        }
        field += ((self.dec_post_kernel_size - 1) / 2) as f64 / samples_per_frame as f64;
        flow + field.ceil() as usize
    }

    pub fn samples_per_frame(&self) -> usize {
        self.upsample_rates.iter().product()
    }
}
