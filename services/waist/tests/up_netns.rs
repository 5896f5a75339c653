//! `waist up` with end hosts that are kernel network namespaces (`[[host]] kind =
//! "netns"`, root): the kernel's ping and TCP between two of them across three routers,
//! `waist status` listing them and `waist down` deleting them; and the refusals (not root,
//! a namespace that exists already). Namespaces carry the test's pid in their names and
//! are deleted on failure too.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use support::{WAIST, ensure_daemons, text, waist};

/// Why these tests cannot run here, printed when they skip.
fn unsupported() -> Option<&'static str> {
    let why = netio::link::netns_unsupported();
    if let Some(why) = why {
        eprintln!("skipping: network namespaces need root, /dev/net/tun and ip: {why}");
    }
    why
}

/// A first port for a test, apart per process and slot (the other `waist up` tests use
/// 20000–26000, in other test binaries that do not run at the same time anyway).
fn base(slot: u16) -> u16 {
    30_000 + (std::process::id() % 100) as u16 * 30 + slot * 10
}

fn scratch(name: &str) -> PathBuf {
    support::scratch(&format!("netns-{name}"))
}

/// The namespaces `ip netns list` shows.
fn namespaces() -> String {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A line of three routers, a namespace host at each end; `run` names the run.
fn line(run: &str, first: u16) -> String {
    format!(
        "name = \"{run}\"\n\
         [defaults]\nfirst_port = {first}\nmetrics_base = {}\n\
         [defaults.router]\n\
         dv = {{ update_ms = 300, timeout_ms = 2000, gc_ms = 1000, triggered_ms = 20 }}\n\
         [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
         [[router]]\nname = \"r3\"\naddress = \"10.0.0.3\"\n\
         [[link]]\nbetween = [\"r1\", \"r2\"]\n\
         [[link]]\nbetween = [\"r2\", \"r3\"]\n\
         [[host]]\nname = \"h1\"\naddress = \"10.1.0.10\"\nrouter = \"r1\"\nkind = \"netns\"\n\
         [[host]]\nname = \"h3\"\naddress = \"10.3.0.10\"\nrouter = \"r3\"\nkind = \"netns\"\n",
        first + 1000
    )
}

/// A foreground `waist up` and the namespaces of its run: on failure, SIGINT to it (it
/// stops its routers and deletes them), then whatever is left is deleted here.
struct Run {
    child: Child,
    spaces: [String; 2],
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for ns in &self.spaces {
            if std::path::Path::new("/run/netns").join(ns).exists() {
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
        }
    }
}

/// `ip netns exec NS ping -c COUNT DST`.
fn ping(ns: &str, dst: &str, count: &str) -> std::process::Output {
    Command::new("ip")
        .args([
            "netns", "exec", ns, "ping", "-n", "-c", count, "-i", "0.2", "-W", "2", dst,
        ])
        .output()
        .unwrap()
}

/// Runs `f` on a thread moved into the network namespace `ns` (only that thread moves).
fn in_namespace<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    std::thread::spawn(move || {
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        f()
    })
}

