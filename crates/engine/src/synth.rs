//! Blocking synthesis into a sink, on the streaming engine's pipeline: the same segmenter,
//! phonemiser loop and backend factory. Each sentence is decoded whole (`begin`, then
//! `decode(0, frames)`), so the samples are exactly what Piper makes of it.

use super::phonemise::{self, Input, Piece};
use super::tempo::{self, Tempo};
use super::timing::{SentenceTiming, place_words};
use super::{BackendChoice, EngineError, GpuEngine, GpuOptions, make_backend};
use hark_model::backend::Backend;
use hark_text::TextError;
use hark_text::segment::Segmenter;
use hark_voice::{Scales, Voice};
use std::sync::Arc;
use std::time::Duration;

/// What one `speak` produced.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpeakReport {
    pub sentences: usize,
    pub samples: usize,
}

/// Speaks into a sink, sentence by sentence (`hark speak --out`, the benchmarks, the tests'
/// reference audio).
pub struct Synthesizer {
    voice: Arc<Voice>,
    backend: Box<dyn Backend>,
    pub scales: Scales,
    /// Sentence `k` of a `speak` uses the noise seed `seed + k`.
    pub seed: u64,
    pub segmenter: Segmenter,
    /// A multiple of normal speed, and a pitch shift in semitones, as the engine's
    /// `Settings::speed` and `pitch` (1 and 0: Piper's own samples).
    pub speed: f32,
    pub pitch: f32,
}

impl Synthesizer {
    /// With the default CUDA engine and switches.
    pub fn new(voice: impl Into<Arc<Voice>>, backend: BackendChoice) -> Result<Self, EngineError> {
        Self::with_engine(voice, backend, GpuEngine::Auto, &GpuOptions::default())
    }

    /// As `new`, with `engine` picking how the CUDA backend runs and `gpu` its switches.
    pub fn with_engine(
        voice: impl Into<Arc<Voice>>,
        backend: BackendChoice,
        engine: GpuEngine,
        gpu: &GpuOptions,
    ) -> Result<Self, EngineError> {
        let voice = voice.into();
        let backend = make_backend(backend, engine, &voice, gpu)?;
        Ok(Self {
            scales: voice.config.inference,
            seed: 0,
            segmenter: Segmenter::default(),
            speed: 1.0,
            pitch: 0.0,
            voice,
            backend,
        })
    }

    /// A CPU synthesizer that measures cues ([`Self::length_at_normal_speed`]) beside an
    /// engine, at the engine's `scales` and `seed`. It measures one short sentence first, so
    /// that the first cue is not measured cold (allocations, caches: ~0.1 s on two cores).
    pub fn measuring(voice: Arc<Voice>, scales: Scales, seed: u64) -> Result<Self, EngineError> {
        let mut synth = Self::new(voice, BackendChoice::Cpu)?;
        synth.scales = scales;
        synth.seed = seed;
        synth.length_at_normal_speed(Input::Text("Ready."))?;
        Ok(synth)
    }

    pub fn voice(&self) -> &Arc<Voice> {
        &self.voice
    }

    /// The backend's name, e.g. "cpu (2 threads)".
    pub fn backend_name(&self) -> String {
        self.backend.name()
    }

    /// The segmenter for `input` (an error if it is empty): dates are read in the voice's
    /// order unless the caller chose a locale or an order.
    fn segmenter_for(&self, input: &Input<'_>) -> Result<Segmenter, EngineError> {
        if matches!(input, Input::Text(t) if t.trim().is_empty()) {
            return Err(EngineError::EmptyText);
        }
        let cfg = &self.voice.config;
        let mut segmenter = self.segmenter.clone();
        segmenter
            .options
            .normalize
            .default_voice_locale(&cfg.espeak_voice, &cfg.name);
        Ok(segmenter)
    }

