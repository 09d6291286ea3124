//! `hark bench --speechd`: Hark as a screen reader hears it. A private speech-dispatcher
//! (its own configuration, socket and logs in a temporary folder; the user's is not touched)
//! runs two modules, `sd_hark` and Debian's stock `sd_espeak-ng`, and an SSIP client (the
//! protocol Orca speaks) sends both the same messages, round after round, in alternating
//! order. What the sound server plays is recorded from the sink's monitor (`sink.rs`):
//!
//! - SPEAK → first sound (two short sentences, after silence);
//! - CHAR → first sound (a letter or digit, after silence);
//! - CANCEL → silence (the last sound after a CANCEL sent while speech is heard);
//! - the gap between the two sentences (the longest silence inside the message).
//!
//! All four are at the sink, so they include speech-dispatcher, the sound server and the
//! monitor's latency, the same for both modules. sd_hark's own part (the command's last line
//! → the first sample at its audio callback; a stop → the last faded sample) comes from its
//! log at debug level, `timing:` lines that hold numbers only.

use super::sink::{self, SinkRecorder};
use super::ssip::Ssip;
use super::{Stats, load};
use anyhow::Context;
use serde::Serialize;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MODULES: [&str; 2] = ["hark", "espeak-ng"];
const TWO_SENTENCES: &str =
    "The sun rose over the quiet hills. A cold wind came down from the north.";
const LONG: &str = "This is a long text that goes on for a while so that a cancel can be sent \
while it is heard, and then it would go on for much longer than anyone would wait.";
const CHARS: [char; 4] = ['a', 'k', '7', 'z'];
/// Silence before each timed message, so that its first sound is its own.
const QUIET: Duration = Duration::from_millis(600);

pub struct SpeechdArgs<'a> {
    pub rounds: usize,
    pub voice: Option<&'a str>,
    pub backend: &'a str,
    pub monitor: &'a str,
    pub json: bool,
}

#[derive(Serialize, Default)]
struct ModuleFigures {
    speak_to_sound: Option<Stats>,
    char_to_sound: Option<Stats>,
    cancel_to_silence: Option<Stats>,
    sentence_gap: Option<Stats>,
    /// Messages that made no sound at all (or whose CANCEL found no sound playing).
    missed: usize,
    /// Every sample, ms, in the order measured.
    raw: RawSamples,
}

#[derive(Serialize, Default)]
struct RawSamples {
    speak: Vec<f64>,
    chars: Vec<f64>,
    cancel: Vec<f64>,
    gap: Vec<f64>,
}

#[derive(Serialize)]
struct HarkOwn {
    /// sd_hark's log: the command's last line → the first sample at its audio callback.
    char_to_callback: Option<Stats>,
    speak_to_callback: Option<Stats>,
    /// A stop → the last faded sample leaving the callback.
    stop_to_faded: Option<Stats>,
}

#[derive(Serialize)]
struct Report {
    server: String,
    monitor: String,
    rounds: usize,
    hark_backend: String,
    cpus: usize,
    load_before: String,
    load_after: String,
    hark: ModuleFigures,
    espeak_ng: ModuleFigures,
    /// Median over rounds of hark / espeak-ng (each round's medians; < 1: Hark is faster).
    ratio_median: Ratios,
    hark_module: HarkOwn,
}

#[derive(Serialize, Default)]
struct Ratios {
    speak_to_sound: Option<f64>,
    char_to_sound: Option<f64>,
    cancel_to_silence: Option<f64>,
    sentence_gap: Option<f64>,
}

/// One module's samples, ms.
#[derive(Default)]
struct Samples {
    speak: Vec<f64>,
    chars: Vec<f64>,
    cancel: Vec<f64>,
    gap: Vec<f64>,
    missed: usize,
}

/// sd_hark's figures for its own messages, from its log.
#[derive(Default)]
struct OwnSamples {
    chars: Vec<f64>,
    speak: Vec<f64>,
    stop: Vec<f64>,
}

/// sd_hark's log, read as it grows: what each message added.
struct ModuleLog {
    path: PathBuf,
    read: usize,
}

