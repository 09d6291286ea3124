//! `hark follow`'s caption modes through the CLI: a subtitle track rendered with each cue in
//! its slot (`--subtitles --out`), revising captions said word by word once each
//! (`--revising`), and mpv followed through its IPC, with a seek and a pause (`--mpv`).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use testkit::{installed_voices_dir, read_wav};

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// Deterministic speech, so each run of a test says the same.
const DETERMINISTIC: [&str; 6] = ["--backend", "cpu", "--noise-scale", "0", "--noise-w", "0"];

/// Cues (start, end, text): one that fits, one that must be sped up, one too long for its
/// slot at any allowed speed, and a last one.
const CUES: [(f64, f64, &str); 4] = [
    (1.0, 2.5, "<i>Good evening.</i>"),
    (3.0, 4.4, "This line is rather long for the time it has."),
    (
        4.5,
        5.0,
        "And this one is far too long to say in half a second at any speed.",
    ),
    (5.2, 7.5, "- The end."),
];

/// A SubRip file of `cues`, with CRLF line ends.
fn srt(cues: &[(f64, f64, &str)]) -> String {
    let t = |s: f64| {
        let ms = (s * 1000.0).round() as u64;
        format!("00:00:{:02},{:03}", ms / 1000, ms % 1000)
    };
    cues.iter()
        .enumerate()
        .map(|(i, (a, b, text))| format!("{}\r\n{} --> {}\r\n{text}\r\n\r\n", i + 1, t(*a), t(*b)))
        .collect()
}

/// The first loud sample at or after `from` seconds, in seconds.
fn onset_after(x: &[f32], rate: u32, from: f64) -> Option<f64> {
    let at = (from * f64::from(rate)) as usize;
    x.get(at..)?
        .iter()
        .position(|s| s.abs() > 0.01)
        .map(|k| (at + k) as f64 / f64::from(rate))
}

/// The peak level between two times.
fn peak(x: &[f32], rate: u32, from: f64, to: f64) -> f32 {
    let (a, b) = (
        (from * f64::from(rate)) as usize,
        (to * f64::from(rate)) as usize,
    );
    x[a.min(x.len())..b.min(x.len())]
        .iter()
        .fold(0.0, |m, s| m.max(s.abs()))
}

fn render(dir: &Path, voices: &Path, overflow: &str) -> (u32, Vec<f32>, String) {
    let out = dir.join(format!("track-{overflow}.wav"));
    let run = Command::new(HARK)
        .args(["follow", "--subtitles"])
        .arg(dir.join("film.srt"))
        .arg("--out")
        .arg(&out)
        .args(DETERMINISTIC)
        .args(["--max-rate", "2.5", "--overflow", overflow])
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run hark follow --subtitles --out");
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(run.status.success(), "{stderr}");
    let (rate, x) = read_wav(&out);
    (rate, x, stderr)
}

#[test]
fn a_subtitle_track_is_rendered_with_each_cue_in_its_slot() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("film.srt"), srt(&CUES)).expect("write srt");
    // The second cue alone at normal speed, to see it was sped up in the track.
    let alone = dir.path().join("alone.wav");
    let st = Command::new(HARK)
        .args(["speak", "--out"])
        .arg(&alone)
        .args(DETERMINISTIC)
        .arg(CUES[1].2)
        .env("HARK_VOICES_DIR", voices)
        .status()
        .expect("run hark speak");
    assert!(st.success());
    let (r1, a) = read_wav(&alone);
    let at_one = a.iter().rposition(|s| s.abs() > 0.01).unwrap() as f64 / f64::from(r1);
    assert!(
        at_one > 1.6,
        "the second cue must need a speed-up: {at_one:.2} s at 1×"
    );

    for overflow in ["shorten", "drop"] {
        let (rate, x, stderr) = render(dir.path(), voices, overflow);
        let secs = x.len() as f64 / f64::from(rate);
        assert!(
            (secs - 7.5).abs() < 0.01,
            "the track lasts as the subtitles do: {secs:.3} s"
        );
        assert!(
            peak(&x, rate, 0.0, 0.99) == 0.0,
            "silence before the first cue"
        );
        let said: Vec<usize> = match overflow {
            "shorten" => vec![0, 1, 2, 3],
            _ => vec![0, 1, 3],
        };
        for (i, (start, _, _)) in CUES.iter().enumerate() {
            let slot_end = CUES.get(i + 1).map_or(7.5, |c| c.0);
            if !said.contains(&i) {
                assert_eq!(
                    peak(&x, rate, *start, slot_end),
                    0.0,
                    "{overflow}: cue {i} is dropped"
                );
                continue;
            }
            // Sound starts on the cue's time (its inaudible start skipped).
            let on = onset_after(&x, rate, *start - 0.001).expect("sound");
            assert!(
                on - start < 0.05,
                "{overflow}: cue {i} starts {:.0} ms late",
                (on - start) * 1000.0
            );
            // The slot before the next cue ends quietly (a fade at most), so nothing runs on.
            assert!(
                peak(&x, rate, slot_end - 0.002, slot_end) < 0.05,
                "{overflow}: cue {i} runs into the next"
            );
        }
        // The sped-up cue ends within its slot, shorter than at normal speed.
        let (a, b) = (
            (3.0 * f64::from(rate)) as usize,
            (4.5 * f64::from(rate)) as usize,
        );
        let last_loud = 3.0
            + x[a..b]
                .iter()
                .rposition(|s| s.abs() > 0.01)
                .expect("the second cue") as f64
                / f64::from(rate);
        assert!(
            last_loud - 3.0 < at_one * 0.95,
            "{overflow}: the second cue was not sped up"
        );
        assert!(stderr.contains("4 cues"), "{stderr}");
        match overflow {
            "shorten" => assert!(stderr.contains("1 shortened, 0 dropped"), "{stderr}"),
            _ => assert!(stderr.contains("0 shortened, 1 dropped"), "{stderr}"),
        }
    }
}

