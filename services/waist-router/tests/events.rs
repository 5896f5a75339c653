//! The log as an operator reads it: two routers running distance vector over UDP on
//! loopback log the routes they learn at info; when one dies, the other logs its link
//! down, its neighbour down and the route withdrawn once each (not once per hold-down),
//! and when it is back, the link up and the route learned again;
//! `--log-format json` writes one JSON object a line; the final counters are one line.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_waist-router");

/// A free loopback UDP address, never the same one twice in this process.
fn free() -> SocketAddr {
    netio::ports::udp([127, 0, 0, 1].into()).unwrap()
}

fn config(
    name: &str,
    addr: &str,
    prefix: &str,
    link: &str,
    local: SocketAddr,
    peer: SocketAddr,
) -> String {
    format!(
        "[node]\nname = \"{name}\"\naddresses = [\"{addr}\"]\n\n\
         [dv]\ntriggered_ms = 20\nupdate_ms = 200\ntimeout_ms = 5000\noriginate = [\"{prefix}\"]\n\n\
         [[link]]\nname = \"{link}\"\nkind = \"udp\"\nlocal = \"{local}\"\npeer = \"{peer}\"\n\
         cost = 1\nholddown_ms = 100\n"
    )
}

/// A router process and the lines of its stderr, gathered as they come.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl Proc {
    fn start(dir: &std::path::Path, name: &str, text: &str, extra: &[&str]) -> Proc {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&path)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Proc {
            child,
            lines,
            reader: Some(reader),
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (up to 20 s, a loaded machine is slow) for a line containing `what`.
    fn wait_for(&self, what: &str) {
        let start = Instant::now();
        while !self.lines().iter().any(|l| l.contains(what)) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no line with {what:?} in:\n{}",
                self.lines().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, wait for a clean exit; every line it wrote.
    fn stop(mut self) -> Vec<String> {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        self.lines()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn count(lines: &[String], what: &str) -> usize {
    lines.iter().filter(|l| l.contains(what)).count()
}

#[test]
fn routes_and_a_dead_neighbour_are_logged_once_and_json_parses() {
    let dir = std::env::temp_dir().join(format!("waist-router-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a1, a2) = (free(), free());
    let r1 = config("r1", "10.0.0.1", "10.1.0.0/16", "b", a1, a2);
    let r2 = config("r2", "10.0.0.2", "10.2.0.0/16", "a", a2, a1);
    let p1 = Proc::start(&dir, "r1", &r1, &[]);
    let p2 = Proc::start(&dir, "r2", &r2, &["--log-format", "json"]);

    // Converged: each logs the other's prefix learned, at info, BIRD-style.
    p1.wait_for("route 10.2.0.0/16 learned via b (10.0.0.2), cost 1");
    p2.wait_for("route 10.1.0.0/16 learned via a (10.0.0.1), cost 1");
    p1.wait_for("neighbour 10.0.0.2 up on b");

    // r2's log is JSON: every line an object with a level and fields; the routing
    // events carry their structured fields.
    let json: Vec<serde_json::Value> = p2
        .lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        json.iter()
            .all(|v| v["level"].is_string() && v["fields"]["message"].is_string()),
        "{json:?}"
    );
    let learned = json
        .iter()
        .find(|v| v["fields"]["event"] == "route_learned" && v["fields"]["dest"] == "10.1.0.0/16")
        .unwrap_or_else(|| panic!("{json:?}"));
    assert_eq!(learned["level"], "INFO");
    assert_eq!(learned["fields"]["router"], "r2");
    assert_eq!(learned["fields"]["cost"], 1);

    // r2 dies. r1's link to it is refused, retried every 100 ms and refused again: one
    // link down, one neighbour down, one withdrawal, however many hold-downs pass.
    let before = p1.lines().len();
    drop(p2);
    p1.wait_for("route 10.2.0.0/16 withdrawn (was via b (10.0.0.2), cost 1)");
    std::thread::sleep(Duration::from_millis(1500));
    let dead = p1.lines().len();

    // r2 is back: the link is up once (heard from, or not refused for a second after a
    // retry), its neighbour up and the route learned again.
    let p2 = Proc::start(&dir, "r2", &r2, &[]);
    let start = Instant::now();
    while count(&p1.lines()[dead..], "route 10.2.0.0/16 learned") == 0
        || count(&p1.lines()[dead..], "link b up") == 0
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "r2 not back in:\n{}",
            p1.lines()[dead..].join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let lines = p1.stop();
    drop(p2);
    println!("{}", lines.join("\n"));
    let back = &lines[dead..];
    assert_eq!(count(back, "link b up"), 1, "{}", back.join("\n"));
    assert_eq!(count(back, "link b down"), 0, "{}", back.join("\n"));
    assert_eq!(
        count(back, "neighbour 10.0.0.2 up on b"),
        1,
        "{}",
        back.join("\n")
    );
    let after = &lines[before..dead];
    let text = after.join("\n");
    assert_eq!(count(after, "link b down"), 1, "{text}");
    assert_eq!(count(after, "link b up"), 0, "{text}");
    assert_eq!(count(after, "neighbour 10.0.0.2 down on b"), 1, "{text}");
    assert_eq!(count(after, "route 10.2.0.0/16 withdrawn"), 1, "{text}");
    assert_eq!(count(after, "route router 10.0.0.2 withdrawn"), 1, "{text}");

    // The final counters: one line, no Debug braces.
    let stopped: Vec<&String> = back.iter().filter(|l| l.contains("stopped: ")).collect();
    assert_eq!(stopped.len(), 1, "{}", back.join("\n"));
    let line = stopped[0];
    assert!(
        line.contains(" in, ") && line.contains(" forwarded, "),
        "{line}"
    );
    assert!(line.contains("; link b "), "{line}");
    assert!(!line.contains(['{', '}']), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}
