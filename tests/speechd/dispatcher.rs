//! Orca's path, end to end: Debian's speech-dispatcher runs sd_hark (installed with
//! `hark speechd install`), clients speak through it (`spd-say -o hark -w`, and
//! python3-speechd in `client.py`), and the CI null sink's monitor is recorded.
//! Needs `scripts/start-audio.sh`, `scripts/start-speechd.sh` and HARK_AUDIO_TESTS=1.

use super::sd::{HARK, Setup, chars_received, clip_onsets, median, serial, setup, timings};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use testkit::audio::{
    Recorder, audio_tests_enabled, best_alignment, cli_reference, piecewise_match, retry,
    windows_match,
};

/// speech-dispatcher runs with Hark installed.
struct Server;

/// speech-dispatcher with Hark installed into its configuration (once per test binary), or
/// `None` after the skip line.
fn server() -> Option<(&'static Setup, &'static Server)> {
    if !audio_tests_enabled() {
        return None;
    }
    let Some(home) = std::env::var_os("HARK_SPEECHD_HOME").map(PathBuf::from) else {
        eprintln!("skipped: no speech-dispatcher for the tests (source scripts/start-speechd.sh)");
        return None;
    };
    let s = setup()?;
    static SERVER: OnceLock<Server> = OnceLock::new();
    let server = SERVER.get_or_init(|| {
        let config = home.join("config");
        let out = Command::new(HARK)
            .args(["speechd", "install", "--module"])
            .arg(&s.module)
            .args(["--backend", "cpu", "--no-cache"])
            .args(["--module-option", "HarkNoiseScale 0"])
            .args(["--module-option", "HarkNoiseW 0"])
            .arg("--module-option")
            .arg(format!("HarkCacheDir {}", s.cache.display()))
            .env("XDG_CONFIG_HOME", &config)
            .env("HARK_VOICES_DIR", s.voices)
            .output()
            .expect("hark speechd install");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = std::fs::read_to_string(config.join("speech-dispatcher/speechd.conf")).unwrap();
        assert!(conf.contains("AddModule \"hark\""), "{conf}");
        // speech-dispatcher reads its modules when it starts.
        let root = testkit::workspace_root();
        let st = Command::new("bash")
            .arg(root.join("scripts/start-speechd.sh"))
            .status()
            .expect("restart speech-dispatcher");
        assert!(st.success());
        let listed = String::from_utf8_lossy(
            &Command::new("spd-say")
                .arg("-O")
                .output()
                .expect("spd-say")
                .stdout,
        )
        .into_owned();
        assert!(listed.lines().any(|l| l.trim() == "hark"), "{listed}");
        assert!(
            listed.lines().any(|l| l.trim() == "espeak-ng"),
            "espeak-ng is kept: {listed}"
        );
        Server
    });
    Some((s, server))
}

/// The module's log as speech-dispatcher keeps it (its stderr, `hark.log` in the log folder;
/// start-speechd.sh runs it at trace level).
fn module_log() -> String {
    let home = std::env::var_os("HARK_SPEECHD_HOME").map(PathBuf::from);
    home.and_then(|h| std::fs::read_to_string(h.join("log/hark.log")).ok())
        .unwrap_or_default()
}

fn client(scenario: &str) -> serde_json::Value {
    let script = testkit::workspace_root().join("tests/speechd/client.py");
    let out = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(scenario)
        .output()
        .expect("python3 (python3-speechd)");
    assert!(
        out.status.success(),
        "client.py {scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client.py prints JSON")
}

