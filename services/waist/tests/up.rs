//! `waist up`, `waist status`, `waist down` with the real daemons: bad topologies refused
//! before anything starts, and one network spread over two "machines" (two `waist up
//! --only` processes on different loopback addresses) that routes as one.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod support;

use support::{ensure_daemons, text, waist};

/// A first port for a test: below the ephemeral range and the demo's 27000, apart per
/// test and per process.
fn base(slot: u16) -> u16 {
    20_000 + (std::process::id() % 150) as u16 * 40 + slot * 10
}

fn scratch(name: &str) -> PathBuf {
    support::scratch(&format!("up-{name}"))
}

/// `waist up FILE` refuses `topology`; returns what it said. Nothing may have started.
fn refused(name: &str, topology: &str) -> String {
    ensure_daemons();
    let d = scratch(name);
    let file = d.join("t.toml");
    std::fs::write(&file, topology).unwrap();
    let run = d.join("run");
    let o = waist(&["up", file.to_str().unwrap(), "--dir", run.to_str().unwrap()]);
    assert!(!o.status.success(), "accepted:\n{}", text(&o));
    assert!(
        !run.join("logs").exists(),
        "something started before the error"
    );
    let said = text(&o);
    std::fs::remove_dir_all(&d).unwrap();
    said
}

const TWO_ROUTERS: &str = "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\n\
                           [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n";

#[test]
fn a_link_to_an_unknown_router_is_refused_with_file_line_and_key() {
    let said = refused(
        "unknown",
        &format!("{TWO_ROUTERS}\n[[link]]\nbetween = [\"r1\", \"r9\"]\n"),
    );
    assert!(
        said.contains("t.toml:10:") && said.contains("key `between`") && said.contains("`r9`"),
        "{said}"
    );
}

#[test]
fn a_duplicate_address_is_refused() {
    let said = refused(
        "dup",
        &format!(
            "{TWO_ROUTERS}\n[[host]]\nname = \"h1\"\naddress = \"10.0.0.2\"\nrouter = \"r1\"\n"
        ),
    );
    assert!(
        said.contains("t.toml:11:") && said.contains("key `address`") && said.contains("r2's"),
        "{said}"
    );
}

#[test]
fn a_missing_directory_to_serve_is_refused() {
    let said = refused(
        "root",
        &format!(
            "{TWO_ROUTERS}\n[[server]]\nname = \"web\"\naddress = \"10.2.0.80\"\nroot = \"no-such-dir\"\nrouter = \"r2\"\n"
        ),
    );
    assert!(
        said.contains("key `root`")
            && said.contains("no-such-dir")
            && said.contains("not a directory"),
        "{said}"
    );
}

#[test]
fn a_port_in_use_is_refused_naming_the_link() {
    let first = base(0);
    let _taken = std::net::UdpSocket::bind(("127.0.0.1", first + 1)).unwrap();
    let said = refused(
        "port",
        &format!(
            "[defaults]\nfirst_port = {first}\n{TWO_ROUTERS}\n[[link]]\nbetween = [\"r1\", \"r2\"]\n"
        ),
    );
    assert!(
        said.contains(&format!("127.0.0.1:{}", first + 1))
            && said.contains("`r2`")
            && said.contains("link `r1`"),
        "{said}"
    );
}

#[test]
fn a_router_section_the_router_refuses_is_refused_before_start() {
    let said = refused(
        "esp",
        "[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nesp = { rte = 5 }\n",
    );
    assert!(
        said.contains("t.toml:4:15: key `rte`") && said.contains("router `r1`"),
        "{said}"
    );
}