impl ModuleLog {
    fn new_text(&mut self) -> String {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let new = text.get(self.read..).unwrap_or("").to_string();
        self.read = text.len();
        new
    }
}

pub fn run(a: &SpeechdArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.rounds >= 1, "--runs must be at least 1");
    let load_before = load();
    let server = Server::start(a)?;
    let rec = SinkRecorder::start(a.monitor)?;
    let mut client = Ssip::connect(&server.socket, "hark")?;
    let mut samples = [Samples::default(), Samples::default()];
    let mut own = OwnSamples::default();
    let mut log = ModuleLog {
        path: server.log_dir.join("hark.log"),
        read: 0,
    };
    // Per round and module: (speak, char median, cancel, gap) for the per-pair ratios.
    let mut per_round: Vec<[[Option<f64>; 4]; 2]> = Vec::new();
    if !a.json {
        eprintln!(
            "hark bench --speechd: {} rounds (and one warm-up), modules {MODULES:?}",
            a.rounds
        );
    }
    for round in 0..=a.rounds {
        let mut this = [[None; 4]; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for m in order {
            client.command(&format!("SET SELF OUTPUT_MODULE {}", MODULES[m]))?;
            let r = measure(&mut client, &rec, (m == 0).then_some(&mut log))?;
            if round == 0 {
                continue; // warm-up: each module's first messages
            }
            own.chars.extend(&r.own_chars);
            own.speak.extend(r.own_speak);
            own.stop.extend(r.own_stop);
            let s = &mut samples[m];
            s.missed += r.missed;
            s.speak.extend(r.speak);
            s.gap.extend(r.gap);
            s.cancel.extend(r.cancel);
            let med = |v: &[f64]| (!v.is_empty()).then(|| Stats::of(v.to_vec()).median_ms);
            this[m] = [r.speak, med(&r.chars), r.cancel, r.gap];
            s.chars.extend(r.chars);
        }
        if round > 0 {
            per_round.push(this);
            if !a.json {
                eprintln!("round {round}/{} done", a.rounds);
            }
        }
    }
    drop(client);
    let own = HarkOwn {
        char_to_callback: stats(&own.chars),
        speak_to_callback: stats(&own.speak),
        stop_to_faded: stats(&own.stop),
    };
    let figures = |s: &Samples| ModuleFigures {
        speak_to_sound: stats(&s.speak),
        char_to_sound: stats(&s.chars),
        cancel_to_silence: stats(&s.cancel),
        sentence_gap: stats(&s.gap),
        missed: s.missed,
        raw: RawSamples {
            speak: round_ms(&s.speak),
            chars: round_ms(&s.chars),
            cancel: round_ms(&s.cancel),
            gap: round_ms(&s.gap),
        },
    };
    let ratio = |k: usize| {
        let r: Vec<f64> = per_round
            .iter()
            .filter_map(|p| Some(p[0][k]? / p[1][k]?.max(1e-3)))
            .collect();
        stats(&r).map(|s| s.median_ms)
    };
    let [hark, espeak] = &samples;
    let report = Report {
        server: server.version.clone(),
        monitor: a.monitor.to_string(),
        rounds: a.rounds,
        hark_backend: a.backend.to_string(),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_after: load(),
        hark: figures(hark),
        espeak_ng: figures(espeak),
        ratio_median: Ratios {
            speak_to_sound: ratio(0),
            char_to_sound: ratio(1),
            cancel_to_silence: ratio(2),
            sentence_gap: ratio(3),
        },
        hark_module: own,
    };
    drop(server);
    if !a.json {
        print_table(&report);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// One module's figures of one round.
#[derive(Default)]
struct Round {
    speak: Option<f64>,
    chars: Vec<f64>,
    cancel: Option<f64>,
    gap: Option<f64>,
    missed: usize,
    /// sd_hark's own figures for these messages (none for espeak-ng).
    own_chars: Vec<f64>,
    own_speak: Option<f64>,
    own_stop: Option<f64>,
}

const BEGIN: u16 = 701;
const END: u16 = 702;
const CANCELED: u16 = 703;

fn measure(
    c: &mut Ssip,
    rec: &SinkRecorder,
    mut log: Option<&mut ModuleLog>,
) -> anyhow::Result<Round> {
    let mut r = Round::default();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for ch in CHARS {
        std::thread::sleep(QUIET);
        logged(&mut log);
        let (t, id) = c.char(ch)?;
        let ended = c.wait_event(id, &[END, CANCELED], Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(100));
        r.own_chars.extend(logged(&mut log).onsets);
        match (ended, sink::first_sound(&rec.millis(t), t)) {
            (Some(_), Some(s)) if s < t + Duration::from_secs(1) => r.chars.push(ms(s - t)),
            _ => r.missed += 1,
        }
    }
    std::thread::sleep(QUIET);
    logged(&mut log);
    let (t, id) = c.speak(TWO_SENTENCES)?;
    let end = c.wait_event(id, &[END, CANCELED], Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(100));
    r.own_speak = logged(&mut log).onsets.first().copied();
    let heard = rec.millis(t);
    match (end, sink::first_sound(&heard, t)) {
        (Some(e), Some(s)) => {
            r.speak = Some(ms(s - t));
            let last = e.at + Duration::from_millis(100);
            r.gap = sink::longest_silence(&heard, s, last).map(ms);
        }
        _ => r.missed += 1,
    }
    std::thread::sleep(QUIET);
    let (t, id) = c.speak(LONG)?;
    c.wait_event(id, &[BEGIN], Duration::from_secs(10));
    // Cancel while sound is heard (0.5 s in, at a moment the last 30 ms were all sound).
    std::thread::sleep(Duration::from_millis(500));
    let deadline = t + Duration::from_secs(8);
    while !rec.sounding(30) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let sounding = rec.sounding(30);
    let t_cancel = c.cancel()?;
    c.wait_event(id, &[CANCELED, END], Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(500));
    r.own_stop = logged(&mut log).stops.first().copied();
    let heard = rec.millis(t_cancel);
    match sink::last_sound(&heard, t_cancel, t_cancel + Duration::from_millis(500)) {
        _ if !sounding => r.missed += 1,
        Some(l) => r.cancel = Some(ms(l - t_cancel)),
        None => r.cancel = Some(0.0),
    }
    Ok(r)
}

fn round_ms(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| (x * 100.0).round() / 100.0).collect()
}

fn stats(v: &[f64]) -> Option<Stats> {
    (!v.is_empty()).then(|| Stats::of(v.to_vec()))
}

/// What sd_hark logged since the last call (nothing for espeak-ng).
fn logged(log: &mut Option<&mut ModuleLog>) -> Timing {
    log.as_deref_mut()
        .map(|l| timing(&l.new_text()))
        .unwrap_or_default()
}

/// sd_hark's `timing:` lines: onsets (ms from a message's last line to its first sample
/// at the callback) and stops (a stop to the last faded sample).
#[derive(Default)]
struct Timing {
    onsets: Vec<f64>,
    stops: Vec<f64>,
}

fn timing(log: &str) -> Timing {
    let mut t = Timing::default();
    for l in log.lines().filter(|l| l.contains("timing:")) {
        let field = |k: &str| l.split_whitespace().find_map(|w| w.strip_prefix(k));
        if let Some(o) = field("onset_ms=").and_then(|o| o.parse().ok()) {
            t.onsets.push(o);
        }
        if let Some(s) = field("stop_ms=").and_then(|s| s.parse().ok()) {
            t.stops.push(s);
        }
    }
    t
}

/// speech-dispatcher on a socket of its own, with Hark and espeak-ng as its modules.
struct Server {
    child: Child,
    socket: PathBuf,
    log_dir: PathBuf,
    version: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(a: &SpeechdArgs) -> anyhow::Result<Self> {
        let module = std::env::current_exe()
            .context("cannot find this program's path")?
            .with_file_name("sd_hark");
        anyhow::ensure!(
            module.is_file(),
            "sd_hark is not next to hark at {} (cargo build -p hark-speechd)",
            module.display()
        );
        let version = Command::new("speech-dispatcher")
            .arg("-v")
            .output()
            .context("speech-dispatcher is not installed (Debian: speech-dispatcher speech-dispatcher-espeak-ng)")?;
        let version = String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        let dir = tempfile::tempdir()?;
        let conf = dir.path().join("config/speech-dispatcher");
        std::fs::create_dir_all(conf.join("modules"))?;
        std::fs::write(
            conf.join("speechd.conf"),
            format!(
                "AddModule \"hark\" \"{}\" \"hark.conf\"\n\
                 AddModule \"espeak-ng\" \"sd_espeak-ng\" \"espeak-ng.conf\"\n\
                 DefaultModule hark\nLogLevel 3\n",
                module.display()
            ),
        )?;
        let mut hark_conf = format!(
            "HarkVoicesDir \"{}\"\nHarkBackend {}\n",
            crate::overrides().voices_dir.display(),
            a.backend
        );
        if let Some(v) = a.voice {
            hark_conf.push_str(&format!("HarkVoice \"{v}\"\n"));
        }
        std::fs::write(conf.join("modules/hark.conf"), hark_conf)?;
        let socket = dir.path().join("speechd.sock");
        let log_dir = dir.path().join("log");
        std::fs::create_dir_all(&log_dir)?;
        let child = Command::new("speech-dispatcher")
            .args(["-s", "-t", "0", "-l", "3", "-c", "unix_socket", "-S"])
            .arg(&socket)
            .arg("-L")
            .arg(&log_dir)
            .arg("-P")
            .arg(dir.path().join("speechd.pid"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            // sd_hark's timing lines (numbers only) into log/hark.log.
            .env("HARK_SPEECHD_LOG", "4")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start speech-dispatcher")?;
        let mut server = Server {
            child,
            socket,
            log_dir,
            version,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !server.socket.exists() {
            if let Ok(Some(st)) = server.child.try_wait() {
                anyhow::bail!("speech-dispatcher exited at start ({st})");
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "speech-dispatcher did not open its socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: a plain kill(2) of the server this benchmark started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn print_table(r: &Report) {
    let cell = |s: &Option<Stats>| {
        s.map_or("—".into(), |s| {
            format!("{:.1} / {:.1} ({})", s.median_ms, s.p99_ms, s.runs)
        })
    };
    let ratio = |x: Option<f64>| x.map_or("—".into(), |x| format!("{x:.2}"));
    println!(
        "{} · sink {} · {} rounds · sd_hark on {} · {} CPUs · load {} → {}",
        r.server, r.monitor, r.rounds, r.hark_backend, r.cpus, r.load_before, r.load_after
    );
    println!();
    println!(
        "| at the sink, ms (median / P99 (n)) | sd_hark | espeak-ng | hark / espeak-ng (median of rounds) |"
    );
    println!("|---|---|---|---|");
    let (h, e, q) = (&r.hark, &r.espeak_ng, &r.ratio_median);
    for (name, a, b, x) in [
        (
            "SPEAK → first sound",
            &h.speak_to_sound,
            &e.speak_to_sound,
            q.speak_to_sound,
        ),
        (
            "CHAR → first sound",
            &h.char_to_sound,
            &e.char_to_sound,
            q.char_to_sound,
        ),
        (
            "CANCEL → silence",
            &h.cancel_to_silence,
            &e.cancel_to_silence,
            q.cancel_to_silence,
        ),
        (
            "gap between sentences",
            &h.sentence_gap,
            &e.sentence_gap,
            q.sentence_gap,
        ),
    ] {
        println!("| {name} | {} | {} | {} |", cell(a), cell(b), ratio(x));
    }
    println!(
        "| missed (no sound / nothing to cancel) | {} | {} | |",
        h.missed, e.missed
    );
    println!();
    let o = &r.hark_module;
    println!(
        "sd_hark's own part (its log): CHAR → first sample at the callback {}; SPEAK → first sample {}; stop → last faded sample {}",
        cell(&o.char_to_callback),
        cell(&o.speak_to_callback),
        cell(&o.stop_to_faded)
    );
}