fn events(v: &serde_json::Value) -> Vec<(f64, String, Option<String>)> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_f64().unwrap(),
                e[1].as_str().unwrap().to_string(),
                e[2].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn bursts(v: &serde_json::Value) -> Vec<(f64, f64)> {
    v["bursts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b[0].as_f64().unwrap(), b[1].as_f64().unwrap()))
        .collect()
}

#[test]
fn spd_say_through_hark_matches_hark_speak_out() {
    let Some((s, _)) = server() else { return };
    let _g = serial();
    let text = "Hello from Hark. This is the voice of the desktop.";
    let reference = cli_reference(HARK, s.voices, text);
    retry(|| {
        let rec = Recorder::start();
        let st = Command::new("spd-say")
            .args(["-o", "hark", "-w", text])
            .status()
            .expect("spd-say");
        assert!(st.success());
        let recording = rec.stop();
        let (lag, corr) = best_alignment(&reference, &recording);
        let (windows, _) = piecewise_match(&reference, &recording, lag);
        let mean = windows.iter().sum::<f64>() / windows.len().max(1) as f64;
        eprintln!("spd-say: lag {lag}, start correlation {corr:.3}, window mean {mean:.3}");
        assert!(
            windows_match(&windows),
            "the sink's audio does not match `hark speak --out` (mean {mean:.3})"
        );
    });
}

#[test]
fn marks_are_reported_as_their_audio_plays() {
    let Some(_) = server() else { return };
    let _g = serial();
    let v = client("marks");
    let ev = events(&v);
    let b = bursts(&v);
    eprintln!("marks: {ev:?}\nbursts: {b:?}");
    let kinds: Vec<&str> = ev.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(kinds, ["begin", "index_marks", "index_marks", "end"]);
    assert_eq!(ev[1].2.as_deref(), Some("one"));
    assert_eq!(ev[2].2.as_deref(), Some("two"));
    // Each mark is heard where its sentence ends: in a silence of at least 100 ms at the
    // sink (the gap between two sentences; the sink's clock is a monitor latency behind the
    // callback, and events take a few ms to arrive), with sound before it and between the
    // two. (On a loaded machine an underrun can split a sentence: gaps are found, not
    // counted.)
    let sound = |from: f64, to: f64| -> f64 {
        b.iter()
            .map(|(s, e)| (e.min(to) - s.max(from)).max(0.0))
            .sum()
    };
    let in_a_gap = |m: f64| {
        b.windows(2)
            .any(|w| w[1].0 - w[0].1 >= 0.1 && m > w[0].1 - 0.05 && m < w[1].0 + 0.03)
    };
    let (one, two) = (ev[1].0, ev[2].0);
    for m in [one, two] {
        assert!(
            in_a_gap(m),
            "mark at {m:.3} is not between sentences: {b:?}"
        );
    }
    assert!(sound(0.0, one) > 0.5, "the first sentence before mark one");
    assert!(
        sound(one, two) > 0.5,
        "the second sentence between the marks"
    );
    assert!(
        sound(two, f64::MAX) > 0.3,
        "the third sentence after mark two"
    );
}

#[test]
fn stop_is_silent_at_the_sink_at_once_and_the_next_message_is_as_quick() {
    let Some(_) = server() else { return };
    let _g = serial();
    let v = client("stop");
    let f = |k: &str| v[k].as_f64();
    let (t_stop, last) = (f("t_stop").unwrap(), f("last_before_restart"));
    let stop_ms = last.map_or(0.0, |l| (l - t_stop).max(0.0) * 1e3);
    let first = (f("first_sound").unwrap() - f("t0").unwrap()) * 1e3;
    let second = (f("second_sound").unwrap() - f("t1").unwrap()) * 1e3;
    eprintln!(
        "STOP → silence at the sink {stop_ms:.0} ms; SPEAK → sound {first:.0} ms, after STOP {second:.0} ms"
    );
    // At the sink: the client's call, speech-dispatcher, the module (≤ one 10 ms period and
    // a 4 ms fade at the callback) and the sound server's own latency.
    assert!(stop_ms < 80.0, "sound went on {stop_ms:.0} ms after STOP");
    assert!(
        second < first.max(200.0) * 1.5,
        "{second:.0} ms after STOP vs {first:.0} ms"
    );
}

#[test]
fn pause_holds_at_a_mark_and_resume_goes_on_from_it() {
    let Some(_) = server() else { return };
    let _g = serial();
    let v = client("pause");
    let ev = events(&v);
    let b = bursts(&v);
    eprintln!("pause: {ev:?}\nbursts: {b:?}");
    assert!(v["paused"].as_bool().unwrap(), "no PAUSE event");
    let at = |kind: &str, name: Option<&str>| -> Vec<f64> {
        ev.iter()
            .filter(|e| e.1 == kind && e.2.as_deref() == name)
            .map(|e| e.0)
            .collect()
    };
    let pause_at = at("pause", None)[0];
    let resume_at = v["t_resume"].as_f64().unwrap();
    // PAUSE came during the first sentence: it holds at the mark after it (speech-dispatcher's
    // own `__spd_0` there), and speech-dispatcher sends the rest from that mark on resume, so
    // each of the client's marks is reported once, in order.
    let (p1, p2) = (at("index_marks", Some("p1")), at("index_marks", Some("p2")));
    assert_eq!((p1.len(), p2.len()), (1, 1), "each mark once: {ev:?}");
    let end = at("end", None);
    assert_eq!(end.len(), 1, "{ev:?}");
    assert!(p1[0] < p2[0] && p2[0] <= end[0], "{ev:?}");
    // Silence from the pause to the resume, past a short tail at the mark.
    for (start, stop) in &b {
        assert!(
            !(*start > pause_at + 0.1 && *start < resume_at),
            "sound while paused: {start:.3}–{stop:.3}"
        );
    }
    let before: Vec<_> = b.iter().filter(|x| x.0 < pause_at).collect();
    assert!(!before.is_empty(), "the first sentence was heard");
    assert!(
        before.iter().all(|x| x.1 < pause_at + 0.1),
        "sound went on past the pause: {b:?}"
    );
    assert!(
        b.iter().any(|(s, _)| *s > resume_at),
        "nothing after resume"
    );
}

#[test]
fn the_rate_range_is_monotonic_and_bounded() {
    let Some(_) = server() else { return };
    let _g = serial();
    let v = client("rate");
    let rates: Vec<(i64, f64)> = v["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rate"].as_i64().unwrap(),
                r["voiced"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    eprintln!("rate → time with sound (s): {rates:?}");
    let d: Vec<f64> = rates.iter().map(|r| r.1).collect();
    assert!(d.iter().all(|&x| x > 0.3), "a rate was silent: {rates:?}");
    assert!(
        d.windows(2).all(|w| w[1] < w[0] * 1.05),
        "not monotonic: {rates:?}"
    );
    let normal = d[2];
    // −100 is half speed and +100 three times (the engine's speed: the length scale and
    // libsonic), by the time with sound; never an unusable extreme either way.
    assert!(d[0] / normal > 1.6 && d[0] / normal < 2.5, "{rates:?}");
    assert!(normal / d[4] > 2.4 && normal / d[4] < 3.8, "{rates:?}");
}

#[test]
fn chars_and_keys_sound_at_once() {
    let Some(_) = server() else { return };
    let _g = serial();
    let before = module_log().len();
    let v = client("keys");
    let mut lat = Vec::new();
    for k in v["keys"].as_array().unwrap() {
        let (t, s) = (k["t"].as_f64().unwrap(), k["sound"].as_f64());
        let s = s.unwrap_or_else(|| panic!("no sound for {k}"));
        lat.push((s - t) * 1e3);
    }
    eprintln!("CHAR/KEY → sound at the sink (ms): {lat:?}");
    let med = median(&mut lat);
    // The client's two round trips to the server (SET, CHAR) and the sound server's latency
    // are in this; the module's own part is ≤ 10 ms (module.rs measures it).
    assert!(med < 60.0, "median {med:.0} ms");
    // From the cache, and the module's own part: its `timing:` lines (the command's last
    // line → the first sample at the callback).
    let log = module_log();
    let log = log.get(before..).unwrap_or("");
    let mut clip = clip_onsets(log);
    assert_eq!(
        clip.len(),
        lat.len(),
        "every CHAR/KEY plays from the cache: {:?}",
        timings(log).0
    );
    let cmed = median(&mut clip);
    eprintln!("CHAR/KEY → first sample at the callback (module): median {cmed:.2} ms");
    assert!(cmed <= 10.0, "median {cmed:.1} ms");
}

#[test]
fn the_module_log_has_no_spoken_text() {
    let Some(_) = server() else { return };
    let _g = serial();
    let secret = ["Marzipanquest", "Tobogganfjord"];
    let text = format!("{} and {}.", secret[0], secret[1]);
    let st = Command::new("spd-say")
        .args(["-o", "hark", "-w", &text])
        .status()
        .expect("spd-say");
    assert!(st.success());
    let log = module_log();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "the module logs at trace level here (start-speechd.sh): {} bytes",
        log.len()
    );
    for w in secret {
        assert!(
            !log.to_lowercase().contains(&w.to_lowercase()),
            "hark.log has {w:?}"
        );
    }
}

#[test]
fn typing_echo_storm_never_lags() {
    let Some(_) = server() else { return };
    let _g = serial();
    let before = module_log().len();
    let v = client("storm");
    // The module's part: every key speech-dispatcher handed it played from the cache (a
    // loaded server may drop a key that the next CANCEL reaches before the module does).
    let log = module_log();
    let log = log.get(before..).unwrap_or("");
    let (received, cut) = chars_received(log, 10.0);
    let played = clip_onsets(log).len();
    eprintln!(
        "storm: the module got {received} keys ({cut} stopped within 10 ms) and played {played} from the cache"
    );
    assert!(
        played >= received - cut,
        "every key the module got played: {played} of {received} ({cut} cut at once)"
    );
    let begins: Vec<Option<f64>> = v["begins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_f64().map(|x| x * 1e3))
        .collect();
    let heard: Vec<f64> = begins.iter().flatten().copied().collect();
    let n = begins.len();
    let tail = v["tail"].as_f64().map(|t| t * 1e3);
    eprintln!(
        "storm: {n} keys, {} began, sound ended {tail:?} ms after the last key",
        heard.len()
    );
    assert!(
        heard.len() * 10 >= n * 9,
        "only {} of {n} keys began to play",
        heard.len()
    );
    let third = heard.len() / 3;
    let first = median(&mut heard[..third].to_vec());
    let last = median(&mut heard[heard.len() - third..].to_vec());
    let mut all = heard.clone();
    let med = median(&mut all);
    let p95 = all[all.len() * 95 / 100];
    eprintln!(
        "key → BEGIN at the client: median {med:.0} ms, p95 {p95:.0} ms; first third {first:.0}, last third {last:.0}"
    );
    assert!(last <= first + 10.0, "lag grows: {first:.0} → {last:.0} ms");
    assert!(p95 < 100.0, "p95 {p95:.0} ms");
    // Nothing queued behind the last key: its letter (well under a second) is the last sound.
    let tail = tail.expect("the keys were heard at the sink");
    assert!(
        tail < 1000.0,
        "sound went on {tail:.0} ms after the last key"
    );
}