/// Waits until `f` holds, or fails after `limit` with `what`.
fn eventually(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The metrics address and pid of every process in `run`'s state file.
fn state(run: &Path) -> Vec<(String, u32, SocketAddr)> {
    let s: waist::up::State =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    s.processes
        .iter()
        .map(|p| (p.name.clone(), p.pid, p.metrics))
        .collect()
}

#[test]
fn two_machines_form_one_routed_network() {
    ensure_daemons();
    let d = scratch("two");
    let first = base(1);
    let topology = format!(
        "name = \"pair\"\n\
         [defaults]\nmetrics_base = {}\n\
         [defaults.router]\n\
         dv = {{ update_ms = 300, timeout_ms = 2000, gc_ms = 1000, triggered_ms = 20 }}\n\
         snap = {{}}\n\
         [[machine]]\nname = \"alpha\"\nip = \"127.0.0.2\"\nfirst_port = {first}\n\
         [[machine]]\nname = \"beta\"\nip = \"127.0.0.3\"\nfirst_port = {first}\n\
         [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nhost = \"alpha\"\n\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\nhost = \"beta\"\n\
         [[link]]\nbetween = [\"r1\", \"r2\"]\n\
         [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\nhost = \"alpha\"\n\
         [[host]]\nname = \"h2\"\naddress = \"10.2.0.10\"\nrouter = \"r2\"\nhost = \"beta\"\n",
        first + 1000
    );
    let file = d.join("pair.toml");
    std::fs::write(&file, topology).unwrap();
    let mut pids = Vec::new();
    let mut runs = Vec::new();
    for m in ["alpha", "beta"] {
        let run = d.join(m);
        // Beta's daemons log JSON, as `waist --log-format json` asks.
        let format = if m == "beta" { "json" } else { "text" };
        let o = waist(&[
            "--log-format",
            format,
            "up",
            file.to_str().unwrap(),
            "--only",
            m,
            "--detach",
            "--dir",
            run.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{m}:\n{}", text(&o));
        let started = state(&run);
        assert_eq!(started.len(), 1, "{m} runs its one router");
        pids.extend(started.iter().map(|(_, pid, _)| *pid));
        runs.push((run, started));
    }
    let guard = Down(runs.iter().map(|(r, _)| r.clone()).collect());
    // Each machine's router logs in the format its `waist up` was given.
    for ((run, started), json) in runs.iter().zip([false, true]) {
        let name = &started[0].0;
        let log = run.join("logs").join(format!("{name}.log"));
        eventually(Duration::from_secs(10), "the router logged nothing", || {
            std::fs::read_to_string(&log).is_ok_and(|t| !t.is_empty())
        });
        let text = std::fs::read_to_string(&log).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(first).is_ok(),
            json,
            "{name}: {first}"
        );
    }

    // r1 (alpha) learns h2's address from r2 (beta) over the link between the machines.
    let r1 = runs[0].1[0].2;
    eventually(
        Duration::from_secs(10),
        "r1 never learned 10.2.0.10",
        || {
            waist::host::scrape::fetch(r1, Duration::from_secs(1)).is_ok_and(|page| {
                waist::host::scrape::parse(&page).iter().any(|s| {
                    s.name == "waist_route"
                        && s.label("prefix") == Some("10.2.0.10/32")
                        && s.label("source") == Some("dv")
                })
            })
        },
    );
    // And a SNAP ping from h1 (on alpha) is answered by r2 (on beta).
    // Ports in file order: the link takes `first` on each machine, then h1's socket and
    // r1's end of h1's link.
    let via = format!("udp:127.0.0.2:{}=127.0.0.2:{}", first + 1, first + 2);
    let o = waist(&[
        "snap",
        "ping",
        "--via",
        &via,
        "--src",
        "10.1.0.10",
        "-c",
        "3",
        "10.0.0.2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("from=10.0.0.2"), "{}", text(&o));

    let status = waist(&["status", "--dir", runs[1].0.to_str().unwrap()]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(text(&status).contains("r2"), "{}", text(&status));

    drop(guard);
    for pid in pids {
        assert!(
            !waist::up::is_ours(pid, "waist-router"),
            "pid {pid} still runs after waist down"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `waist down` for each run directory, also when the test fails.
struct Down(Vec<PathBuf>);

impl Drop for Down {
    fn drop(&mut self) {
        for run in &self.0 {
            if run.join("state.json").exists() {
                let o = waist(&["down", "--dir", run.to_str().unwrap()]);
                assert!(
                    o.status.success() || std::thread::panicking(),
                    "{}",
                    text(&o)
                );
            }
        }
    }
}

/// SIGINT to a foreground `waist up` if the test fails while it runs (it then stops its
/// daemons).
struct Interrupt(u32);

impl Drop for Interrupt {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0 as i32),
                nix::sys::signal::Signal::SIGINT,
            );
        }
    }
}

#[test]
fn ctrl_c_stops_every_process_of_a_foreground_run() {
    use std::io::{BufRead, BufReader};
    ensure_daemons();
    let d = scratch("fg");
    let file = d.join("fg.toml");
    std::fs::write(
        &file,
        format!(
            "[defaults]\nfirst_port = {}\n{TWO_ROUTERS}\n[[link]]\nbetween = [\"r1\", \"r2\"]\n",
            base(2)
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(support::WAIST)
        .args(["up", file.to_str().unwrap(), "--dir"])
        .arg(d.join("run"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _stop = Interrupt(child.id());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pids = Vec::new();
    let mut urls = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.get(1) == Some(&"waist-router") {
            pids.push(words[2].parse::<u32>().unwrap());
            urls.push(words[4].to_string());
        }
        if line.starts_with("running;") {
            break;
        }
    }
    assert_eq!(pids.len(), 2, "the table named {pids:?}");
    assert!(pids.iter().all(|p| waist::up::is_ours(*p, "waist-router")));
    // Metrics ports from the topology: first_port + 1000, one per process in file order.
    let metrics = |i: u16| format!("127.0.0.1:{}", base(2) + 1000 + i);
    assert_eq!(
        urls,
        [
            format!("http://{}/metrics", metrics(0)),
            format!("http://{}/metrics", metrics(1))
        ]
    );

    // The run is found by name while it runs in the foreground.
    let run = d.join("run");
    let run = run.to_str().unwrap();
    let o = waist(&["route", "show", "r1", "--json", "--dir", run]);
    assert!(o.status.success(), "{}", text(&o));
    let routes: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(routes["router"], "r1");
    assert_eq!(routes["metrics"], metrics(0));
    let to_r2 = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["prefix"] == "10.0.0.2/32")
        .unwrap_or_else(|| panic!("no route to r2: {routes}"));
    assert_eq!(
        (&to_r2["link"], &to_r2["source"]),
        (&"r2".into(), &"static".into())
    );
    let o = waist(&["status", "r2", "--json", "--dir", run]);
    assert!(o.status.success(), "{}", text(&o));
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let procs = status["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 1, "{status}");
    assert_eq!(
        (&procs[0]["name"], &procs[0]["answering"]),
        (&"r2".into(), &true.into())
    );
    assert_eq!(procs[0]["metrics"], metrics(1));
    assert!(procs[0]["counters"]["received"].is_number(), "{status}");
    let o = waist(&["status", "r9", "--dir", run]);
    assert!(
        !o.status.success() && text(&o).contains("no process `r9` (it has: r1, r2)"),
        "{}",
        text(&o)
    );
    // A second run on the same ports is refused, naming the metrics port and the router.
    let o = waist(&[
        "up",
        file.to_str().unwrap(),
        "--dir",
        d.join("run2").to_str().unwrap(),
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}: {rest:?}");
    assert!(
        rest.iter().any(|l| l == "interrupted: stopped 2 processes"),
        "{rest:?}"
    );
    for pid in pids {
        assert!(!waist::up::is_ours(pid, "waist-router"), "{pid} still runs");
    }
    assert!(
        !d.join("run/state.json").exists(),
        "the state file outlived the run"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_metrics_port_in_use_is_refused_naming_the_port_and_the_daemon() {
    let first = base(4);
    let taken = std::net::TcpListener::bind(("127.0.0.1", first + 1001)).unwrap();
    let said = refused(
        "metrics",
        &format!(
            "[defaults]\nfirst_port = {first}\n{TWO_ROUTERS}\n[[link]]\nbetween = [\"r1\", \"r2\"]\n"
        ),
    );
    assert!(
        said.contains(&format!("127.0.0.1:{}", first + 1001))
            && said.contains("waist-router `r2`")
            && said.contains("metrics_base"),
        "{said}"
    );
    drop(taken);
}

/// The pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                && waist::up::is_ours(*pid, "waist-router")
        })
        .collect()
}

#[test]
fn a_process_failing_at_start_stops_what_already_runs() {
    ensure_daemons();
    let d = scratch("fail");
    std::fs::create_dir_all(d.join("site")).unwrap();
    let run = d.join("run");
    // The replica's key file is not one: trickles-web exits at start, after the router
    // started.
    std::fs::create_dir_all(run.join("keys")).unwrap();
    std::fs::write(run.join("keys/web.key"), "not hex\n").unwrap();
    let file = d.join("f.toml");
    std::fs::write(
        &file,
        format!(
            "[defaults]\nfirst_port = {}\n[[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
             [[server]]\nname = \"web\"\naddress = \"10.2.0.80\"\nroot = \"site\"\nrouter = \"r1\"\n",
            base(3)
        ),
    )
    .unwrap();
    let o = waist(&["up", file.to_str().unwrap(), "--dir", run.to_str().unwrap()]);
    assert!(!o.status.success(), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("trickles-web `web-1` exited at start") && said.contains("key file"),
        "{said}"
    );
    // r1 had started (its log exists) and is stopped again.
    assert!(run.join("logs/r1.log").exists());
    let left = processes_mentioning(run.to_str().unwrap());
    assert!(left.is_empty(), "still running: {left:?}");
    std::fs::remove_dir_all(&d).unwrap();
}
