//! speech-dispatcher's message settings (`SET`) and what they become in Hark.

use hark_text::normalize::PunctuationVerbosity;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CapLetters {
    #[default]
    None,
    /// Say "capital" before a capital letter.
    Spell,
    /// A short rising tone before a capital letter.
    Icon,
}

/// The settings speech-dispatcher sends before every message (`output_send_settings`).
#[derive(Clone, Debug, PartialEq)]
pub struct SpdSettings {
    /// −100…100.
    pub rate: i32,
    pub pitch: i32,
    pub pitch_range: i32,
    pub volume: i32,
    pub punctuation: PunctuationVerbosity,
    pub spelling: bool,
    pub cap_letters: CapLetters,
    /// MALE1 … CHILD_FEMALE (Hark's voices have one speaker each: kept, not used).
    pub voice_type: String,
    pub language: Option<String>,
    pub synthesis_voice: Option<String>,
}

impl Default for SpdSettings {
    fn default() -> Self {
        Self {
            rate: 0,
            pitch: 0,
            pitch_range: 0,
            volume: 100,
            punctuation: PunctuationVerbosity::Some,
            spelling: false,
            cap_letters: CapLetters::None,
            voice_type: "MALE1".into(),
            language: None,
            synthesis_voice: None,
        }
    }
}

/// Why a `SET` line was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetError {
    UnknownKey,
    BadValue,
}

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SetError::UnknownKey => "not a setting Hark knows",
            SetError::BadValue => "not a value Hark takes",
        })
    }
}

const VOICE_TYPES: [&str; 8] = [
    "MALE1",
    "MALE2",
    "MALE3",
    "FEMALE1",
    "FEMALE2",
    "FEMALE3",
    "CHILD_MALE",
    "CHILD_FEMALE",
];

impl SpdSettings {
    /// Applies one `key=value`; an unknown key or a value out of range is an error (303),
    /// as in speech-dispatcher's `module_set`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        let num = || -> Result<i32, SetError> {
            let n: i32 = value.trim().parse().map_err(|_| SetError::BadValue)?;
            if (-100..=100).contains(&n) {
                Ok(n)
            } else {
                Err(SetError::BadValue)
            }
        };
        match key {
            "rate" => self.rate = num()?,
            "pitch" => self.pitch = num()?,
            "pitch_range" => self.pitch_range = num()?,
            "volume" => self.volume = num()?,
            "punctuation_mode" => {
                self.punctuation = match value {
                    "none" => PunctuationVerbosity::None,
                    "some" => PunctuationVerbosity::Some,
                    "most" => PunctuationVerbosity::Most,
                    "all" => PunctuationVerbosity::All,
                    _ => return Err(SetError::BadValue),
                }
            }
            "spelling_mode" => {
                self.spelling = match value {
                    "on" => true,
                    "off" => false,
                    _ => return Err(SetError::BadValue),
                }
            }
            "cap_let_recogn" => {
                self.cap_letters = match value {
                    "none" => CapLetters::None,
                    "spell" => CapLetters::Spell,
                    "icon" => CapLetters::Icon,
                    _ => return Err(SetError::BadValue),
                }
            }
            "voice" => {
                // speech-dispatcher sends these in lower case ("male1").
                let upper = value.to_ascii_uppercase();
                if !VOICE_TYPES.contains(&upper.as_str()) {
                    return Err(SetError::BadValue);
                }
                self.voice_type = upper;
            }
            "language" => self.language = (value != "NULL").then(|| value.to_string()),
            "synthesis_voice" => {
                self.synthesis_voice = (value != "NULL").then(|| value.to_string())
            }
            _ => return Err(SetError::UnknownKey),
        }
        Ok(())
    }
}

/// speech-dispatcher's rate (−100…100, 0 normal) as the engine's speed (`Settings::speed`,
/// real speed: the length scale and libsonic): 0.5× at −100, 1× at 0, 3× at 100,
/// exponential in between (each step is the same relative change). The one place the
/// mapping lives.
pub fn speed_for_rate(rate: i32) -> f32 {
    let r = rate.clamp(-100, 100) as f32 / 100.0;
    if r < 0.0 { 2f32.powf(r) } else { 3f32.powf(r) }
}

/// The pitch speech-dispatcher's −100 and +100 stand for, in semitones (`Settings::pitch`,
/// libsonic): where the voice stays intelligible (docs/SPEECHD.md).
pub const PITCH_RANGE: (f32, f32) = (-4.0, 8.0);

/// speech-dispatcher's pitch (−100…100) in semitones, linear on each side of 0 up to
/// [`PITCH_RANGE`].
pub fn semitones_for_pitch(pitch: i32) -> f32 {
    let (down, up) = PITCH_RANGE;
    let p = pitch.clamp(-100, 100) as f32 / 100.0;
    if p < 0.0 { -p * down } else { p * up }
}

/// speech-dispatcher's volume (−100…100, 100 the default) as a gain: 1 at 100, 0.5 at 0,
/// silent at −100.
pub fn gain_for_volume(volume: i32) -> f32 {
    (volume.clamp(-100, 100) + 100) as f32 / 200.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_parses_what_speech_dispatcher_sends() {
        let mut s = SpdSettings::default();
        for (k, v) in [
            ("pitch", "10"),
            ("pitch_range", "0"),
            ("rate", "-20"),
            ("volume", "100"),
            ("punctuation_mode", "most"),
            ("spelling_mode", "off"),
            ("cap_let_recogn", "icon"),
            ("voice", "male1"),
            ("language", "en"),
            ("synthesis_voice", "NULL"),
        ] {
            s.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        assert_eq!(s.rate, -20);
        assert_eq!(s.punctuation, PunctuationVerbosity::Most);
        assert_eq!(s.cap_letters, CapLetters::Icon);
        assert_eq!(s.language.as_deref(), Some("en"));
        assert_eq!(s.synthesis_voice, None);
        assert!(s.set("rate", "101").is_err());
        assert!(s.set("rate", "fast").is_err());
        assert_eq!(s.set("colour", "red"), Err(SetError::UnknownKey));
        assert!(s.set("voice", "ROBOT").is_err());
    }

    #[test]
    fn the_rate_range_is_monotonic_and_bounded() {
        let speeds: Vec<f32> = (-100..=100).map(speed_for_rate).collect();
        assert!(speeds.windows(2).all(|w| w[1] > w[0]));
        assert!((speed_for_rate(-100) - 0.5).abs() < 1e-6);
        assert_eq!(speed_for_rate(0), 1.0);
        assert!((speed_for_rate(100) - 3.0).abs() < 1e-5);
        assert_eq!(semitones_for_pitch(-100), PITCH_RANGE.0);
        assert_eq!(semitones_for_pitch(0), 0.0);
        assert_eq!(semitones_for_pitch(100), PITCH_RANGE.1);
        assert!(semitones_for_pitch(-50) < 0.0 && semitones_for_pitch(50) > 0.0);
        assert_eq!(gain_for_volume(100), 1.0);
        assert_eq!(gain_for_volume(-100), 0.0);
    }
}
