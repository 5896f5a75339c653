//! `waist demo --tun` (root): two network namespaces at the edges of the demo network, so
//! the kernel's own `ping` and `curl` cross the routers.
//!
//! ```text
//!   namespace C (10.9.1.2) ══ TUN ══ r1 … routers … r4 ══ TUN ══ namespace S (10.9.2.2)
//!   ping, curl                                               trickles-web --tcp :80
//! ```
//!
//! The kernel steps (namespace, device, address, route) are `waist up`'s for its netns
//! hosts ([`crate::up::netns`]).
//!
//! r1 and r4 each get a TUN link (the waist-router configs `r1-tun.toml` and `r4-tun.toml`
//! beside the topology, which the topology names with `config =`), a route to the
//! namespace's /24 over it, and announce that /24 by distance vector. Once the routers run,
//! each device moves into its namespace and gets its address there; namespace S runs a
//! `trickles-web` whose TCP fallback (the kernel's TCP) serves the demo's site. The
//! namespaces carry the demo's pid in their names and are deleted when [`Kernel`] drops,
//! on failure too.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::up::netns;

/// The client namespace's prefix and its address (a /24).
const CLIENT: (&str, &str) = ("10.9.1.0/24", "10.9.1.2");
/// The server namespace's prefix and address (a /24).
const SERVER: (&str, &str) = ("10.9.2.0/24", "10.9.2.2");
/// Where the server namespace's kernel TCP server listens.
const SERVER_IP: &str = SERVER.1;

/// Why `--tun` cannot run here, if it cannot (it needs root, `/dev/net/tun` and `ip`).
pub fn unsupported() -> Option<&'static str> {
    netio::link::netns_unsupported()
}

/// The TUN devices' names for this process.
fn devices() -> (String, String) {
    let id = std::process::id();
    (format!("wdc{id}"), format!("wds{id}"))
}

/// `topology` with r1 and r4 given a TUN link each (config files written into `dir`).
///
/// # Errors
///
/// The files cannot be written, or the topology is not the demo's.
pub fn with_tun(topology: &str, dir: &Path) -> anyhow::Result<String> {
    let (dc, ds) = devices();
    let mut text = topology.to_string();
    for (router, address, dev, (prefix, _)) in [
        ("r1", "10.0.0.1", &dc, CLIENT),
        ("r4", "10.0.0.4", &ds, SERVER),
    ] {
        let file = format!("{router}-tun.toml");
        std::fs::write(
            dir.join(&file),
            format!(
                "# The TUN link `waist demo --tun` gives {router} (its device moves into a namespace).\n\
                 [[link]]\nname = \"kernel\"\nkind = \"tun\"\ndevice = \"{dev}\"\nmtu = 1500\n\n\
                 [[route]]\nprefix = \"{prefix}\"\nlink = \"kernel\"\n"
            ),
        )?;
        let anchor = format!("name = \"{router}\"\naddress = \"{address}\"\n");
        if !text.contains(&anchor) {
            bail!("the demo topology has no router {router} at {address}");
        }
        text = text.replace(
            &anchor,
            &format!("{anchor}originate = [\"{prefix}\"]\nconfig = \"{file}\"\n"),
        );
    }
    Ok(text)
}

/// The two namespaces and the server inside one; removed on drop.
pub struct Kernel {
    client: String,
    server: String,
    web: Option<Child>,
}

impl Kernel {
    /// Creates the namespaces, moves the routers' TUN devices into them, and starts the
    /// server namespace's trickles-web (files under `dir`, binaries from `bins`).
    ///
    /// # Errors
    ///
    /// Any step fails (what was made is removed).
    pub fn setup(dir: &Path, site: &Path, bins: &Path) -> anyhow::Result<Kernel> {
        let id = std::process::id();
        let mut k = Kernel {
            client: format!("waist-demo-c-{id}"),
            server: format!("waist-demo-s-{id}"),
            web: None,
        };
        let (dc, ds) = devices();
        for (ns, dev, (_, addr)) in [(&k.client, &dc, CLIENT), (&k.server, &ds, SERVER)] {
            netns::add(ns)?;
            netns::configure(ns, dev, addr.parse()?, 24)?;
        }
        let program = crate::up::fleet::find_binary(bins, "trickles-web")?;
        let out_file = dir.join("logs").join("kernel-web.out");
        let child = Command::new("ip")
            .args(["netns", "exec", &k.server])
            .arg(&program)
            .arg("--root")
            .arg(site)
            .arg("--keys")
            .arg(dir.join("keys").join("kernel-web.key"))
            .args(["--listen", "udp:127.0.0.1:0", "--tcp"])
            .arg(format!("{SERVER_IP}:80"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_file)?)
            .stderr(std::fs::File::create(
                dir.join("logs").join("kernel-web.log"),
            )?)
            .spawn()
            .context("cannot start trickles-web in the server namespace")?;
        k.web = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&out_file).is_ok_and(|t| t.contains("tcp=")) {
            if Instant::now() > deadline {
                bail!("trickles-web in {} did not start", k.server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(k)
    }

    /// The client namespace's kernel `ping` to the server namespace and to r4.
    ///
    /// # Errors
    ///
    /// A ping got no reply.
    pub fn ping(&self, out: &mut dyn Write) -> anyhow::Result<String> {
        let mut said = Vec::new();
        for dst in [SERVER_IP, "10.0.0.4"] {
            let o = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &self.client,
                    "ping",
                    "-c",
                    "3",
                    "-i",
                    "0.2",
                    "-W",
                    "2",
                ])
                .arg(dst)
                .output()
                .context("cannot run ping (apt install iputils-ping)")?;
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let summary = text
                .lines()
                .filter(|l| l.contains("received") || l.starts_with("rtt"))
                .collect::<Vec<_>>()
                .join("; ");
            writeln!(out, "  ping {dst}: {summary}")?;
            if !o.status.success() {
                bail!("the kernel's ping to {dst} got no reply: {summary}");
            }
            said.push(format!(
                "{dst} ({})",
                summary.split(", ").nth(1).unwrap_or("")
            ));
        }
        Ok(format!("the kernel's ping answered: {}", said.join(", ")))
    }

    /// The client namespace's kernel `curl` to the server namespace's kernel TCP server.
    ///
    /// # Errors
    ///
    /// curl fails or the body differs from `expected`.
    pub fn curl(&self, expected: &[u8], out: &mut dyn Write) -> anyhow::Result<String> {
        let url = format!("http://{SERVER_IP}/index.html");
        let t = Instant::now();
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.client,
                "curl",
                "-sS",
                "--max-time",
                "10",
            ])
            .arg(&url)
            .output()
            .context("cannot run curl (apt install curl)")?;
        if !o.status.success() {
            bail!("curl failed: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        if o.stdout != expected {
            bail!(
                "curl got {} bytes that differ from index.html",
                o.stdout.len()
            );
        }
        writeln!(
            out,
            "  curl {url}: {} bytes in {} ms, byte-exact (kernel TCP both ends)",
            o.stdout.len(),
            t.elapsed().as_millis()
        )?;
        Ok(format!(
            "the kernel's curl fetched {url} across the routers, byte-exact"
        ))
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Some(mut web) = self.web.take() {
            // `ip netns exec` execs the program, so this is trickles-web itself.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(web.id()).unwrap_or(i32::MAX)),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(3);
            while matches!(web.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = web.kill();
            let _ = web.wait();
        }
        for ns in [&self.client, &self.server] {
            let _ = netns::remove(ns);
        }
    }
}
