//! sd_hark over its pipes, on a simulated device: the protocol as speech-dispatcher 0.11
//! speaks it, SSML marks, STOP, PAUSE, CHAR/KEY from the clip cache, bad input, the log.

use super::sd::{Sd, clip_onsets, median, serial, setup, timings};
use std::time::{Duration, Instant};

const SEC: Duration = Duration::from_secs(1);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn a_session_as_speech_dispatcher_runs_it() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[]);
    // The server first offers to play the audio itself; Hark declines and gets the usual.
    sd.send("AUDIO\naudio_output_method=server\n.\n");
    sd.expect("207 OK RECEIVING AUDIO SETTINGS", SEC);
    assert_eq!(sd.expect("300", SEC).1, "300-Hark plays its own audio");
    assert_eq!(sd.expect("300 ", SEC).1, "300 MODULE ERROR");
    sd.send("AUDIO\naudio_output_method=pulse\naudio_pulse_device=default\n.\n");
    sd.expect("207 ", SEC);
    assert_eq!(sd.expect("203 ", SEC).1, "203 OK AUDIO INITIALIZED");
    sd.send("LOGLEVEL\nlog_level=3\n.\n");
    sd.expect("207 ", SEC);
    assert_eq!(sd.expect("203 ", SEC).1, "203 OK LOGLEVEL SET");
    sd.send("LIST VOICES\n");
    let voices = sd.until("200 OK VOICE LIST SENT", SEC);
    assert!(
        voices
            .iter()
            .any(|l| l.1 == "200-en_US-joe-medium\ten-US\tnone"),
        "{voices:?}"
    );
    sd.set("");
    // Out of range and unknown settings: 303, as speech-dispatcher's own modules answer.
    sd.send("SET\nrate=500\n.\n");
    sd.expect("203 OK RECEIVING", SEC);
    assert_eq!(
        sd.expect("30", SEC).1,
        "303 ERROR INVALID PARAMETER OR VALUE"
    );

    let ssml = "<speak>The first sentence.<mark name=\"__spd_0\"/> And a second one.<mark name=\"__spd_1\"/></speak>";
    let (sent, reply) = sd.message("SPEAK", ssml);
    assert_eq!(reply, "200 OK SPEAKING");
    let lines = sd.until("702 END", 30 * SEC);
    let text: Vec<&str> = lines.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(
        text,
        [
            "701 BEGIN",
            "700-__spd_0",
            "700 INDEX MARK",
            "700-__spd_1",
            "700 INDEX MARK",
            "702 END"
        ]
    );
    // Marks come as the audio plays (the device plays in real time), not as synthesised.
    let begin = lines[0].0;
    let (m0, m1) = (lines[1].0, lines[3].0);
    assert!(
        ms(m0 - begin) > 600.0,
        "first mark {:.0} ms after BEGIN",
        ms(m0 - begin)
    );
    assert!(ms(m1 - m0) > 500.0, "marks {:.0} ms apart", ms(m1 - m0));
    eprintln!(
        "SPEAK → BEGIN {:.0} ms, marks at {:.0} and {:.0} ms",
        ms(begin - sent),
        ms(m0 - begin),
        ms(m1 - begin)
    );
    sd.send("QUIT\n");
    assert_eq!(sd.expect("210", SEC).1, "210 OK QUIT");
    assert!(sd.wait_exit(5 * SEC).is_some_and(|st| st.success()));
}

#[test]
fn stop_ends_speech_at_once_and_the_next_message_starts_as_fast() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[("HARK_SPEECHD_LOG", "4")]);
    sd.set("");
    let long =
        "This is a long sentence that goes on, and on, and on for quite a while. ".repeat(20);
    let (t0, _) = sd.message("SPEAK", &long);
    let (b0, _) = sd.expect("701 BEGIN", 20 * SEC);
    std::thread::sleep(Duration::from_millis(500));
    let stop = sd.send("STOP\n");
    let (st, l) = sd.next(5 * SEC).expect("an event after STOP");
    assert_eq!(l, "703 STOP");
    assert!(
        ms(st - stop) < 150.0,
        "703 STOP after {:.0} ms",
        ms(st - stop)
    );
    let (t1, _) = sd.message("SPEAK", "Hello again.");
    let (b1, _) = sd.expect("701 BEGIN", 20 * SEC);
    sd.expect("702 END", 20 * SEC);
    let (first, second) = (ms(b0 - t0), ms(b1 - t1));
    eprintln!("SPEAK → BEGIN: {first:.0} ms, after a STOP {second:.0} ms");
    assert!(
        second < first.max(150.0) * 2.0,
        "{second:.0} ms after STOP vs {first:.0} ms"
    );
    sd.send("QUIT\n");
    sd.wait_exit(5 * SEC);
    // The module's own figure: STOP → the last faded sample at the callback.
    let (_, stops) = timings(&sd.log_text());
    eprintln!("STOP → silence at the callback: {stops:?} ms");
    assert!(!stops.is_empty(), "no stop timing in the log");
    assert!(stops[0] <= 20.0, "STOP took {:.1} ms to silence", stops[0]);
}

