//! The daemons under test: `waist-router` processes started from the binary beside this
//! example, killed when the guard drops (also on a panic), and their metrics endpoints.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `waist-router` binary of the build this example belongs to: the example runs from
/// `target/PROFILE/examples/`, the binary is `target/PROFILE/waist-router`.
pub(crate) fn router_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this example's path")?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("waist-router"))
        .context("this example is not in a cargo target directory")?;
    if !bin.is_file() {
        bail!(
            "{} not found: build it first with `cargo build --release -p waist-router`",
            bin.display()
        );
    }
    Ok(bin)
}

/// Running daemons, killed and reaped when this drops.
#[derive(Default)]
pub(crate) struct Procs {
    children: Vec<(String, Child)>,
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Procs {
    /// Starts `bin --config DIR/NAME.toml --metrics 127.0.0.1:0` with `config` written
    /// there, its log in `DIR/NAME.log`; the address of its metrics endpoint once it
    /// printed it.
    pub(crate) fn start(
        &mut self,
        bin: &Path,
        dir: &Path,
        name: &str,
        config: &str,
    ) -> anyhow::Result<SocketAddr> {
        let cfg = dir.join(format!("{name}.toml"));
        std::fs::write(&cfg, config).with_context(|| format!("writing {}", cfg.display()))?;
        let log = dir.join(format!("{name}.log"));
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = Command::new(bin)
            .arg("--config")
            .arg(&cfg)
            .arg("--metrics")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("the daemon's stdout")?;
        self.children.push((name.to_string(), child));
        // Read stdout on a thread until the metrics line, then keep draining it.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("metrics http://")
                    && let Some(addr) = rest.strip_suffix("/metrics")
                {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(10)).map_err(|_| {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            anyhow::anyhow!(
                "{name}: no metrics address within 10 s; its log says: {}",
                text.trim()
            )
        })?;
        addr.parse()
            .with_context(|| format!("{name}: metrics address {addr:?}"))
    }

    /// The process id of the daemon started as `name`.
    pub(crate) fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.id())
    }

    /// Fails if a daemon has exited.
    pub(crate) fn check(&mut self) -> anyhow::Result<()> {
        for (name, c) in &mut self.children {
            if let Some(status) = c.try_wait()? {
                bail!("{name} exited: {status}");
            }
        }
        Ok(())
    }
}

/// One scrape of a metrics endpoint, the exposition text.
pub(crate) async fn scrape(addr: SocketAddr) -> anyhow::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut body = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut body))
        .await
        .context("metrics scrape timed out")??;
    Ok(body
        .split_once("\r\n\r\n")
        .map_or(body.clone(), |(_, b)| b.to_string()))
}

/// The value of the unlabelled sample `name` (0 if absent).
pub(crate) fn value(text: &str, name: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .filter_map(|v| v.trim().parse().ok())
        .next()
        .unwrap_or(0.0)
}

/// `waist_stream_cost_ns` of `stream`: its placement and cost, if it is deployed.
pub(crate) fn placement(text: &str, stream: u16) -> Option<(String, f64)> {
    let want = format!("stream=\"{stream}\"");
    text.lines()
        .filter(|l| l.starts_with("waist_stream_cost_ns{") && l.contains(&want))
        .find_map(|l| {
            let p = l
                .split("placement=\"")
                .nth(1)?
                .split('"')
                .next()?
                .to_string();
            let v = l.rsplit(' ').next()?.parse().ok()?;
            Some((p, v))
        })
}

/// CPU time process `pid` (`None`: this one) has used, summed over its threads
/// (`/proc/PID/task/*/schedstat`, ns); 0 where that cannot be read.
pub(crate) fn cpu_ns(pid: Option<u32>) -> u64 {
    let dir = match pid {
        Some(p) => format!("/proc/{p}/task"),
        None => "/proc/self/task".to_string(),
    };
    let Ok(tasks) = std::fs::read_dir(dir) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
