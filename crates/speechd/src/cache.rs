//! The clip cache: every character and key name of `keys.rs`, synthesised once per voice
//! and rate, kept in memory and on disk (`<cache dir>/<voice>-<rate>.clips`), so CHAR and
//! KEY play at once.
//!
//! Clips are cut to their sound (silence at both ends trimmed, 2 ms fades), so a key's
//! sound starts with its first sample. Pitch (speech-dispatcher's SET pitch, capital
//! letters) is applied to a clip when it is played, by resampling it
//! (`hark_engine::tempo::pitched`, libsonic).

use crate::keys;
use crate::settings::speed_for_rate;
use hark_engine::{BackendChoice, Input, Synthesizer};
use hark_voice::Voice;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bump when the clips would come out differently (texts, trimming, file layout).
const CACHE_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"HARKCLP1";
/// Below this (−50 dBFS) a clip's ends count as silence.
const SILENCE: f32 = 3.2e-3;
const FADE_MS: f32 = 2.0;

/// Clips by cache key (`char:a`, `key:shift`, …), at the voice's rate.
pub type Clips = HashMap<String, Vec<f32>>;

/// Where the clips of `voice` at `rate` are kept.
pub fn path(dir: &Path, voice: &Voice, rate: i32) -> PathBuf {
    let sha = &voice.config.source.onnx_sha256;
    let id = sha.get(..16).unwrap_or(sha);
    dir.join(format!(
        "{}-{id}-rate{rate}-v{CACHE_VERSION}.clips",
        voice.config.name
    ))
}

/// The clips in `path`, if it holds a complete cache of this version.
pub fn load(path: &Path) -> Option<Clips> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    let mut r = bytes.strip_prefix(MAGIC.as_slice())?;
    let u32_ = |r: &mut &[u8]| -> Option<u32> {
        let (a, b) = r.split_first_chunk::<4>()?;
        *r = b;
        Some(u32::from_le_bytes(*a))
    };
    let n = u32_(&mut r)?;
    let mut clips = Clips::new();
    for _ in 0..n {
        let klen = u32_(&mut r)? as usize;
        let key = std::str::from_utf8(r.get(..klen)?).ok()?.to_string();
        r = &r[klen..];
        let len = u32_(&mut r)? as usize;
        let raw = r.get(..len.checked_mul(4)?)?;
        r = &r[len * 4..];
        let samples = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        clips.insert(key, samples);
    }
    r.is_empty().then_some(clips)
}

/// Writes `clips` to `path` (through a temporary file, so a reader never sees half of it).
pub fn save(path: &Path, clips: &Clips) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut buf = Vec::new();
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&(clips.len() as u32).to_le_bytes());
    let mut keys: Vec<&String> = clips.keys().collect();
    keys.sort();
    for k in keys {
        buf.extend_from_slice(&(k.len() as u32).to_le_bytes());
        buf.extend_from_slice(k.as_bytes());
        let s = &clips[k];
        buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        for x in s {
            buf.extend_from_slice(&x.to_le_bytes());
        }
    }
    let tmp = path.with_extension("tmp");
    std::fs::File::create(&tmp)?.write_all(&buf)?;
    std::fs::rename(&tmp, path)
}

/// [`build`] while the module speaks: on one thread of its own at the lowest priority, so
/// the engine's synthesis (on the shared thread pool) never waits for it. `None` if that
/// thread cannot be made.
pub fn build_in_background(voice: &Arc<Voice>, rate: i32, cancel: &AtomicBool) -> Option<Clips> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "hark-clip-synth".into())
        .start_handler(|_| lowest_priority())
        .build();
    match pool {
        Ok(pool) => pool.install(|| build(voice, rate, cancel)),
        Err(e) => {
            tracing::warn!("clip cache: no thread to build it on: {e}");
            None
        }
    }
}

/// The calling thread at nice 19 (Linux keeps a nice value per thread).
fn lowest_priority() {
    // SAFETY: plain syscalls on the calling thread's own id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if libc::setpriority(libc::PRIO_PROCESS, tid, 19) != 0 {
            tracing::debug!("clip cache: the priority stays as it was");
        }
    }
}