#[test]
fn pause_stops_at_the_next_mark() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[]);
    sd.set("");
    let ssml = "<speak>Pause after this first sentence.<mark name=\"__spd_0\"/> This second sentence is not heard.<mark name=\"__spd_1\"/> Nor this.</speak>";
    sd.message("SPEAK", ssml);
    sd.expect("701 BEGIN", 20 * SEC);
    sd.send("PAUSE\n");
    let lines = sd.until("704 PAUSE", 20 * SEC);
    let text: Vec<&str> = lines.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(text, ["700-__spd_0", "700 INDEX MARK", "704 PAUSE"]);
    // speech-dispatcher then sends the text after the mark: it plays as usual.
    sd.message(
        "SPEAK",
        "<speak> This second sentence is heard now.</speak>",
    );
    let after = sd.until("702 END", 20 * SEC);
    assert_eq!(after.first().map(|l| l.1.as_str()), Some("701 BEGIN"));
}

#[test]
fn chars_and_keys_play_from_the_cache_at_once() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[("HARK_SPEECHD_LOG", "4")]);
    sd.set("");
    // The cache is on disk: loaded at INIT; give its clips a moment to be prepared.
    std::thread::sleep(Duration::from_millis(300));
    let mut latencies = Vec::new();
    for c in "hark speaks 0123?!".chars() {
        let data = if c == ' ' {
            "space".to_string()
        } else {
            c.to_string()
        };
        let (t, reply) = sd.message("CHAR", &data);
        assert_eq!(reply, "200 OK SPEAKING");
        let (b, _) = sd.expect("701 BEGIN", 5 * SEC);
        sd.expect("702 END", 5 * SEC);
        latencies.push(ms(b - t));
    }
    for key in [
        "space",
        "enter",
        "shift_a",
        "control_alt_delete",
        "kp-5",
        "f12",
    ] {
        let (t, reply) = sd.message("KEY", key);
        assert_eq!(reply, "200 OK SPEAKING", "{key}");
        let (b, _) = sd.expect("701 BEGIN", 5 * SEC);
        sd.expect("702 END", 5 * SEC);
        latencies.push(ms(b - t));
    }
    // Capital letters with each cue, and a pitch.
    for (cue, pitch) in [("icon", 0), ("spell", 0), ("none", 40)] {
        sd.set(&format!("cap_let_recogn={cue}\npitch={pitch}\n"));
        let (t, _) = sd.message("CHAR", "Q");
        let (b, _) = sd.expect("701 BEGIN", 5 * SEC);
        sd.expect("702 END", 5 * SEC);
        latencies.push(ms(b - t));
    }
    let worst = latencies.iter().copied().fold(0.0, f64::max);
    let med = median(&mut latencies.clone());
    eprintln!("CHAR/KEY → 701 BEGIN on the pipe: median {med:.1} ms, worst {worst:.1} ms");
    sd.send("QUIT\n");
    sd.wait_exit(5 * SEC);
    // The module's own figure: from the command to the callback handing out the clip's
    // first sample (the pipe, the event thread and the 2 ms marker poll are not in it).
    let log = sd.log_text();
    let mut clip = clip_onsets(&log);
    assert!(
        clip.len() >= latencies.len(),
        "every key from the cache: {:?}",
        timings(&log).0
    );
    let cmed = median(&mut clip);
    let cworst = clip.last().copied().unwrap_or(0.0);
    eprintln!("CHAR/KEY → first sample at the callback: median {cmed:.2} ms, worst {cworst:.2} ms");
    assert!(cmed <= 10.0, "median CHAR → first sample {cmed:.1} ms");
    assert!(med <= 25.0, "median CHAR → BEGIN {med:.1} ms");
}

#[test]
fn typing_echo_does_not_queue_up() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[]);
    sd.set("");
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let mut lat = Vec::new();
    for (i, c) in "thequickbrownfoxjumpsoverthelazydogagain"
        .chars()
        .enumerate()
    {
        let at = start + Duration::from_millis(100 * i as u64);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        sd.send("STOP\n");
        let (t, reply) = sd.message("CHAR", &c.to_string());
        assert_eq!(reply, "200 OK SPEAKING");
        // The last key's end (or its stop) may come first.
        loop {
            let (b, l) = sd.next(5 * SEC).expect("BEGIN");
            if l == "701 BEGIN" {
                lat.push(ms(b - t));
                break;
            }
            assert!(l == "702 END" || l == "703 STOP", "{l}");
        }
    }
    let n = lat.len();
    let first = median(&mut lat[..n / 3].to_vec());
    let last = median(&mut lat[n - n / 3..].to_vec());
    let worst = lat.iter().copied().fold(0.0, f64::max);
    eprintln!("typing: first third {first:.1} ms, last third {last:.1} ms, worst {worst:.1} ms");
    assert!(last <= first + 5.0, "lag grows: {first:.1} → {last:.1} ms");
    assert!(worst < 50.0, "a key took {worst:.1} ms");
}

