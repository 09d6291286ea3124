//! `voice.json`: everything Hark needs to know about a voice besides its weights.
//! Dimensions are read from the ONNX graph at import time, never assumed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of Hark's voice folder format; bump when `voice.json` or tensor names change.
/// Version 2 added speakers (`speakers`, `dims.gin_channels`, `dims.n_speakers` and the
/// speaker weights): a multi-speaker voice is written as version 2, so that a Hark that reads
/// only version 1 refuses it instead of speaking it without its speaker; a single-speaker
/// voice is still written as version 1, which every Hark reads.
pub const VOICE_FORMAT_VERSION: u32 = 2;

/// The format version a voice with `num_speakers` speakers is written as.
pub fn format_version_for(num_speakers: usize) -> u32 {
    if num_speakers > 1 { 2 } else { 1 }
}

/// How many speaker names an error message lists before "… (N in all)".
const LISTED_SPEAKERS: usize = 24;

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
    /// The voice's own inference scales (Piper's config, else Piper's defaults).
    pub inference: crate::Scales,
    pub num_speakers: usize,
    /// The speakers' names in id order (Piper's `speaker_id_map`; a speaker the map does not
    /// name is called by its id). Empty for a single-speaker voice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub speakers: Vec<String>,
    pub num_symbols: usize,
    /// Which model the dimensions describe (the backends refuse one they do not run).
    /// Folders written before the tag existed are Piper VITS voices.
    #[serde(default)]
    pub architecture: Architecture,
    pub dims: ModelDims,
    /// Storage type of `voice.safetensors`: "f32" or "f16".
    pub weights_dtype: String,
    /// Provenance: the ONNX file's SHA-256 and Piper's version string.
    pub source: VoiceSource,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VoiceSource {
    pub onnx_sha256: String,
    pub piper_version: String,
}

/// The model family a voice is. A new architecture gets a variant here, its dimensions
/// beside [`ModelDims`], an importer in `import.rs`, and a backend in hark-model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// Piper's VITS: text encoder, stochastic duration predictor, flow, HiFi-GAN.
    #[default]
    PiperVits,
}

impl VoiceConfig {
    /// Whether the voice has several speakers (Piper's `sid` input), one picked per backend.
    pub fn is_multi_speaker(&self) -> bool {
        self.num_speakers > 1
    }

