//! A daemon run as a child process, for the daemons' tests and launchers: killed when
//! dropped ([`Daemon`]), its log lines as they come ([`Daemon::log_lines`],
//! [`wait_for`]), signals by name ([`Daemon::signal`]), and a run to its exit with its
//! stderr ([`run_to_exit`]: what `--check` and a refused start print).
//!
//! ```no_run
//! use std::process::{Command, Stdio};
//! use std::time::Duration;
//! use netio::process::{Daemon, wait_for};
//!
//! let child = Command::new("waist-router")
//!     .args(["--config", "r1.toml"])
//!     .stderr(Stdio::piped())
//!     .spawn()?;
//! let mut router = Daemon::new(child);
//! let log = router.log_lines("r1");
//! wait_for(&log, "running", Duration::from_secs(20));
//! router.signal("-HUP");
//! wait_for(&log, "reloaded", Duration::from_secs(20));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{BufRead, BufReader};
use std::ops::{Deref, DerefMut};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process that is killed (and reaped) when dropped, so a failing test leaves no
/// daemon behind.
#[derive(Debug)]
pub struct Daemon(Child);

impl Daemon {
    /// Takes charge of `child`.
    pub fn new(child: Child) -> Daemon {
        Daemon(child)
    }

    /// The child's stderr, line by line as it comes, each line also echoed to this
    /// process's stderr prefixed with `tag` (so a failing test shows the log). Call once;
    /// panics if stderr was not piped or was taken already.
    pub fn log_lines(&mut self, tag: &'static str) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel();
        #[allow(clippy::expect_used)] // a test's set-up mistake, not input
        let err = self.0.stderr.take().expect("the child's stderr is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{tag}: {line}");
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        rx
    }

    /// Sends signal `sig` (as kill(1) names it: `-HUP`, `-TERM`) to the child; panics if
    /// kill(1) fails.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {} failed", self.0.id());
    }
}

impl Deref for Daemon {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Daemon {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits up to `within` for a line of `log` containing `what`; returns it. Panics if none
/// came (the log ended or the time passed).
pub fn wait_for(log: &mpsc::Receiver<String>, what: &str, within: Duration) -> String {
    let end = Instant::now() + within;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match log.recv_timeout(left) {
            Ok(line) if line.contains(what) => return line,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no log line with `{what}` within {within:?}");
}

/// Runs `cmd` (stdout discarded, stderr kept, `RUST_LOG=off`) until it exits: whether it
/// succeeded, and its stderr. A process still running after `limit` is killed and reported
/// as `(true, "still running: …")`, which is what a start that refuses nothing looks like.
///
/// # Errors
///
/// The process cannot be started or waited for.
pub fn run_to_exit(mut cmd: Command, limit: Duration) -> std::io::Result<(bool, String)> {
    let mut child = cmd
        .env("RUST_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            let out = child.wait_with_output()?;
            return Ok((
                status.success(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        if Instant::now() > deadline {
            child.kill()?;
            child.wait()?;
            return Ok((true, "still running: the start did not refuse it".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_reports_its_status_and_stderr() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo refused >&2; exit 3"]);
        let (ok, err) = run_to_exit(cmd, Duration::from_secs(10)).unwrap();
        assert_eq!((ok, err.as_str()), (false, "refused\n"));
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let (ok, err) = run_to_exit(cmd, Duration::from_millis(100)).unwrap();
        assert!(ok && err.starts_with("still running"), "{err}");
    }

    #[test]
    fn a_daemon_is_killed_when_dropped_and_its_lines_arrive() {
        let child = Command::new("sh")
            .args(["-c", "echo one >&2; echo two >&2; sleep 30"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut d = Daemon::new(child);
        let pid = d.id();
        let log = d.log_lines("sh");
        assert_eq!(wait_for(&log, "tw", Duration::from_secs(10)), "two");
        drop(d);
        let alive = Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!alive.success(), "pid {pid} still runs");
    }
}