#[test]
fn bad_input_gets_clear_replies_and_a_closed_stdin_a_clean_exit() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[]);
    sd.send("HELLO THERE\n");
    assert_eq!(sd.expect("300", SEC).1, "300 ERR UNKNOWN COMMAND");
    sd.send("\u{1}\u{2}\u{7f}\n");
    assert_eq!(sd.expect("300", SEC).1, "300 ERR UNKNOWN COMMAND");
    sd.send("SET\nno equals sign\nrate=\n.\n");
    sd.expect("203 OK RECEIVING", SEC);
    assert_eq!(sd.expect("30", SEC).1, "302 ERROR BAD SYNTAX");
    sd.send("DEBUG ON\n");
    assert_eq!(sd.expect("30", SEC).1, "302 ERROR BAD SYNTAX");
    // An empty message, and a KEY of two lines.
    let (_, r) = sd.message("SPEAK", "");
    assert_eq!(r, "301 ERROR CANT SPEAK");
    let (_, r) = sd.message("KEY", "a\nb");
    assert_eq!(r, "305 DATA MORE THAN ONE LINE");
    // Malformed and unknown SSML: read without the tags, or the unknown tag ignored.
    sd.set("");
    for doc in [
        "<speak>unclosed <b>tag</speak>",
        "<speak><bogus attr='1'>unknown element</bogus> &nosuch; entity</speak>",
        "<speak><prosody rate='NaN' pitch='+999st' volume='-1e40dB'>odd values</prosody><break time='99999s'/></speak>",
    ] {
        let (_, r) = sd.message("SPEAK", doc);
        assert_eq!(r, "200 OK SPEAKING", "{doc}");
        sd.expect("701 BEGIN", 20 * SEC);
        sd.send("STOP\n");
        sd.expect("703 STOP", 5 * SEC);
    }
    // 1 MB in one message: taken, spoken from its start, stopped.
    let big = "A long text for a big message. ".repeat(34_000);
    let (t, r) = sd.message("SPEAK", &big);
    assert_eq!(r, "200 OK SPEAKING");
    let (b, _) = sd.expect("701 BEGIN", 20 * SEC);
    eprintln!("1 MB SPEAK → BEGIN {:.0} ms", ms(b - t));
    assert!(ms(b - t) < 3000.0);
    sd.send("STOP\n");
    sd.expect("703 STOP", 5 * SEC);
    // A block left open, then the end of stdin: a clean exit.
    sd.send("SPEAK\nhalf a message\n");
    sd.close_stdin();
    let st = sd
        .wait_exit(10 * SEC)
        .expect("sd_hark exits when stdin closes");
    assert!(st.success(), "{st:?}");
    let log = sd.log_text();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn speech_does_not_wait_for_the_clip_cache_being_made() {
    let Some(s) = setup() else { return };
    let _g = serial();
    // SPEAK → BEGIN with the cache on disk, then with none: the module builds it in the
    // background from INIT on, and speech must not share its threads (the build used to run
    // on the engine's pool: twice the wait on an idle machine, seconds on a busy one).
    let empty = tempfile::tempdir().unwrap();
    let mut medians = Vec::new();
    for extra in [
        String::new(),
        format!("HarkCacheDir {}\n", empty.path().display()),
    ] {
        let mut sd = Sd::init(s, &extra, &[]);
        sd.set("");
        let mut waits = Vec::new();
        for _ in 0..3 {
            let (t, _) = sd.message("SPEAK", "Speech comes first.");
            let (b, _) = sd.expect("701 BEGIN", 30 * SEC);
            waits.push(ms(b - t));
            sd.expect("702 END", 30 * SEC);
        }
        medians.push(median(&mut waits));
    }
    eprintln!(
        "SPEAK → BEGIN: {:.0} ms with the cache, {:.0} ms while it is made",
        medians[0], medians[1]
    );
    assert!(
        medians[1] < medians[0] * 1.4 + 10.0,
        "{:.0} ms while the cache is made, {:.0} ms with it",
        medians[1],
        medians[0]
    );
}