/// A hark child's stdout lines as they come, with when each came.
fn lines_of(child: &mut Child) -> mpsc::Receiver<(Instant, String)> {
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or(serde_json::Value::Null)
}

#[test]
fn revising_captions_say_every_word_once() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    // A captioner's stream: each line grows a word at a time, the newest word often heard
    // wrong first and put right in the next message, every message sent twice.
    let lines = [
        "good evening and welcome to the news",
        "the storm moved north in the night",
    ];
    let mut stream = String::new();
    for line in lines {
        let words: Vec<&str> = line.split(' ').collect();
        for n in 1..=words.len() {
            let mut wrong = words[..n].to_vec();
            let garbled = format!("{}s", words[n - 1]);
            wrong[n - 1] = &garbled;
            stream += &format!("{{\"text\": \"{}\", \"final\": false}}\n", wrong.join(" "));
            for _ in 0..2 {
                stream += &format!("{{\"text\": \"{}\"}}\n", words[..n].join(" "));
            }
        }
        stream += &format!("{{\"text\": \"{line}\", \"final\": true}}\n");
    }
    stream += "this line is not json\n";
    let mut child = Command::new(HARK)
        .args(["follow", "--revising", "--audio", "simulated", "--events"])
        .args(DETERMINISTIC)
        .env("HARK_VOICES_DIR", voices)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hark follow --revising");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    let rx = lines_of(&mut child);
    let status = child.wait().expect("hark exits at the end of its input");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("line ") && stderr.contains("not a caption message"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("this line is not json"),
        "the text is never echoed: {stderr}"
    );
    let events: Vec<serde_json::Value> = rx.try_iter().map(|(_, l)| json(&l)).collect();
    let words = events.iter().filter(|e| e["event"] == "word").count();
    let want: usize = lines.iter().map(|l| l.split(' ').count()).sum();
    assert_eq!(words, want, "every word said once");
    let finished: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "finished").collect();
    assert!(finished.len() >= 2, "{} utterances", finished.len());
    assert!(
        finished.iter().all(|e| e["stopped"] == false),
        "nothing cut off"
    );
}

/// mpv's side of the test: commands with a request id, answers read past its events.
struct MpvControl {
    socket: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl MpvControl {
    fn connect(path: &Path) -> Self {
        let socket = UnixStream::connect(path).expect("connect to mpv");
        let reader = BufReader::new(socket.try_clone().unwrap());
        Self {
            socket,
            reader,
            next_id: 100,
        }
    }

    fn command(&mut self, args: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = serde_json::json!({ "command": args, "request_id": id });
        writeln!(self.socket, "{msg}").expect("send to mpv");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.reader.read_line(&mut line).expect("read mpv") > 0,
                "mpv closed"
            );
            let v = json(&line);
            if v["request_id"] == id {
                return v["data"].clone();
            }
        }
    }

    fn media(&mut self) -> f64 {
        self.command(serde_json::json!(["get_property", "time-pos"]))
            .as_f64()
            .expect("time-pos")
    }
}

