//! A private Docker daemon for one test run, and everything the run makes, removed when
//! the guard drops (on failure too).
//!
//! The daemon runs with `--iptables=false --bridge=none`: Docker's default rules set the
//! FORWARD chain to drop, which would break every other namespace test on the machine
//! (and `--ip-forward=false`: the host's forwarding sysctl is left as it is).
//! Its data, exec root, socket and pid file live in `/tmp/waist-docker-PID/`, its
//! containerd namespaces are `waist-PID` and `waist-PID-plugins`, and the CLI reaches it
//! through `DOCKER_HOST`, so nothing global is touched and a system Docker keeps running
//! untouched. If a system containerd runs, dockerd uses it (under those namespaces, which
//! are removed at the end) instead of starting its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The private daemon and what the test made with it.
pub(crate) struct Docker {
    /// `/tmp/waist-docker-PID`.
    pub(crate) dir: PathBuf,
    /// `unix:///tmp/waist-docker-PID/sock`.
    pub(crate) host: String,
    daemon: Option<Child>,
    /// Containers made (names).
    pub(crate) containers: Vec<String>,
    /// Images tagged (removed before the daemon stops).
    pub(crate) images: Vec<String>,
    /// veth ends made in the root namespace (deleted if still there).
    pub(crate) veths: Vec<String>,
}

/// Whether the test can run here: `Ok(())`, or why it skips.
pub(crate) fn preflight() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    for tool in ["dockerd", "docker", "ip", "nsenter"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
        if !found {
            return Err(format!("no {tool} in PATH"));
        }
    }
    Ok(())
}

impl Docker {
    /// Starts the daemon (cleaning up what an earlier run with this pid left) and waits
    /// until it answers.
    pub(crate) fn start() -> Docker {
        let pid = std::process::id();
        let dir = PathBuf::from(format!("/tmp/waist-docker-{pid}"));
        remove_leftovers(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("dockerd.log")).unwrap();
        let sock = dir.join("sock");
        let host = format!("unix://{}", sock.display());
        let daemon = Command::new("dockerd")
            .args(["--iptables=false", "--ip-masq=false", "--ip-forward=false"])
            .arg("--bridge=none")
            .arg("--data-root")
            .arg(dir.join("data"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("--pidfile")
            .arg(dir.join("dockerd.pid"))
            .args(["--containerd-namespace", &format!("waist-{pid}")])
            .args([
                "--containerd-plugins-namespace",
                &format!("waist-{pid}-plugins"),
            ])
            .args(["-H", &host])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting dockerd");
        let mut docker = Docker {
            dir,
            host,
            daemon: Some(daemon),
            containers: Vec::new(),
            images: Vec::new(),
            veths: Vec::new(),
        };
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let up = docker.cmd(&["version"]).output().unwrap();
            if up.status.success() {
                break;
            }
            if let Some(status) = docker.daemon.as_mut().unwrap().try_wait().unwrap() {
                panic!("dockerd exited ({status}):\n{}", docker.log_tail());
            }
            assert!(
                Instant::now() < end,
                "dockerd did not answer within 60 s:\n{}",
                docker.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        docker
    }

    /// A `docker` command for this daemon.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("docker");
        cmd.env("DOCKER_HOST", &self.host).args(args);
        cmd
    }

    /// Runs `docker ARGS`; panics with its stderr if it fails.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The last lines of the daemon's log.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for c in &self.containers {
                if let Ok(out) = self.cmd(&["logs", c]).output() {
                    eprintln!(
                        "--- docker logs {c}:\n{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
            eprintln!("--- dockerd log (tail):\n{}", self.log_tail());
        }
        for c in &self.containers {
            let _ = self.cmd(&["rm", "-f", c]).output();
        }
        for i in &self.images {
            let _ = self.cmd(&["rmi", "-f", i]).output();
        }
        for v in &self.veths {
            let _ = Command::new("ip")
                .args(["link", "del", v])
                .stderr(Stdio::null())
                .status();
        }
        if let Some(mut daemon) = self.daemon.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &daemon.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(20);
            while Instant::now() < end && matches!(daemon.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
        remove_leftovers(&self.dir);
        // A system containerd (which dockerd uses when it runs) keeps our namespaces,
        // empty now; without one this fails quietly.
        let pid = std::process::id();
        for ns in [format!("waist-{pid}"), format!("waist-{pid}-plugins")] {
            let _ = Command::new("ctr")
                .args(["namespaces", "rm", &ns])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Kills every process whose command line names `dir` (this run's containerd and shims,
/// left by a daemon that did not stop cleanly), unmounts what is mounted under it, and
/// removes it.
fn remove_leftovers(dir: &Path) {
    // With the slash: /tmp/waist-docker-12/ is not a prefix of another run's directory.
    let needle = format!("{}/", dir.display());
    let me = std::process::id();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if pid != me && cmdline.contains(&needle) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut under: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|m| m.starts_with(&needle) || Path::new(m) == dir)
        .collect();
    // Deepest first.
    under.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for m in under {
        let _ = Command::new("umount").args(["-l", m]).status();
    }
    let _ = std::fs::remove_dir_all(dir);
}
