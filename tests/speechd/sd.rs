//! Running sd_hark over pipes, as speech-dispatcher does.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// The module binary, built with the workspace (`cargo test --workspace` builds every
/// binary); `None` after the skip line.
pub fn sd_hark() -> Option<PathBuf> {
    let p = Path::new(HARK).with_file_name("sd_hark");
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipped: sd_hark is not built (cargo build -p hark-speechd)");
        None
    }
}

/// One test at a time: they time audio on a small machine, and the server is shared.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A voices folder with the real voice and a clip cache made for it, once per test binary.
pub struct Setup {
    pub voices: &'static Path,
    pub cache: PathBuf,
    pub module: PathBuf,
    _dir: tempfile::TempDir,
}

pub fn setup() -> Option<&'static Setup> {
    static SETUP: OnceLock<Option<Setup>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let module = sd_hark()?;
            let voices = testkit::installed_voices_dir(HARK)?;
            let dir = tempfile::tempdir().expect("tempdir");
            let cache = dir.path().join("cache");
            let conf = dir.path().join("build.conf");
            std::fs::write(&conf, format!("HarkCacheDir {}\n", cache.display())).unwrap();
            let t = Instant::now();
            let out = Command::new(&module)
                .arg("--build-cache")
                .arg(&conf)
                .env("HARK_VOICES_DIR", voices)
                .output()
                .expect("run sd_hark --build-cache");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("clip cache made in {:.1} s", t.elapsed().as_secs_f64());
            Some(Setup {
                voices,
                cache,
                module,
                _dir: dir,
            })
        })
        .as_ref()
}

/// A running module: lines it writes arrive with the time they were read.
pub struct Sd {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sd {
    /// Starts sd_hark on simulated audio with `extra` config lines and environment.
    pub fn start(s: &Setup, extra: &str, env: &[(&str, &str)]) -> Sd {
        Sd::start_with(s, &format!("HarkAudio simulated\n{extra}"), env)
    }

    /// Starts sd_hark with only `extra` and the cache and backend lines as its configuration.
    pub fn start_with(s: &Setup, extra: &str, env: &[(&str, &str)]) -> Sd {
        let dir = tempfile::tempdir().expect("tempdir");
        let conf = dir.path().join("hark.conf");
        std::fs::write(
            &conf,
            format!(
                "HarkCacheDir {}\nHarkBackend cpu\n{extra}",
                s.cache.display()
            ),
        )
        .unwrap();
        let log = dir.path().join("module.log");
        let mut child = Command::new(&s.module)
            .arg(&conf)
            .env("HARK_VOICES_DIR", s.voices)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start sd_hark");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Sd {
            child,
            stdin,
            lines,
            log,
            _dir: dir,
        }
    }

    /// Starts it and answers INIT; the module's INIT message.
    pub fn init(s: &Setup, extra: &str, env: &[(&str, &str)]) -> Sd {
        let mut sd = Sd::start(s, extra, env);
        sd.send("INIT\n");
        let (_, l) = sd.expect("299 ", Duration::from_secs(60));
        assert_eq!(l, "299 OK LOADED SUCCESSFULLY");
        sd
    }

    pub fn send(&mut self, text: &str) -> Instant {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(text.as_bytes()).expect("write to sd_hark");
        w.flush().unwrap();
        Instant::now()
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// The next line, if one comes within `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<(Instant, String)> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Lines up to and including the first that starts with `prefix`.
    pub fn until(&self, prefix: &str, timeout: Duration) -> Vec<(Instant, String)> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(l) = self.next(left) else {
                panic!("no line starting {prefix:?} within {timeout:?}; got {seen:?}");
            };
            let done = l.1.starts_with(prefix);
            seen.push(l);
            if done {
                return seen;
            }
        }
    }

    pub fn expect(&self, prefix: &str, timeout: Duration) -> (Instant, String) {
        self.until(prefix, timeout).pop().unwrap()
    }

    /// Sends the settings speech-dispatcher sends before every message.
    pub fn set(&mut self, extra: &str) {
        self.send(&format!(
            "SET\npitch=0\npitch_range=0\nrate=0\nvolume=100\npunctuation_mode=none\n\
             spelling_mode=off\ncap_let_recogn=none\nvoice=male1\nlanguage=en\n\
             synthesis_voice=NULL\n{extra}.\n"
        ));
        self.expect("203 OK SETTINGS", Duration::from_secs(5));
    }

    /// A message (`SPEAK`, `CHAR`, `KEY`) with its data (dots escaped); when it was sent
    /// in full and the reply.
    pub fn message(&mut self, cmd: &str, data: &str) -> (Instant, String) {
        self.send(&format!("{cmd}\n"));
        self.expect("202 ", Duration::from_secs(5));
        let t = self.send(&hark_speechd::protocol::data_block(data, "\n"));
        // Events (7xx) of the message before may come first.
        loop {
            let (_, reply) = self.next(Duration::from_secs(10)).expect("a reply");
            if !reply.starts_with('7') {
                return (t, reply);
            }
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Sd {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `timing:` lines of a module log at debug level: (backend, onset ms) per utterance,
/// and the stop latencies.
pub fn timings(log: &str) -> (Vec<(String, f64)>, Vec<f64>) {
    let mut onsets = Vec::new();
    let mut stops = Vec::new();
    for l in log.lines().filter(|l| l.contains("timing:")) {
        let field = |k: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_string)
        };
        if let (Some(o), Some(b)) = (field("onset_ms="), field("backend="))
            && let Ok(o) = o.parse()
        {
            onsets.push((b, o));
        }
        if let Some(s) = field("stop_ms=").and_then(|s| s.parse().ok()) {
            stops.push(s);
        }
    }
    (onsets, stops)
}

/// The onsets of the clips a module log reports (CHAR, KEY and cached names), ms.
pub fn clip_onsets(log: &str) -> Vec<f64> {
    let (onsets, _) = timings(log);
    onsets
        .into_iter()
        .filter(|(b, _)| b == "clip")
        .map(|o| o.1)
        .collect()
}

/// CHAR messages in a module log at debug level: how many came, and how many of them a STOP
/// followed within `ms` (too soon for any sound; a late server sends CHAR and the next
/// key's STOP together).
pub fn chars_received(log: &str, ms: f64) -> (usize, usize) {
    // `2026-12-02T01:11:22.102152Z DEBUG …`: the time of day in seconds.
    let secs = |l: &str| -> Option<f64> {
        let t = l
            .split_whitespace()
            .next()?
            .split('T')
            .nth(1)?
            .trim_end_matches('Z');
        let mut it = t.split(':');
        let (h, m, s): (f64, f64, f64) = (
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
        );
        Some(h * 3600.0 + m * 60.0 + s)
    };
    let (mut received, mut cut) = (0, 0);
    let mut pending: Option<f64> = None;
    for l in log.lines() {
        if l.contains("message: Char") {
            received += 1;
            pending = secs(l);
        } else if l.ends_with("DEBUG stop") {
            if let (Some(at), Some(now)) = (pending.take(), secs(l))
                && (now - at) * 1e3 < ms
            {
                cut += 1;
            }
        } else if l.contains("message: ") {
            pending = None;
        }
    }
    (received, cut)
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
