//! Audio output: WAV files and the default playback device.
