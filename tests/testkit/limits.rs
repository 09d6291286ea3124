//! Running a child under a memory limit and reading back its peak memory.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};

/// How a limited run ended.
pub struct Limited {
    pub status: ExitStatus,
    pub stderr: String,
    /// The child's peak resident set, in kB (`ru_maxrss`).
    pub max_rss_kb: u64,
}

/// Runs `cmd` with `stdin` fed to it and its address space limited to `limit_mb`, so that a
/// runaway allocation ends the child (an error or a signal) rather than the machine, and
/// returns its status and peak resident memory.
// The child is reaped by `wait4` (which `Child::wait` cannot do: it gives no rusage).
#[allow(clippy::zombie_processes)]
pub fn run_limited(mut cmd: Command, stdin: &[u8], limit_mb: u64) -> Limited {
    let limit = limit_mb << 20;
    // SAFETY: `setrlimit` is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-value; the pid is our own, unwaited child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: valid pointers; waits for this child only.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    feeder.join().ok();
    Limited {
        status: ExitStatus::from_raw(status),
        stderr: reader.join().unwrap_or_default(),
        max_rss_kb: usage.ru_maxrss as u64,
    }
}

/// Whether this process runs as root (which file permissions do not stop).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