/// Synthesises every clip of `keys.rs` for `voice` at speech-dispatcher rate `rate` (on the
/// CPU, deterministic, on the current thread pool). `cancel` stops it between clips (`None`
/// then).
pub fn build(voice: &Arc<Voice>, rate: i32, cancel: &AtomicBool) -> Option<Clips> {
    let mut synth = match Synthesizer::new(Arc::clone(voice), BackendChoice::Cpu) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("clip cache: no synthesiser: {e}");
            return None;
        }
    };
    synth.speed = speed_for_rate(rate);
    let rate_hz = voice.config.sample_rate;
    let mut clips = Clips::new();
    for (key, text) in keys::cache_entries() {
        if cancel.load(Ordering::Relaxed) {
            return None;
        }
        let mut audio = Vec::new();
        let spoken = synth.speak(Input::Text(&text), |s| {
            audio.extend_from_slice(s);
            Ok(())
        });
        match spoken {
            Ok(_) => {
                clips.insert(key, trim(&audio, rate_hz));
            }
            Err(e) => tracing::debug!("clip cache: {key} has no sound: {e}"),
        }
    }
    Some(clips)
}

/// `samples` without the silence at either end, with short fades.
pub fn trim(samples: &[f32], rate: u32) -> Vec<f32> {
    let first = samples.iter().position(|s| s.abs() > SILENCE);
    let last = samples.iter().rposition(|s| s.abs() > SILENCE);
    let (Some(a), Some(b)) = (first, last) else {
        return Vec::new();
    };
    let pad = (rate as usize) / 500; // 2 ms either side
    let a = a.saturating_sub(pad);
    let b = (b + pad + 1).min(samples.len());
    let mut out = samples[a..b].to_vec();
    fade(&mut out, rate);
    out
}

fn fade(out: &mut [f32], rate: u32) {
    let n = ((rate as f32 * FADE_MS / 1000.0) as usize).min(out.len() / 2);
    for i in 0..n {
        let g = i as f32 / n as f32;
        out[i] *= g;
        let j = out.len() - 1 - i;
        out[j] *= g;
    }
}

/// The clips joined with `gap_ms` of silence between them.
pub fn join(parts: &[&[f32]], gap_ms: u32, rate: u32) -> Vec<f32> {
    let gap = (rate as usize * gap_ms as usize) / 1000;
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.extend(std::iter::repeat_n(0.0, gap));
        }
        out.extend_from_slice(p);
    }
    out
}

/// A short rising two-note tone: the capital-letter and sound-icon cue.
pub fn tone(rate: u32) -> Vec<f32> {
    let r = rate as f32;
    let note = |hz: f32, ms: f32| -> Vec<f32> {
        let n = (r * ms / 1000.0) as usize;
        (0..n)
            .map(|i| 0.25 * (2.0 * std::f32::consts::PI * hz * i as f32 / r).sin())
            .collect()
    };
    let mut out = note(880.0, 35.0);
    out.extend(note(1320.0, 35.0));
    fade(&mut out, rate);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_keeps_the_sound_and_fades_its_ends() {
        let mut x = vec![0.0f32; 1000];
        x.extend(vec![0.5f32; 441]);
        x.extend(vec![0.0f32; 1000]);
        let t = trim(&x, 22_050);
        assert!(t.len() >= 441 && t.len() < 441 + 100, "{}", t.len());
        assert!(t[0].abs() < 1e-6 && t[t.len() - 1].abs() < 1e-6);
        assert!(trim(&[0.0; 100], 22_050).is_empty());
    }

    #[test]
    fn files_round_trip_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.clips");
        let mut clips = Clips::new();
        clips.insert("char:a".into(), vec![0.1, -0.2, 0.3]);
        clips.insert("key:shift".into(), vec![]);
        save(&p, &clips).unwrap();
        assert_eq!(load(&p), Some(clips));
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 2]).unwrap();
        assert_eq!(load(&p), None);
    }
}