#[test]
fn without_a_sound_device_init_says_why() {
    let Some(s) = setup() else { return };
    let _g = serial();
    // An ALSA configuration with no devices at all, and no sound server to find.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("asound.conf");
    std::fs::write(&conf, "").unwrap();
    let env = [
        ("ALSA_CONFIG_PATH", conf.to_str().unwrap()),
        ("PULSE_SERVER", "unix:/nonexistent"),
        ("PIPEWIRE_REMOTE", "/nonexistent"),
    ];
    let mut sd = Sd::start_with(s, "HarkAudio device\n", &env);
    sd.send("INIT\n");
    let lines = sd.until("399 ", 60 * SEC);
    assert_eq!(lines.last().unwrap().1, "399 ERR CANT INIT MODULE");
    assert!(
        lines[0].1.starts_with("399-Hark: the engine did not start")
            && lines[0].1.contains("audio"),
        "{lines:?}"
    );
    let st = sd.wait_exit(10 * SEC).expect("exits after a failed INIT");
    assert!(!st.success());
    assert!(!sd.log_text().contains("panicked"));
}

#[test]
fn without_init_it_exits() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::start(s, "", &[]);
    sd.send("SPEAK\n");
    let st = sd.wait_exit(10 * SEC).expect("exits");
    assert_eq!(st.code(), Some(3));
    assert!(sd.log_text().contains("Server did not start with INIT"));
}

#[test]
fn the_log_has_no_spoken_text_even_at_trace_level() {
    let Some(s) = setup() else { return };
    let _g = serial();
    let mut sd = Sd::init(s, "", &[("HARK_SPEECHD_LOG", "5")]);
    sd.set("spelling_mode=off\n");
    let secret = ["Zanzibarquux", "Plumtartlet", "Quokkavelvet"];
    sd.message(
        "SPEAK",
        &format!(
            "<speak>{} and {}.<mark name=\"__spd_0\"/></speak>",
            secret[0], secret[1]
        ),
    );
    sd.expect("702 END", 30 * SEC);
    sd.message("SPEAK", &format!("<speak>broken <b>{}</speak>", secret[2]));
    sd.expect("702 END", 30 * SEC);
    sd.message("CHAR", "q");
    sd.expect("702 END", 5 * SEC);
    sd.send("QUIT\n");
    sd.wait_exit(10 * SEC);
    let log = sd.log_text();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace logging is on: {log}"
    );
    for w in secret {
        assert!(
            !log.to_lowercase().contains(&w.to_lowercase()),
            "the log has {w:?}"
        );
    }
}

#[test]
fn language_and_voice_settings_pick_an_installed_voice() {
    let Some(s) = setup() else { return };
    let _g = serial();
    // Two voices: the real one, and the same files under a German name.
    let dir = tempfile::tempdir().unwrap();
    let real = s.voices.join("en_US-joe-medium");
    for name in ["en_US-joe-medium", "de_DE-joe-test"] {
        let v = dir.path().join(name);
        std::fs::create_dir(&v).unwrap();
        std::os::unix::fs::symlink(real.join("voice.safetensors"), v.join("voice.safetensors"))
            .unwrap();
        std::fs::copy(real.join("voice.json"), v.join("voice.json")).unwrap();
    }
    let extra = format!("HarkVoicesDir {}\n", dir.path().display());
    let mut sd = Sd::init(s, &extra, &[("HARK_SPEECHD_LOG", "3")]);
    sd.send("LIST VOICES\n");
    let voices: Vec<String> = sd
        .until("200 OK VOICE LIST SENT", SEC)
        .into_iter()
        .map(|l| l.1)
        .collect();
    assert!(
        voices.contains(&"200-de_DE-joe-test\tde-DE\tnone".to_string()),
        "{voices:?}"
    );
    assert!(
        voices.contains(&"200-en_US-joe-medium\ten-US\tnone".to_string()),
        "{voices:?}"
    );
    // Each SET as speech-dispatcher sends it before a message; a message after each.
    for (lang, voice) in [
        ("de", "NULL"),
        ("de", "NULL"),
        ("en", "en_US-joe-medium"),
        ("en-US", "NULL"),
    ] {
        sd.set(&format!("language={lang}\nsynthesis_voice={voice}\n"));
        let (_, r) = sd.message("SPEAK", "Hello.");
        assert_eq!(r, "200 OK SPEAKING");
        sd.expect("702 END", 30 * SEC);
    }
    sd.send("QUIT\n");
    sd.wait_exit(5 * SEC);
    let switches: Vec<String> = sd
        .log_text()
        .lines()
        .filter(|l| l.contains("switching to voice"))
        .map(|l| {
            l.split("switching to voice ")
                .nth(1)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    // German once (the second SET changes nothing), English by name, then nothing: en-US
    // is the voice's own language.
    assert_eq!(switches, ["de_DE-joe-test", "en_US-joe-medium"]);
}
