//! The test's environment: namespaces and child processes owned by a guard that removes
//! them on drop (a failed assertion unwinds through it too), sockets opened inside a
//! namespace, router processes, metrics scrapes and pcap files read by hand.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sched::{CloneFlags, setns};

/// Why the test cannot run here, if it cannot: not root, no TUN, no `ip`, or one of the
/// kernel's tools the tests drive (`ping`, `curl`) missing.
pub(crate) fn unsupported() -> Option<String> {
    if let Some(why) = netio::link::netns_unsupported() {
        return Some(why.to_string());
    }
    for (tool, arg) in [("ping", "-V"), ("curl", "--version")] {
        let ok = Command::new(tool)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Some(format!("no `{tool}` command"));
        }
    }
    None
}

/// Holds the machine for one namespace test at a time: the tests of this crate run on
/// threads of one process, and a bulk transfer beside the three-router test's timed
/// failover and flood would make both flaky on a small machine.
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it leaves nothing behind (its Env cleaned up).
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `cmd` to completion and panics with its output if it fails.
pub(crate) fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `f` on a thread that has entered namespace `ns`: sockets it opens live there (and
/// stay there when used from other threads). A panic in `f` is re-raised here.
pub(crate) fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    let h = std::thread::spawn(move || {
        let fd = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
        setns(&fd, CloneFlags::CLONE_NEWNET).unwrap_or_else(|e| panic!("setns {path}: {e}"));
        f()
    });
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Polls `f` every 20 ms until it returns `Some` or `limit` passes.
pub(crate) fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A router process: its namespace, metrics address (inside that namespace) and log.
pub(crate) struct Router {
    pub(crate) name: String,
    pub(crate) ns: String,
    pub(crate) metrics: String,
    pub(crate) log: PathBuf,
    pub(crate) pid: u32,
}

impl Router {
    /// One scrape of `/metrics`, made from inside the router's namespace.
    pub(crate) fn scrape(&self) -> String {
        let addr = self.metrics.clone();
        let log = self.log.clone();
        in_ns(&self.ns, move || {
            let mut s = TcpStream::connect(&addr)
                .unwrap_or_else(|e| panic!("scrape {addr}: {e} (log: {})", log.display()));
            s.set_read_timeout(Some(Duration::from_secs(5))).ok();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap_or_else(|e| panic!("scrape {addr}: {e}"));
            let mut body = String::new();
            s.read_to_string(&mut body)
                .unwrap_or_else(|e| panic!("scrape {addr}: {e}"));
            assert!(body.starts_with("HTTP/1.1 200"), "{body}");
            body
        })
    }

    /// The value of the sample named exactly `sample` (name and labels) in one scrape.
    pub(crate) fn metric(&self, sample: &str) -> u64 {
        value(&self.scrape(), sample).unwrap_or(0)
    }
}

/// The value of the sample `sample` (name with labels, as printed) in a scrape.
pub(crate) fn value(body: &str, sample: &str) -> Option<u64> {
    body.lines().find_map(|l| {
        let v = l.strip_prefix(sample)?.strip_prefix(' ')?;
        v.trim().parse::<f64>().ok().map(|f| f as u64)
    })
}

/// Every `waist_frames_dropped_total{reason=…}` of a scrape, summed.
pub(crate) fn dropped(body: &str) -> u64 {
    body.lines()
        .filter(|l| l.starts_with("waist_frames_dropped_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|f| f as u64)
        .sum()
}

/// Owns the namespaces and processes of one test run; dropping it kills every child and
/// deletes every namespace, whether the test passed or panicked.
pub(crate) struct Env {
    pub(crate) dir: PathBuf,
    namespaces: Vec<String>,
    children: Vec<(String, Child)>,
}

impl Env {
    /// A fresh environment with a scratch directory named after the test's pid and `tag`
    /// (tests of one process run side by side).
    pub(crate) fn new(tag: &str) -> Env {
        let dir = std::env::temp_dir().join(format!("waist-netns-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Env {
            dir,
            namespaces: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Creates namespace `name` (owned from now on) with its loopback up.
    pub(crate) fn netns(&mut self, name: &str) {
        run(Command::new("ip").args(["netns", "add", name]));
        self.namespaces.push(name.to_string());
        self.ip(name, &["link", "set", "lo", "up"]);
    }

    /// `ip -n NS ARGS…`.
    pub(crate) fn ip(&self, ns: &str, args: &[&str]) -> Output {
        run(Command::new("ip").args(["-n", ns]).args(args))
    }

    /// A veth pair between two namespaces, each end addressed and up.
    pub(crate) fn veth(&self, a: (&str, &str, &str), b: (&str, &str, &str)) {
        let ((ns_a, dev_a, _), (ns_b, dev_b, _)) = (a, b);
        run(Command::new("ip").args([
            "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns",
            ns_b,
        ]));
        for (ns, dev, addr) in [a, b] {
            self.ip(ns, &["addr", "add", addr, "dev", dev]);
            self.ip(ns, &["link", "set", dev, "up"]);
        }
    }

    /// `ip netns exec NS PROGRAM ARGS…` as a command to finish and spawn.
    pub(crate) fn exec(ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }

    /// Spawns `cmd` as a child owned by the environment (killed on drop); returns its pid.
    pub(crate) fn spawn(&mut self, tag: &str, cmd: &mut Command) -> u32 {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
        let pid = child.id();
        self.children.push((tag.to_string(), child));
        pid
    }

    /// Starts the router `name` in `ns` from `config` (written to the scratch directory),
    /// capturing into `pcap` if given; returns once its metrics endpoint is known.
    pub(crate) fn router(
        &mut self,
        name: &str,
        ns: &str,
        config: &str,
        pcap: Option<&Path>,
    ) -> Router {
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let log = self.dir.join(format!("{name}.{}.log", self.children.len()));
        let mut cmd = Env::exec(ns, env!("CARGO_BIN_EXE_waist-router"));
        cmd.arg("--config").arg(&path);
        if let Some(p) = pcap {
            cmd.arg("--pcap").arg(p);
        }
        cmd.args(["--metrics", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display())));
        let pid = self.spawn(name, &mut cmd);
        let out = self
            .children
            .last_mut()
            .and_then(|(_, c)| c.stdout.take())
            .unwrap_or_else(|| panic!("{name}: no stdout"));
        // The first line names the endpoint; a router that fails to start closes stdout.
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let metrics = line
            .trim()
            .strip_prefix("metrics http://")
            .and_then(|s| s.strip_suffix("/metrics"))
            .unwrap_or_else(|| {
                panic!(
                    "{name} did not start: {:?}\n{}",
                    line,
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_string();
        Router {
            name: name.to_string(),
            ns: ns.to_string(),
            metrics,
            log,
            pid,
        }
    }

    /// Spawns `cmd` with its output piped, owned like [`spawn`](Self::spawn); read it with
    /// [`finish`](Self::finish).
    pub(crate) fn spawn_output(&mut self, tag: &str, cmd: &mut Command) -> u32 {
        self.spawn(tag, cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
    }

    /// Waits (at most `limit`, then kills it) for the child `pid` and returns its output.
    pub(crate) fn finish(&mut self, pid: u32, limit: Duration) -> Output {
        let Some(i) = self.children.iter().position(|(_, c)| c.id() == pid) else {
            panic!("no child {pid}");
        };
        let (_, mut child) = self.children.remove(i);
        if poll(limit, || child.try_wait().ok().flatten()).is_none() {
            let _ = child.kill();
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("child {pid}: {e}"))
    }

    /// Whether the child with `pid` is still running.
    pub(crate) fn alive(&mut self, pid: u32) -> bool {
        self.children
            .iter_mut()
            .find(|(_, c)| c.id() == pid)
            .is_some_and(|(_, c)| matches!(c.try_wait(), Ok(None)))
    }

    /// Sends SIGTERM to the child `pid` and waits (at most `limit`) for it to exit; returns
    /// whether it exited successfully.
    pub(crate) fn terminate(&mut self, pid: u32, limit: Duration) -> bool {
        run(Command::new("kill").args(["-TERM", &pid.to_string()]));
        let Some(i) = self.children.iter().position(|(_, c)| c.id() == pid) else {
            panic!("no child {pid}");
        };
        let (_, mut child) = self.children.remove(i);
        let status = poll(limit, || child.try_wait().ok().flatten());
        match status {
            Some(s) => s.success(),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                false
            }
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("netns test: logs kept in {}", self.dir.display());
        }
    }
}

/// The records of a classic pcap file, checked: the global header (magic, version 2.4,
/// `LINKTYPE_RAW`), and every record's lengths consistent (captured ≤ original ≤ 65535,
/// captured ≤ snaplen, the bytes present, nothing trailing). Returns each record's bytes.
pub(crate) fn pcap_records(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let u32_at = |at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    assert_eq!(u32_at(0), Some(0xa1b2_c3d4), "{}: magic", path.display());
    assert_eq!(
        (b.get(4..6), b.get(6..8)),
        (Some(&[2u8, 0][..]), Some(&[4u8, 0][..])),
        "{}: version 2.4",
        path.display()
    );
    let snaplen = u32_at(16).unwrap_or(0) as usize;
    assert_eq!(u32_at(20), Some(101), "{}: LINKTYPE_RAW", path.display());
    let mut at = 24;
    let mut out = Vec::new();
    while at < b.len() {
        let (Some(usec), Some(incl), Some(orig)) =
            (u32_at(at + 4), u32_at(at + 8), u32_at(at + 12))
        else {
            panic!("{}: truncated record header at {at}", path.display());
        };
        let (incl, orig) = (incl as usize, orig as usize);
        assert!(usec < 1_000_000, "{}: usec {usec} at {at}", path.display());
        assert!(
            incl <= orig && incl <= snaplen && orig <= 65_535,
            "{}: record at {at}: incl {incl} orig {orig} snaplen {snaplen}",
            path.display()
        );
        let data = b
            .get(at + 16..at + 16 + incl)
            .unwrap_or_else(|| panic!("{}: record at {at} runs past the end", path.display()));
        out.push(data.to_vec());
        at += 16 + incl;
    }
    assert_eq!(at, b.len(), "{}: trailing bytes", path.display());
    out
}
