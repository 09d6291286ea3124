//! Options shared by the commands that speak through the streaming engine.

use clap::Args;
use hark_engine::{BackendChoice, EngineConfig, GpuEngine, Settings, StepMode};
use hark_voice::Voice;
use std::sync::Arc;

#[derive(Args, Clone)]
pub struct VoiceArgs {
    /// Voice name (in the voice folder) or path to a voice folder.
    #[arg(long)]
    pub voice: Option<String>,
    /// Speaker of a multi-speaker voice, by name or id (`hark voice list` shows them;
    /// default: speaker 0).
    #[arg(long)]
    pub speaker: Option<String>,
    #[arg(long, value_parser = crate::names::by_name(&BackendChoice::ALL), default_value = "auto")]
    pub backend: BackendChoice,
    /// How the CUDA backend runs: per-chunk CUDA graphs, or one persistent kernel that takes
    /// every utterance without host launches (auto: the one `hark bench --backend cuda`
    /// measured faster for onset on this GPU, else graphs).
    #[arg(long, value_parser = crate::names::by_name(&GpuEngine::ALL), default_value = "auto")]
    pub engine: GpuEngine,
    /// Speech duration multiplier: 2.0 is half as fast, 0.5 twice as fast.
    #[arg(long)]
    pub length_scale: Option<f32>,
    /// Prior noise; 0 makes the voice deterministic.
    #[arg(long)]
    pub noise_scale: Option<f32>,
    /// Duration noise; 0 makes the rhythm deterministic.
    #[arg(long)]
    pub noise_w: Option<f32>,
    /// Seed for the noise generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Speed as a multiple of normal speed, 0.5–6 (the audio is 1/RATE as long, pauses
    /// included; on top of --length-scale), without changing the pitch.
    #[arg(long, default_value_t = 1.0)]
    pub rate: f32,
    /// Pitch shift in semitones, −12 to 12.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub pitch: f32,
    /// Send the text to espeak as it is, without normalising it.
    #[arg(long)]
    pub raw: bool,
    #[command(flatten)]
    pub norm: super::text_cmd::NormArgs,
}

impl VoiceArgs {
    /// The voice of `--voice`, speaking as `--speaker`.
    pub fn load(&self) -> anyhow::Result<Voice> {
        let mut voice = Voice::load_from(&crate::overrides().voices_dir, self.voice.as_deref())?;
        if let Some(s) = &self.speaker {
            voice.select_speaker(s)?;
        }
        Ok(voice)
    }

    /// Checks the scales and applies them to `s`.
    pub fn apply(&self, s: &mut hark_voice::Scales) -> anyhow::Result<()> {
        if let Some(x) = self.length_scale {
            anyhow::ensure!(
                x > 0.0 && x.is_finite(),
                "--length-scale must be a positive number"
            );
            s.length_scale = x;
        }
        if let Some(x) = self.noise_scale {
            anyhow::ensure!(x >= 0.0 && x.is_finite(), "--noise-scale must be 0 or more");
            s.noise_scale = x;
        }
        if let Some(x) = self.noise_w {
            anyhow::ensure!(x >= 0.0 && x.is_finite(), "--noise-w must be 0 or more");
            s.noise_w = x;
        }
        Ok(())
    }

    /// The checked speed and pitch (`--rate`, `--pitch`).
    pub fn speed_pitch(&self) -> anyhow::Result<(f32, f32)> {
        use hark_engine::tempo::{PITCH_MAX, SPEED_MAX, SPEED_MIN};
        anyhow::ensure!(
            (SPEED_MIN..=SPEED_MAX).contains(&self.rate),
            "--rate must be between {SPEED_MIN} and {SPEED_MAX}"
        );
        anyhow::ensure!(
            (-PITCH_MAX..=PITCH_MAX).contains(&self.pitch),
            "--pitch must be between -{PITCH_MAX} and {PITCH_MAX} semitones"
        );
        Ok((self.rate, self.pitch))
    }

    /// An engine configuration playing on the default device.
    pub fn engine_config(
        &self,
        voice: Voice,
        steps: Option<usize>,
    ) -> anyhow::Result<EngineConfig> {
        let voice = Arc::new(voice);
        let mut settings = Settings::for_voice(&voice);
        self.apply(&mut settings.scales)?;
        settings.seed = self.seed;
        (settings.speed, settings.pitch) = self.speed_pitch()?;
        if let Some(n) = steps {
            anyhow::ensure!(n >= 1, "--steps must be at least 1");
            settings.steps = StepMode::Fixed(n);
        }
        let mut cfg = EngineConfig::new(voice).with_overrides(crate::overrides());
        cfg.backend = self.backend;
        cfg.gpu_engine = self.engine;
        cfg.output = hark_audio::device(crate::overrides().audio_buffer_ms);
        cfg.settings = settings;
        cfg.segmenter.normalize = !self.raw;
        cfg.segmenter.options.normalize = self.norm.options()?;
        Ok(cfg)
    }
}
