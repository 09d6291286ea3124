//! `hark speak` in a terminal (a pseudo-terminal from Python's `pty`, which makes it the
//! child's controlling terminal): the key line is shown, `n` moves on, space pauses and
//! resumes, `q` stops at once with exit status 0, and the terminal's modes are as before.

use std::process::Command;
use testkit::audio::audio_tests_enabled;
use testkit::installed_voices_dir;

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// Runs hark in a pty, sends `n`, space twice and `q` a second apart once it speaks, and
/// prints JSON: the exit status, the seconds from `q` to exit, what the terminal showed, and
/// whether ICANON and ECHO are set again after.
const DRIVER: &str = r#"
import json, os, pty, select, sys, termios, time
hark, text = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(hark, [hark, "speak", "--backend", "cpu", text])
before = termios.tcgetattr(fd)[3]
seen, t_q = b"", None
def read_for(s):
    global seen
    end = time.time() + s
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                return
end = time.time() + 60
while b"keys:" not in seen and time.time() < end:
    read_for(0.1)
read_for(1.5)
for k in (b"n", b" ", b" "):
    os.write(fd, k)
    read_for(1.0)
os.write(fd, b"q")
t_q = time.time()
status = None
while time.time() < t_q + 20:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(st)
        break
    read_for(0.05)
took = time.time() - t_q
modes = termios.tcgetattr(fd)[3] if status is not None else 0
restored = bool(modes & termios.ICANON) and bool(modes & termios.ECHO)
if status is None:
    os.kill(pid, 9)
print(json.dumps({"status": status, "seconds_after_q": took, "shown": seen.decode("utf-8", "replace"),
                  "restored": restored, "canonical_before": bool(before & termios.ICANON)}))
"#;

#[test]
fn keys_in_a_terminal_move_pause_and_stop_and_the_terminal_is_restored() {
    if !audio_tests_enabled() {
        return;
    }
    let Some(voices) = installed_voices_dir(HARK) else {
        return;
    };
    // It plays into the session's sink: not while another test records it.
    let _sink = crate::sink_lock();
    // About 40 s of speech: q must end it long before.
    let text = "This is sentence number one of a long text. ".repeat(16);
    let o = Command::new("python3")
        .args(["-c", DRIVER, HARK, &text])
        .env("HARK_VOICES_DIR", voices)
        .output()
        .expect("run python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the driver's JSON");
    println!("{v}");
    let shown = v["shown"].as_str().unwrap_or_default();
    assert!(shown.contains("keys: ←/p previous sentence"), "{shown}");
    assert_eq!(v["status"], 0, "q is not an error: {shown}");
    assert!(v["seconds_after_q"].as_f64().unwrap_or(99.0) < 2.0, "{v}");
    assert_eq!(v["canonical_before"], true);
    assert_eq!(v["restored"], true, "the terminal was left in key mode");
}