/// `n` bytes that differ from any shifted or repeated copy of themselves (xorshift).
fn payload(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// Sends `data` from namespace `from` to a listener in namespace `to` at `at` over the
/// kernel's TCP; returns what arrived.
fn transfer(from: &str, to: &str, at: SocketAddr, data: Vec<u8>) -> Vec<u8> {
    let listener = in_namespace(to, move || TcpListener::bind(at).unwrap());
    let listener = listener.join().unwrap();
    let receiver = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut stream, _) = loop {
            match listener.accept() {
                Ok(got) => break got,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "no connection came");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        got
    });
    let sender = in_namespace(from, move || {
        let mut s = TcpStream::connect_timeout(&at, Duration::from_secs(10)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(&data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
    });
    sender.join().expect("the sender failed");
    receiver.join().expect("the receiver failed")
}

#[test]
fn netns_hosts_ping_and_talk_tcp_across_three_routers_and_waist_down_deletes_them() {
    if unsupported().is_some() {
        return;
    }
    ensure_daemons();
    let d = scratch("line");
    let run = format!("nst{}", std::process::id());
    let file = d.join("line.toml");
    std::fs::write(&file, line(&run, base(0))).unwrap();
    let (h1, h3) = (format!("waist-{run}-h1"), format!("waist-{run}-h3"));
    let dir = d.join("run");
    let child = Command::new(WAIST)
        .args(["up", file.to_str().unwrap(), "--dir", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = Run {
        child,
        spaces: [h1.clone(), h3.clone()],
    };
    let up_pid = guard.child.id();
    let mut lines = BufReader::new(guard.child.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line.starts_with("running;");
        said.push(line);
        if done {
            break;
        }
    }
    let said = said.join("\n");
    assert!(said.contains("running;"), "waist up did not start:\n{said}");
    // It says how to use each host: from h1, ping the other host.
    assert!(
        said.contains(&format!("ip netns exec {h1} ping 10.3.0.10"))
            && said.contains(&format!("ip netns exec {h3} ping 10.1.0.10")),
        "{said}"
    );
    let list = namespaces();
    assert!(list.contains(&h1) && list.contains(&h3), "{list}");

    // The kernel's ping crosses r1, r2, r3 once distance vector has spread the hosts'
    // addresses (a loaded machine may take a few seconds).
    let start = Instant::now();
    while !ping(&h1, "10.3.0.10", "1").status.success() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "h1 never reached h3: {}",
            text(&ping(&h1, "10.3.0.10", "1"))
        );
    }
    for (ns, dst) in [(&h1, "10.3.0.10"), (&h3, "10.1.0.10"), (&h3, "10.0.0.1")] {
        let o = ping(ns, dst, "3");
        assert!(o.status.success(), "{ns} → {dst}: {}", text(&o));
    }

    // A TCP transfer from h1 to h3, byte for byte.
    let data = payload(4 << 20);
    let at = SocketAddr::new("10.3.0.10".parse::<IpAddr>().unwrap(), 5201);
    let got = transfer(&h1, &h3, at, data.clone());
    assert_eq!(got.len(), data.len(), "bytes received");
    assert!(got == data, "the bytes that arrived differ from those sent");

    // `waist status` lists the namespaces; the state file records them.
    let dir_s = dir.to_str().unwrap();
    let o = waist(&["status", "--dir", dir_s]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&h1) && text(&o).contains("10.3.0.10 via r3"),
        "{}",
        text(&o)
    );
    let o = waist(&["status", "--json", "--dir", dir_s]);
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spaces = status["namespaces"].as_array().unwrap();
    assert_eq!(spaces.len(), 2, "{status}");
    assert_eq!(
        (&spaces[1]["namespace"], &spaces[1]["present"]),
        (&h3.as_str().into(), &true.into())
    );

    // `waist down` stops the foreground run; neither it nor the run leaves a namespace.
    let o = waist(&["down", "--dir", dir_s]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("stopped 3 processes, deleted 2 network namespaces"),
        "{}",
        text(&o)
    );
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = guard.child.wait().unwrap();
    assert!(status.success(), "{status}: {rest:?}");
    assert!(
        // How many processes it stopped itself depends on who was faster.
        rest.iter().any(|l| l.starts_with("terminated: stopped ")
            && l.ends_with(" processes, deleted 2 network namespaces")),
        "{rest:?}"
    );
    let list = namespaces();
    assert!(!list.contains(&h1) && !list.contains(&h3), "left: {list}");
    let links = Command::new("ip").args(["link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(!links.contains(&format!("wh{up_pid}-")), "{links}");
    drop(guard);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn without_root_a_netns_host_is_refused_before_anything_starts() {
    ensure_daemons();
    let d = scratch("noroot");
    let file = d.join("t.toml");
    std::fs::write(&file, line(&format!("nsr{}", std::process::id()), base(1))).unwrap();
    let run = d.join("run");
    // As root, run `waist` as nobody (setpriv, from util-linux); else as we are.
    let root = nix::unistd::Uid::effective().is_root();
    if root && Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipping: root, and no setpriv to drop it");
        return;
    }
    for check in [true, false] {
        let mut cmd = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", WAIST]);
            c
        } else {
            Command::new(WAIST)
        };
        cmd.args(["up", file.to_str().unwrap(), "--dir", run.to_str().unwrap()]);
        if check {
            cmd.arg("--check");
        }
        let o = cmd.output().unwrap();
        assert!(!o.status.success(), "accepted:\n{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("hosts `h1`, `h3` are a network namespace")
                && err.contains("needs root")
                && err.contains("not root"),
            "{err}"
        );
        assert!(!run.exists(), "something started before the error");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_namespace_that_exists_already_is_refused_and_left_alone() {
    if unsupported().is_some() {
        return;
    }
    ensure_daemons();
    let d = scratch("exists");
    let name = format!("nse{}", std::process::id());
    let file = d.join("t.toml");
    std::fs::write(&file, line(&name, base(2))).unwrap();
    let taken = format!("waist-{name}-h3");
    assert!(
        Command::new("ip")
            .args(["netns", "add", &taken])
            .status()
            .unwrap()
            .success()
    );
    struct Del(String);
    impl Drop for Del {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let _del = Del(taken.clone());
    let run = d.join("run");
    let o = waist(&["up", file.to_str().unwrap(), "--dir", run.to_str().unwrap()]);
    assert!(!o.status.success(), "accepted:\n{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "host `h3`: network namespace {taken} exists already"
        )) && text(&o).contains(&format!("ip netns del {taken}")),
        "{}",
        text(&o)
    );
    assert!(!run.exists(), "something started before the error");
    let list = namespaces();
    assert!(
        list.contains(&taken),
        "someone else's namespace was deleted: {list}"
    );
    assert!(!list.contains(&format!("waist-{name}-h1")), "{list}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn ipv6_netns_hosts_of_a_detached_run_ping_each_other_across_a_restart_until_waist_down() {
    if unsupported().is_some() {
        return;
    }
    ensure_daemons();
    let d = scratch("v6");
    let run = format!("ns6{}", std::process::id());
    let first = base(3);
    // Two routers with static routes (no distance vector): reachable at once.
    let topology = format!(
        "name = \"{run}\"\n[defaults]\nfirst_port = {first}\nmetrics_base = {}\n\
         [[router]]\nname = \"r1\"\naddress = \"10.0.0.1\"\n\
         [[router]]\nname = \"r2\"\naddress = \"10.0.0.2\"\n\
         [[link]]\nbetween = [\"r1\", \"r2\"]\n\
         [[host]]\nname = \"a\"\naddress = \"fd00:1::10\"\nrouter = \"r1\"\nkind = \"netns\"\n\
         [[host]]\nname = \"b\"\naddress = \"fd00:2::10\"\nrouter = \"r2\"\nkind = \"netns\"\n",
        first + 1000
    );
    let file = d.join("v6.toml");
    std::fs::write(&file, topology).unwrap();
    let (a, b) = (format!("waist-{run}-a"), format!("waist-{run}-b"));
    // Deletes what a failure leaves: the run (`waist down`), then any namespace.
    struct Down(PathBuf, [String; 2]);
    impl Drop for Down {
        fn drop(&mut self) {
            if self.0.join("state.json").exists() {
                let _ = waist(&["down", "--dir", self.0.to_str().unwrap()]);
            }
            for ns in &self.1 {
                if std::path::Path::new("/run/netns").join(ns).exists() {
                    let _ = Command::new("ip").args(["netns", "del", ns]).status();
                }
            }
        }
    }
    let dir = d.join("run");
    let _down = Down(dir.clone(), [a.clone(), b.clone()]);
    let dir_s = dir.to_str().unwrap();
    let o = waist(&["up", file.to_str().unwrap(), "--detach", "--dir", dir_s]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("ip netns exec {a} ping fd00:2::10")),
        "{}",
        text(&o)
    );
    let o = ping(&a, "fd00:2::10", "3");
    assert!(o.status.success(), "{}", text(&o));
    let o = ping(&b, "fd00:1::10", "3");
    assert!(o.status.success(), "{}", text(&o));
    // A restarted router makes a new TUN device: `waist restart` moves it into the host's
    // namespace again, so the host is reachable as before.
    let o = waist(&["restart", "r1", "--dir", dir_s]);
    assert!(
        o.status.success() && text(&o).contains("1 namespace host(s) attached again"),
        "{}",
        text(&o)
    );
    let o = ping(&b, "fd00:1::10", "3");
    assert!(o.status.success(), "after the restart: {}", text(&o));
    let o = waist(&["down", "--dir", dir_s]);
    assert!(
        o.status.success() && text(&o).contains("deleted 2 network namespaces"),
        "{}",
        text(&o)
    );
    let list = namespaces();
    assert!(!list.contains(&a) && !list.contains(&b), "left: {list}");
    std::fs::remove_dir_all(&d).unwrap();
}