    /// How long `input` lasts at normal speed (speed 1, the scales and seed set here), from
    /// the model's durations: the encoder and duration predictor run, the decoder does not,
    /// so it costs a small part of saying it. At speed `s` the audio is this long over `s`
    /// ([`tempo`] holds it to that), so a caller can choose the speed that fits a slot.
    pub fn length_at_normal_speed(&mut self, input: Input<'_>) -> Result<Duration, EngineError> {
        let segmenter = self.segmenter_for(&input)?;
        let cfg = &self.voice.config;
        let (rate, hop) = (cfg.sample_rate as usize, cfg.hop_length.max(1));
        let mut seconds = 0.0f64;
        for piece in phonemise::pieces(cfg, &segmenter, input, true, 0) {
            match piece {
                Ok(Piece::Speech(sentence)) => {
                    let seed = self.seed.wrapping_add(sentence.index as u64);
                    let info = self.backend.begin(&sentence.ids, &self.scales, seed)?;
                    let (speed, _) = tempo::for_run(1.0, 0.0, &sentence.prosody);
                    seconds += (info.frames * hop) as f64 / rate as f64 / f64::from(speed);
                }
                Ok(Piece::Silence { ms }) => {
                    seconds += (ms as usize * rate / 1000 / hop * hop) as f64 / rate as f64;
                }
                Ok(Piece::Mark(_)) | Err(TextError::EspeakCrashed(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Duration::from_secs_f64(seconds))
    }

    /// Speaks `input`, handing each sentence's audio to `sink` as soon as it exists.
    pub fn speak(
        &mut self,
        input: Input<'_>,
        sink: impl FnMut(&[f32]) -> Result<(), String>,
    ) -> Result<SpeakReport, EngineError> {
        self.speak_timed(input, sink, |_| {})
    }

    /// [`Synthesizer::speak`], also handing each sentence's timing (its words' samples from
    /// the start of the output) to `timing` after its audio.
    pub fn speak_timed(
        &mut self,
        input: Input<'_>,
        mut sink: impl FnMut(&[f32]) -> Result<(), String>,
        mut timing: impl FnMut(SentenceTiming),
    ) -> Result<SpeakReport, EngineError> {
        let segmenter = self.segmenter_for(&input)?;
        let mut report = SpeakReport::default();
        let cfg = &self.voice.config;
        let (rate, hop) = (cfg.sample_rate as usize, cfg.hop_length.max(1));
        let mut stage = Tempo::new(cfg.sample_rate);
        let mut stretched = Vec::new();
        for piece in phonemise::pieces(cfg, &segmenter, input, true, 0) {
            let sentence = match piece {
                Ok(Piece::Speech(s)) => s,
                Ok(Piece::Silence { ms }) => {
                    // Whole frames, as the streaming engine plays it.
                    let n = ms as usize * rate / 1000 / hop * hop;
                    sink(&vec![0.0; n]).map_err(EngineError::Sink)?;
                    report.samples += n;
                    continue;
                }
                Ok(Piece::Mark(_)) => continue,
                // espeak-ng died on this segment in its child (which logs it): that text is
                // lost, the rest is spoken (a new child takes the next segment).
                Err(TextError::EspeakCrashed(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            let seed = self.seed.wrapping_add(sentence.index as u64);
            // The settings' speed and pitch with the run's own (SSML prosody).
            let (speed, pitch) = tempo::for_run(self.speed, self.pitch, &sentence.prosody);
            let split = tempo::split(speed);
            let mut scales = self.scales;
            scales.length_scale *= split.length_factor;
            let info = self.backend.begin(&sentence.ids, &scales, seed)?;
            let length_speed = tempo::length_speed_of(&split, &info, self.scales.length_scale);
            stage.restart();
            stage.aim(speed, pitch, length_speed);
            let mut audio = if info.frames == 0 {
                Vec::new()
            } else {
                self.backend.decode(0, info.frames)?
            };
            if sentence.prosody.volume != 1.0 {
                audio.iter_mut().for_each(|s| *s *= sentence.prosody.volume);
            }
            let out = if stage.bypassed() {
                &audio
            } else {
                stretched.clear();
                stage.process(&audio, &mut stretched);
                stage.finish(&mut stretched);
                &stretched
            };
            sink(out).map_err(EngineError::Sink)?;
            let base = report.samples as u64;
            let words = place_words(&info.durations, &sentence.words, cfg.hop_length);
            timing(SentenceTiming::new(
                sentence.index,
                sentence.range.clone(),
                base..base + out.len() as u64,
                &words,
                |s| stage.output_at(s),
            ));
            report.sentences += 1;
            report.samples += out.len();
        }
        if report.sentences == 0 {
            return Err(EngineError::NothingSpeakable);
        }
        Ok(report)
    }
}