    /// The name of speaker `id` (its id as text if the voice names none).
    pub fn speaker_name(&self, id: usize) -> String {
        self.speakers
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    /// The speaker id that `wanted` names: a speaker's name, else its id. An error lists the
    /// speakers there are; a single-speaker voice takes only 0.
    pub fn speaker_id(&self, wanted: &str) -> Result<usize, String> {
        let wanted = wanted.trim();
        if !self.is_multi_speaker() {
            return match wanted.parse::<usize>() {
                Ok(0) => Ok(0),
                _ => Err(format!(
                    "voice {} has a single speaker (speaker 0); there is no speaker {wanted:?}",
                    self.name
                )),
            };
        }
        if let Some(i) = self.speakers.iter().position(|s| s == wanted) {
            return Ok(i);
        }
        match wanted.parse::<usize>() {
            Ok(i) if i < self.num_speakers => Ok(i),
            _ => Err(format!(
                "voice {} has no speaker {wanted:?}; its speakers are {}",
                self.name,
                self.speaker_list()
            )),
        }
    }

    /// "0 ada, 1 brian, 2 chloe" (the first few, then how many in all).
    pub fn speaker_list(&self) -> String {
        let n = self.num_speakers.max(1);
        let mut s = (0..n.min(LISTED_SPEAKERS))
            .map(|i| match self.speakers.get(i) {
                Some(name) if *name != i.to_string() => format!("{i} {name}"),
                _ => i.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        if n > LISTED_SPEAKERS {
            s.push_str(&format!(", … ({n} in all)"));
        }
        s
    }
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
    // Speakers (a multi-speaker voice; absent from a single-speaker voice.json).
    /// Channels of the speaker embedding `g` (`emb_g`), 0 without speakers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gin_channels: usize,
    /// Rows of the speaker embedding `emb_g`: the number of speakers (1 without).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub n_speakers: usize,
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

fn is_one(v: &usize) -> bool {
    *v == 1
}

fn one() -> usize {
    1
}

impl ModelDims {
    /// The dimensions of Piper's medium-quality voices (en_US-joe-medium among them). Real
    /// voices read theirs from the graph ([`crate::dims::read_dims`]); this is the base that
    /// tests shrink or reshape, so that each says only what it changes.
    pub fn piper_medium() -> Self {
        Self {
            n_vocab: 256,
            hidden_channels: 192,
            filter_channels: 768,
            n_heads: 2,
            n_layers: 6,
            ffn_kernel_size: 3,
            window_size: 4,
            inter_channels: 192,
            dp_filter_channels: 192,
            dp_kernel_size: 3,
            dp_ddsconv_layers: 3,
            dp_flow_indices: vec![7, 5, 3],
            dp_num_bins: 10,
            dp_tail_bound: 5.0,
            flow_n_couplings: 4,
            flow_wn_layers: 4,
            flow_kernel_size: 5,
            flow_dilation_rate: 1,
            upsample_initial_channel: 256,
            upsample_rates: vec![8, 8, 4],
            upsample_kernel_sizes: vec![16, 16, 8],
            resblock_kernel_sizes: vec![3, 5, 7],
            resblock_dilation_sizes: vec![vec![1, 2], vec![2, 6], vec![3, 12]],
            dec_pre_kernel_size: 7,
            dec_post_kernel_size: 7,
            gin_channels: 0,
            n_speakers: 1,
        }
    }

    /// Receptive field of flow + decoder in frames, each side: how much context a chunk needs.
    /// The larger of [`Self::flow_decoder_receptive_span`]'s two sides.
    pub fn flow_decoder_receptive_frames(&self) -> usize {
        let (left, right) = self.flow_decoder_receptive_span();
        left.max(right)
    }

    /// Exact `(left, right)` reach in frames: the audio of frame `f` depends on z_p frames
    /// `f − left ..= f + right` and no others (a conv with K taps and dilation d reaches
    /// d·(K−1)/2 either side; a transposed conv's reach follows from its stride and padding).
    pub fn flow_decoder_receptive_span(&self) -> (usize, usize) {
        let (left, right) = self.decoder_receptive_span();
        let flow = self.flow_receptive_frames();
        (left + flow, right + flow)
    }

    /// The decoder's own `(left, right)` reach in frames of z (the flow's output).
    pub fn decoder_receptive_span(&self) -> (usize, usize) {
        let (a, b) = self.decoder_reach_after_stage(0);
        let pre = ((self.dec_pre_kernel_size.max(1) - 1) / 2) as i64;
        ((pre - a).max(0) as usize, (b + pre).max(0) as usize)
    }

    /// The first and last input positions that the samples of frame 0, `[0, hop)`, read through
    /// the decoder's upsampling stages from `first_stage` on and conv_post, in units of that
    /// stage's input (0: conv_pre's output, in frames; `upsample_rates.len()`: conv_post
    /// alone, in samples).
    pub fn decoder_reach_after_stage(&self, first_stage: usize) -> (i64, i64) {
        let (mut a, mut b) = (0i64, self.samples_per_frame() as i64 - 1);
        let post = ((self.dec_post_kernel_size.max(1) - 1) / 2) as i64;
        a -= post;
        b += post;
        let res_reach = self.resblock_reach() as i64;
        for (&s, &k) in self
            .upsample_rates
            .iter()
            .zip(&self.upsample_kernel_sizes)
            .skip(first_stage)
            .rev()
        {
            a -= res_reach;
            b += res_reach;
            // ConvTranspose: input i writes outputs i·s + tap − p for tap in 0..k.
            let (s, k) = (s.max(1) as i64, k as i64);
            let p = (k - s) / 2;
            a = (a + p - k + 1 + s - 1).div_euclid(s);
            b = (b + p).div_euclid(s);
        }
        (a, b)
    }

    /// Reach of one stage's ResBlock2s in that stage's samples (the largest of the blocks).
    fn resblock_reach(&self) -> usize {
        self.resblock_kernel_sizes
            .iter()
            .zip(&self.resblock_dilation_sizes)
            .map(|(&k, dils)| dils.iter().map(|&d| d * (k.max(1) - 1) / 2).sum::<usize>())
            .max()
            .unwrap_or(0)
    }

    /// Reach of one flow coupling's WaveNet, each side, in frames: Σ_i rate^i·(K−1)/2.
    pub fn flow_coupling_reach(&self) -> usize {
        let mut wn = 0usize;
        let mut dil = 1usize;
        for _ in 0..self.flow_wn_layers {
            wn += dil * (self.flow_kernel_size.max(1) - 1) / 2;
            dil *= self.flow_dilation_rate.max(1);
        }
        wn
    }

    /// Reach of the whole flow, each side, in frames.
    pub fn flow_receptive_frames(&self) -> usize {
        self.flow_n_couplings * self.flow_coupling_reach()
    }

    pub fn samples_per_frame(&self) -> usize {
        self.upsample_rates.iter().product()
    }

    /// Refuses dimensions no real voice comes near (Piper's use at most 512 channels, 6
    /// layers, 4 upsampling stages), so that no arithmetic on them overflows and nothing
    /// sized from them is absurd. A hand-edited or corrupt `voice.json` fails here, clearly.
    pub fn check_bounds(&self) -> Result<(), String> {
        let within = |name: &str, v: usize, lo: usize, hi: usize| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} is {v}, outside {lo}..={hi}"))
            }
        };
        let list = |name: &str, v: &[usize], len: (usize, usize), hi: usize| {
            within(&format!("{name} length"), v.len(), len.0, len.1)?;
            v.iter().try_for_each(|&x| within(name, x, 1, hi))
        };
        within("n_vocab", self.n_vocab, 1, 1 << 16)?;
        within("hidden_channels", self.hidden_channels, 1, 4096)?;
        within("filter_channels", self.filter_channels, 1, 16384)?;
        within("n_heads", self.n_heads, 1, 64)?;
        if !self.hidden_channels.is_multiple_of(self.n_heads) {
            return Err("hidden_channels is not a multiple of n_heads".into());
        }
        within("n_layers", self.n_layers, 1, 64)?;
        within("ffn_kernel_size", self.ffn_kernel_size, 1, 64)?;
        within("window_size", self.window_size, 0, 64)?;
        within("inter_channels", self.inter_channels, 1, 4096)?;
        within("dp_filter_channels", self.dp_filter_channels, 1, 4096)?;
        within("dp_kernel_size", self.dp_kernel_size, 1, 63)?;
        within("dp_ddsconv_layers", self.dp_ddsconv_layers, 1, 16)?;
        list("dp_flow_indices", &self.dp_flow_indices, (1, 64), 64)?;
        within("dp_num_bins", self.dp_num_bins, 1, 256)?;
        if !(self.dp_tail_bound.is_finite() && self.dp_tail_bound > 0.0) {
            return Err(format!("dp_tail_bound is {}", self.dp_tail_bound));
        }
        within("flow_n_couplings", self.flow_n_couplings, 1, 64)?;
        within("flow_wn_layers", self.flow_wn_layers, 1, 64)?;
        within("flow_kernel_size", self.flow_kernel_size, 1, 63)?;
        within("flow_dilation_rate", self.flow_dilation_rate, 1, 64)?;
        let dilation = |base: usize, layers: usize| {
            u32::try_from(layers)
                .ok()
                .and_then(|n| base.checked_pow(n))
                .is_some_and(|d| d <= 1 << 20)
        };
        if !dilation(self.dp_kernel_size, self.dp_ddsconv_layers)
            || !dilation(self.flow_dilation_rate, self.flow_wn_layers)
        {
            return Err("the dilations grow beyond 2^20".into());
        }
        let stages = self.upsample_rates.len();
        within(
            "upsample_initial_channel",
            self.upsample_initial_channel,
            1 << stages,
            4096,
        )?;
        list("upsample_rates", &self.upsample_rates, (1, 8), 64)?;
        list(
            "upsample_kernel_sizes",
            &self.upsample_kernel_sizes,
            (stages, stages),
            128,
        )?;
        within(
            "samples per frame",
            self.upsample_rates.iter().product(),
            1,
            4096,
        )?;
        list(
            "resblock_kernel_sizes",
            &self.resblock_kernel_sizes,
            (1, 8),
            63,
        )?;
        within(
            "resblock_dilation_sizes length",
            self.resblock_dilation_sizes.len(),
            self.resblock_kernel_sizes.len(),
            self.resblock_kernel_sizes.len(),
        )?;
        for d in &self.resblock_dilation_sizes {
            list("resblock dilation", d, (1, 8), 64)?;
        }
        within("dec_pre_kernel_size", self.dec_pre_kernel_size, 1, 63)?;
        within("dec_post_kernel_size", self.dec_post_kernel_size, 1, 63)?;
        within("n_speakers", self.n_speakers, 1, 1 << 16)?;
        within("gin_channels", self.gin_channels, 0, 4096)?;
        if self.n_speakers > 1 && self.gin_channels == 0 {
            return Err(format!(
                "{} speakers but no speaker embedding (gin_channels 0)",
                self.n_speakers
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(num_speakers: usize, speakers: &[&str]) -> VoiceConfig {
        let mut dims = ModelDims::piper_medium();
        if num_speakers > 1 {
            (dims.n_speakers, dims.gin_channels) = (num_speakers, 512);
        }
        VoiceConfig {
            format_version: format_version_for(num_speakers),
            name: "v".into(),
            sample_rate: 22050,
            hop_length: 256,
            espeak_voice: "en-us".into(),
            phoneme_id_map: BTreeMap::new(),
            inference: crate::Scales::PIPER,
            num_speakers,
            speakers: speakers.iter().map(|s| s.to_string()).collect(),
            num_symbols: 256,
            architecture: Architecture::PiperVits,
            dims,
            weights_dtype: "f32".into(),
            source: VoiceSource {
                onnx_sha256: String::new(),
                piper_version: String::new(),
            },
        }
    }

    #[test]
    fn a_single_speaker_voice_json_is_as_before() {
        let c = config(1, &[]);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["format_version"], 1);
        for key in ["speakers", "gin_channels", "n_speakers"] {
            assert!(
                json.get(key).is_none() && json["dims"].get(key).is_none(),
                "{key}"
            );
        }
        // A voice.json from before speakers (no such keys) reads as one speaker.
        let back: VoiceConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
        assert_eq!((back.dims.n_speakers, back.dims.gin_channels), (1, 0));
    }

    #[test]
    fn speakers_are_found_by_name_or_id() {
        let c = config(3, &["ada", "brian", "2"]);
        assert_eq!(c.format_version, 2);
        assert_eq!(c.speaker_id("brian"), Ok(1));
        assert_eq!(c.speaker_id(" 0 "), Ok(0));
        assert_eq!(c.speaker_id("2"), Ok(2));
        let e = c.speaker_id("zed").unwrap_err();
        assert!(e.contains("0 ada, 1 brian, 2"), "{e}");
        assert!(c.speaker_id("3").is_err());
        let one = config(1, &[]);
        assert_eq!(one.speaker_id("0"), Ok(0));
        assert!(one.speaker_id("1").unwrap_err().contains("single speaker"));
        let many = config(100, &[]);
        assert!(many.speaker_list().ends_with("… (100 in all)"));
    }
}