#[test]
fn mpv_is_followed_through_a_seek_and_a_pause() {
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    if Command::new("mpv").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "mpv is needed in CI (scripts/install-deps.sh)"
        );
        eprintln!("skipped: mpv not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // A quiet 12-second file to play, and its subtitles.
    let wav = dir.path().join("film.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 8000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    (0..8000 * 12).for_each(|k| {
        w.write_sample(((k as f32 * 0.05).sin() * 200.0) as i16)
            .unwrap()
    });
    w.finalize().unwrap();
    let cues = [
        (1.0, 2.5, "Good evening."),
        (3.5, 4.5, "The seek skips me."),
        (6.0, 7.5, "After the seek."),
        (9.0, 10.5, "After the pause."),
    ];
    std::fs::write(dir.path().join("film.srt"), srt(&cues)).unwrap();
    let sock = dir.path().join("mpv.sock");
    let mut mpv = Command::new("mpv")
        .args([
            "--no-config",
            "--idle=no",
            "--pause",
            "--ao=null",
            "--vo=null",
            "--really-quiet",
        ])
        .arg(format!("--input-ipc-server={}", sock.display()))
        .arg(format!(
            "--sub-file={}",
            dir.path().join("film.srt").display()
        ))
        .arg(&wav)
        .stdin(Stdio::null())
        .spawn()
        .expect("start mpv");
    let t0 = Instant::now();
    while UnixStream::connect(&sock).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "mpv's socket never came"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut hark = Command::new(HARK)
        .args(["follow", "--mpv"])
        .arg(&sock)
        .args(["--audio", "simulated", "--events"])
        .args(DETERMINISTIC)
        .env("HARK_VOICES_DIR", voices)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start hark follow --mpv");
    let rx = lines_of(&mut hark);
    // The events up to the first `what`, each with when its line came.
    let wait_for = |what: &str, limit: Duration| -> Vec<(Instant, serde_json::Value)> {
        let mut seen = Vec::new();
        let until = Instant::now() + limit;
        while let Ok((at, l)) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            let v = json(&l);
            let done = v["event"] == what;
            seen.push((at, v));
            if done {
                return seen;
            }
        }
        panic!("no {what} event within {limit:?}: {seen:?}");
    };
    wait_for("following", Duration::from_secs(60));
    let mut ctl = MpvControl::connect(&sock);
    ctl.command(serde_json::json!(["set_property", "pause", false]));
    // (media time when the cue's speech started, when it finished)
    let mut spoken: Vec<(f64, f64)> = Vec::new();
    // The film's time when a line came: mpv's position now, less the time since (the test's
    // own delay in asking is not counted against Hark).
    let media_at = |ctl: &mut MpvControl, at: Instant| ctl.media() - at.elapsed().as_secs_f64();
    let mut hear = |ctl: &mut MpvControl, limit: Duration| {
        let before = wait_for("started", limit);
        assert!(
            before.iter().any(|(_, e)| e["event"] == "cue"),
            "a cue event first: {before:?}"
        );
        let started = media_at(ctl, before.last().unwrap().0);
        let after = wait_for("finished", Duration::from_secs(10));
        spoken.push((started, media_at(ctl, after.last().unwrap().0)));
    };
    hear(&mut ctl, Duration::from_secs(10));
    // Past the first cue, seek beyond the second.
    while ctl.media() < 2.6 {
        std::thread::sleep(Duration::from_millis(20));
    }
    ctl.command(serde_json::json!(["seek", 5.0, "absolute"]));
    hear(&mut ctl, Duration::from_secs(10));
    // Pause for 1.5 s after the third cue; nothing may start while paused.
    while ctl.media() < 7.8 {
        std::thread::sleep(Duration::from_millis(20));
    }
    ctl.command(serde_json::json!(["set_property", "pause", true]));
    let held = ctl.media();
    let until = Instant::now() + Duration::from_millis(1500);
    let mut during = Vec::new();
    while let Ok((_, l)) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        during.push(l);
    }
    assert!(
        during.iter().all(|l| !l.contains("\"started\"")),
        "speech started while paused: {during:?}"
    );
    assert!((ctl.media() - held).abs() < 0.05, "mpv is paused");
    ctl.command(serde_json::json!(["set_property", "pause", false]));
    hear(&mut ctl, Duration::from_secs(10));
    let _ = ctl.command(serde_json::json!(["quit"]));
    let _ = mpv.wait();
    let t1 = Instant::now();
    while hark.try_wait().unwrap().is_none() {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "hark follow --mpv did not end with mpv"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let expected = [cues[0], cues[2], cues[3]];
    eprintln!("media times (started, finished) of the cues said: {spoken:?}");
    assert_eq!(spoken.len(), 3, "{spoken:?}");
    for ((started, finished), (start, end, text)) in spoken.iter().zip(expected) {
        // Within its cue, in its first third: mpv shows a cue only at its time, so Hark
        // cannot start early; measuring and the first audio take ~0.16 s on a quiet machine.
        let latest = start + (end - start) / 3.0;
        assert!(
            *started >= start - 0.1 && *started <= latest,
            "{text:?} ({start}–{end} s) started at {started:.3} s of the film (by {latest:.2} s)"
        );
        assert!(
            *finished <= end + 0.2,
            "{text:?} ran on to {finished:.3} s, past its end at {end} s"
        );
    }
}
