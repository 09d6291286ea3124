//! The audio device disappearing under the engine, with real audio: `hark follow` plays into
//! a private PipeWire session (its own runtime folder and null sink), whose server is killed
//! in the middle of an utterance and started again later. The engine must report the loss,
//! report that it cannot reopen the device, stay alive while there is none, and play again
//! once the device is back. Needs PipeWire (HARK_AUDIO_TESTS=1, like the other audio tests).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use testkit::audio::{
    DETERMINISTIC, INTEGRITY_BUFFER_MS, REC_RATE, Recorder, audio_tests_enabled, best_alignment,
};
use testkit::audio::{cli_reference, piecewise_match, rms, windows_match};
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// A sound server of our own: D-Bus, PipeWire, WirePlumber and pipewire-pulse with a null
/// sink `loss_sink` as the default output, in a temporary runtime folder.
struct Session {
    dir: tempfile::TempDir,
    dbus: Child,
    server: Vec<Child>,
}

impl Session {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let bus = dir.path().join("bus");
        let dbus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile"])
            .arg(format!("--address=unix:path={}", bus.display()))
            .stdout(Stdio::null())
            .spawn()
            .expect("dbus-daemon");
        for _ in 0..50 {
            if bus.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut s = Self {
            dir,
            dbus,
            server: Vec::new(),
        };
        s.start_server();
        s
    }

    fn env(&self) -> [(&'static str, OsString); 2] {
        let bus = format!("unix:path={}", self.dir.path().join("bus").display());
        [
            ("XDG_RUNTIME_DIR", self.dir.path().as_os_str().to_owned()),
            ("DBUS_SESSION_BUS_ADDRESS", bus.into()),
        ]
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.envs(self.env());
        // Never reach the sound server of the session the tests run in.
        c.env_remove("PULSE_SERVER").env_remove("PIPEWIRE_REMOTE");
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    }

    /// PipeWire, WirePlumber, pipewire-pulse and the null sink as the default output.
    fn start_server(&mut self) {
        for program in ["pipewire", "wireplumber", "pipewire-pulse"] {
            self.server
                .push(self.command(program).spawn().expect(program));
            std::thread::sleep(Duration::from_millis(200));
        }
        let pactl = |args: &[&str]| {
            self.command("pactl")
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pactl(&["info"]) {
            assert!(
                Instant::now() < deadline,
                "the private sound server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(pactl(&[
            "load-module",
            "module-null-sink",
            "sink_name=loss_sink",
            "rate=48000",
            "channels=2",
        ]));
        while !pactl(&["set-default-sink", "loss_sink"]) {
            assert!(Instant::now() < deadline, "no default sink");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The device disappears: the whole server goes away.
    fn kill_server(&mut self) {
        for mut c in self.server.drain(..).rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.kill_server();
        let _ = self.dbus.kill();
        let _ = self.dbus.wait();
    }
}

/// `hark follow --events` in the session: lines in, event lines out (on a channel).
struct Follow {
    child: Child,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Follow {
    fn start(session: &Session, voices: &Path) -> Self {
        let mut child = session
            .command(HARK)
            .args(["follow", "--events"])
            .args(DETERMINISTIC)
            .env("HARK_VOICES_DIR", voices)
            // The line after the device returns is checked sample for sample at the sink:
            // the integrity buffer, as in the other such tests. At the 10 ms default the
            // private server underran and dropped cycles on a 2-core runner (CI of ea2bf99,
            // and 5 of 7 local runs; 40 ms: 3 of 3 clean, no underrun).
            .env("HARK_AUDIO_BUFFER_MS", INTEGRITY_BUFFER_MS.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("hark follow");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            events,
            seen: Vec::new(),
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write line");
        stdin.flush().expect("flush");
    }

    /// Waits for an event line containing every one of `parts`.
    fn expect(&mut self, parts: &[&str], within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if parts.iter().all(|p| line.contains(p)) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no event with {parts:?} within {within:?}; events so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn losing_the_device_is_reported_and_playback_resumes_when_it_returns() {
    if !audio_tests_enabled() {
        return;
    }
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    // Its own sound server, but not alone on the machine: see `sink_lock`.
    let _sink = crate::sink_lock();
    let mut session = Session::start();
    let mut follow = Follow::start(&session, voices);
    follow.say(
        "This sentence is long enough to still be playing when the sound server goes away, \
         and it keeps going with more and more words so that nothing ends too early.",
    );
    follow.expect(&["\"started\"", "\"id\":1"], Duration::from_secs(120));
    std::thread::sleep(Duration::from_millis(800));
    session.kill_server();
    // The loss is reported and the utterance in flight is given up…
    follow.expect(
        &["\"error\"", "audio output failed"],
        Duration::from_secs(15),
    );
    follow.expect(
        &["\"finished\"", "\"id\":1", "\"stopped\":true"],
        Duration::from_secs(5),
    );
    // …the device cannot be opened again while the server is down, and that is said too…
    follow.expect(&["\"error\"", "no audio device"], Duration::from_secs(15));
    // …while the engine stays alive: text given now is still taken and finished.
    follow.say("Nobody can hear this line.");
    follow.expect(&["\"finished\"", "\"id\":2"], Duration::from_secs(60));

    // The device comes back: the next utterance is heard, whole. Checked like the other
    // recordings (aligned, then window by window), and said again up to twice: on a loaded
    // machine the restarted server may slip a period without Hark sending anything different.
    session.start_server();
    let env = session.env();
    let env = env.each_ref().map(|(k, v)| (*k, v.as_os_str()));
    let back = "The device is back and this is heard again.";
    let reference = cli_reference(HARK, voices, back);
    let mut failures = Vec::new();
    for (attempt, id) in (3..6).enumerate() {
        let rec = Recorder::start_on(&env, "loss_sink.monitor");
        follow.say(back);
        follow.expect(
            &["\"finished\"", &format!("\"id\":{id}"), "\"stopped\":false"],
            Duration::from_secs(60),
        );
        let recording = rec.stop();
        assert!(
            rms(&recording) > 0.005,
            "silence after the device came back"
        );
        let (lag, corr) = best_alignment(&reference, &recording);
        let (windows, _) = piecewise_match(&reference, &recording, lag);
        let mean = windows.iter().sum::<f64>() / windows.len().max(1) as f64;
        let report = format!(
            "attempt {}: start correlation {corr:.3}, window mean {mean:.3} over {:.1} s; \
             windows {windows:.2?}",
            attempt + 1,
            recording.len() as f64 / REC_RATE as f64
        );
        eprintln!("after the device came back: {report}");
        if windows_match(&windows) {
            return;
        }
        failures.push(report);
    }
    panic!(
        "the line after the device came back does not match Hark's WAV:\n{}",
        failures.join("\n")
    );
}
