//! The `trickles-web` daemon: its command line ([`Args`]), merged over its TOML config
//! file into the server's [`Options`] ([`options`]), and [`run`], everything `main` does
//! after parsing the arguments and setting up tracing.
//!
//! ```text
//!  Args (clap) ─┐
//!               ├─► options ─► Options ─► run: store, Web::open, TCP fallback, metrics,
//!  --config FILE┘   (the command line wins;        `ready …` on stdout, Web::run until
//!                    errors name file:line: key)    SIGINT/SIGTERM, final counters
//!  SIGHUP ─► options again ─► Web applies root, keys, rotation, address
//! ```

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use netio::config::Source;
use netio::link::LinkSpec;
use serde::Deserialize;
use toml::Spanned;

use crate::access::AccessLog;
use crate::keys::Keys;
use crate::server::{Bound, Options, Web, parse_listen};
use crate::store::FileStore;
use crate::tcp::{self, TcpStats};

/// The default link: IP-in-UDP on loopback.
pub const DEFAULT_LISTEN: &str = "udp:127.0.0.1:7700";

/// The default key rotation interval, seconds.
pub const DEFAULT_ROTATE_S: u64 = 300;

/// The default number of unanswered requests held.
pub const DEFAULT_QUEUE: usize = 4096;

/// The default MTU of the path to clients.
pub const DEFAULT_MTU: u16 = 1500;

/// The Trickles web server: serves a directory over Trickles — a transport whose server
/// keeps no per-connection state — carried in UDP datagrams (no root needed) or as real
/// IP packets on a TUN device, and optionally over plain TCP too. Several processes given
/// the same key file are interchangeable replicas. Prints `ready udp=… tcp=… metrics=…`
/// on stdout once listening; stops cleanly on SIGINT or SIGTERM; on SIGHUP reads its
/// config again and applies the root, keys, rotation and address (a bad one is logged and
/// the running one kept). Logging: RUST_LOG.
#[derive(clap::Parser, Clone, Debug, Default)]
#[command(name = "trickles-web", version, about)]
pub struct Args {
    /// A TOML config with the same keys as these options (root, keys, listen, tcp,
    /// metrics, pcap, pcap_ring_mb, rotate_s, queue, mtu, address, access_log); options given here
    /// override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The directory to serve.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The key file: a master secret shared by replicas (created, mode 0600, if missing).
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Where Trickles packets arrive, a link: `udp:ADDR` (IP-in-UDP from any client) or
    /// `tun:NAME[,CIDR…]` (a TUN device, root; default udp:127.0.0.1:7700).
    #[arg(long, value_name = "LINK")]
    pub listen: Option<String>,
    /// With udp:ADDR, the inner (IP-level) address served (default: ADDR's IP, and any
    /// inner destination answered). Behind a waist router this is the network's address
    /// of the server (10.2.0.80); replicas with the same address and key file are one
    /// anycast service. Packets to other inner addresses are refused.
    #[arg(long, value_name = "IP")]
    pub address: Option<IpAddr>,
    /// Also serve the directory over plain TCP (HTTP/1.1) at ADDR.
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<SocketAddr>,
    /// Serve Prometheus metrics at ADDR (GET /metrics; 127.0.0.1:0 picks a port).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Capture the Trickles packets into DIR/trickles-web.pcap (unbounded unless
    /// --pcap-ring-mb caps it).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// With a capture: keep at most MB MiB, in trickles-web.pcap (the newest) and
    /// trickles-web.pcap.1 … .3 (older; each a whole pcap), rotated like `tcpdump -C -W`.
    #[arg(long, value_name = "MB")]
    pub pcap_ring_mb: Option<u32>,
    /// Key rotation interval, seconds (default 300; replicas must agree).
    #[arg(long, value_name = "SECS")]
    pub rotate_s: Option<u64>,
    /// Most unanswered requests held (default 4096).
    #[arg(long, value_name = "N")]
    pub queue: Option<usize>,
    /// MTU of the path to clients (default 1500; over UDP the tunnel's 28 bytes come off).
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u16>,
    /// Write an access log in the Common Log Format to FILE (appended; `-`: stderr): one
    /// line per request, over Trickles and over TCP.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Check the configuration and exit.
    #[arg(long)]
    pub check: bool,
    /// Logging: `--log-format text|json`.
    #[command(flatten)]
    pub log: netio::trace::LogArgs,
}

/// The config file: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    root: Option<Spanned<PathBuf>>,
    keys: Option<Spanned<PathBuf>>,
    listen: Option<Spanned<String>>,
    tcp: Option<Spanned<String>>,
    metrics: Option<Spanned<String>>,
    pcap: Option<Spanned<PathBuf>>,
    pcap_ring_mb: Option<Spanned<u32>>,
    rotate_s: Option<Spanned<u64>>,
    queue: Option<Spanned<usize>>,
    mtu: Option<Spanned<u16>>,
    address: Option<Spanned<String>>,
    access_log: Option<Spanned<PathBuf>>,
}

/// The server's options: the config file named by `--config` (if any), then the command
/// line over it, then the defaults.
///
/// # Errors
///
/// An unreadable or malformed config file, a bad value (located: `file:line:column: key
/// `k`: …` when it came from the file), a missing `root` or `keys`, `rotate_s = 0`, an
/// `address` with a TUN link.
pub fn options(args: &Args) -> anyhow::Result<Options> {
    match &args.config {
        Some(path) => {
            let (source, file) = netio::config::load::<File>(path)?;
            merge(args, Some(&source), file)
        }
        None => merge(args, None, File::default()),
    }
}

/// [`options`] with the config file's text given (`source`) instead of read.
///
/// # Errors
///
/// As [`options`].
pub fn options_from(args: &Args, source: &Source) -> anyhow::Result<Options> {
    let file = source.parse::<File>()?;
    merge(args, Some(source), file)
}

/// The command line over `file` (read from `source`), then the defaults.
fn merge(args: &Args, source: Option<&Source>, file: File) -> anyhow::Result<Options> {
    // An error about a value of the file, located there.
    let located = |span: std::ops::Range<usize>, m: String| -> anyhow::Error {
        match source {
            Some(s) => s.error_at(Some(span), m).into(),
            None => anyhow::anyhow!(m),
        }
    };
    let addr = |v: &Option<Spanned<String>>| -> anyhow::Result<Option<SocketAddr>> {
        v.as_ref()
            .map(|v| {
                v.get_ref()
                    .parse()
                    .map_err(|e| located(v.span(), format!("not a socket address: {e}")))
            })
            .transpose()
    };
    let listen = match (&args.listen, &file.listen) {
        (Some(l), _) => parse_listen(l).map_err(|m| anyhow::anyhow!("--listen {m}"))?,
        (None, Some(l)) => parse_listen(l.get_ref()).map_err(|m| located(l.span(), m))?,
        (None, None) => parse_listen(DEFAULT_LISTEN).map_err(|m| anyhow::anyhow!(m))?,
    };
    let address = match (args.address, &file.address) {
        (Some(a), _) => Some(a),
        (None, Some(a)) => Some(
            a.get_ref()
                .parse()
                .map_err(|e| located(a.span(), format!("not an IP address: {e}")))?,
        ),
        (None, None) => None,
    };
    if let (Some(a), LinkSpec::Tun { .. }) = (address, &listen) {
        let m = format!("address {a}: only for udp: links (tun: serves its CIDRs' addresses)");
        return Err(match (args.address, &file.address) {
            (None, Some(from_file)) => located(from_file.span(), m),
            _ => anyhow::anyhow!(m),
        });
    }
    let root = args
        .root
        .clone()
        .or_else(|| file.root.map(Spanned::into_inner))
        .ok_or_else(|| anyhow::anyhow!("--root DIR is required (or `root` in the config)"))?;
    let keys = args
        .keys
        .clone()
        .or_else(|| file.keys.map(Spanned::into_inner))
        .ok_or_else(|| anyhow::anyhow!("--keys FILE is required (or `keys` in the config)"))?;
    let rotate_s = match (args.rotate_s, &file.rotate_s) {
        (Some(0), _) => anyhow::bail!("--rotate-s must be at least 1"),
        (Some(s), _) => s,
        (None, Some(s)) if *s.get_ref() == 0 => {
            return Err(located(s.span(), "must be at least 1".into()));
        }
        (None, Some(s)) => *s.get_ref(),
        (None, None) => DEFAULT_ROTATE_S,
    };
    let (mtu, mtu_in_file) = match (args.mtu, &file.mtu) {
        (Some(m), _) => (m, None),
        (None, Some(m)) => (*m.get_ref(), Some(m.span())),
        (None, None) => (DEFAULT_MTU, None),
    };
    // What the server's start computes from them (its address and MSS), checked here.
    crate::server::path(&listen, address, mtu).map_err(|m| match mtu_in_file {
        Some(span) => located(span, m),
        None => anyhow::anyhow!("--mtu: {m}"),
    })?;
    let ring = |mb: u32| netio::pcap::Ring::megabytes(mb).map_err(|e| e.to_string());
    let pcap = args.pcap.clone().or(file.pcap.map(Spanned::into_inner));
    let pcap_ring = match (args.pcap_ring_mb, &file.pcap_ring_mb) {
        (Some(mb), _) => {
            let r = ring(mb).map_err(|m| anyhow::anyhow!("--pcap-ring-mb {mb}: {m}"))?;
            Some(r)
        }
        (None, Some(mb)) => Some(ring(*mb.get_ref()).map_err(|m| located(mb.span(), m))?),
        (None, None) => None,
    };
    if pcap_ring.is_some() && pcap.is_none() {
        anyhow::bail!("--pcap-ring-mb (or `pcap_ring_mb`) caps a capture: give --pcap DIR too");
    }
    Ok(Options {
        root,
        keys,
        listen,
        tcp: match args.tcp {
            Some(a) => Some(a),
            None => addr(&file.tcp)?,
        },
        metrics: match args.metrics {
            Some(a) => Some(a),
            None => addr(&file.metrics)?,
        },
        pcap,
        pcap_ring,
        rotate: Duration::from_secs(rotate_s),
        queue: args
            .queue
            .or(file.queue.map(Spanned::into_inner))
            .unwrap_or(DEFAULT_QUEUE),
        mtu,
        address,
        access_log: args
            .access_log
            .clone()
            .or(file.access_log.map(Spanned::into_inner)),
    })
}

/// Everything the start checks beyond [`options`] before it binds or opens anything,
/// `--check` and the start alike: the root opened as the store (returned), the key file
/// read (or, missing, a directory to create it in), `pcap` a directory if it exists.
///
/// # Errors
///
/// An unreadable root, a malformed or unreadable key file (named with the line), a
/// capture path that is a file.
pub fn check(opts: &Options) -> anyhow::Result<FileStore> {
    let store = FileStore::open(&opts.root)?;
    Keys::check(&opts.keys)?;
    if let Some(dir) = &opts.pcap
        && dir.exists()
        && !dir.is_dir()
    {
        anyhow::bail!("pcap {}: not a directory", dir.display());
    }
    Ok(store)
}

/// The daemon after its arguments are parsed and tracing is set up: reads the options
/// ([`options`]), makes every other check ([`check`]; with `--check`: prints what it found
/// and returns), binds the link, the TCP fallback and the metrics endpoint, prints the
/// `ready …` line, and serves until SIGINT or SIGTERM, reloading on SIGHUP (the options
/// read again, as [`crate::server::Reload`] says); then logs the final counters.
///
/// # Errors
///
/// Bad options, an unreadable root or key file, an address or device that cannot be
/// bound.
pub async fn run(args: &Args) -> anyhow::Result<()> {
    let opts = options(args)?;
    let store = check(&opts)?;
    if args.check {
        println!("ok: {} files under {}", store.len(), store.root().display());
        return Ok(());
    }
    let (trigger, shutdown) = netio::shutdown::Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    let (reload, reloads) = netio::shutdown::Reloads::new();
    let _hangups = netio::shutdown::on_reload(reload)?;
    let tcp_stats = Arc::new(TcpStats::default());
    let log = AccessLog::open_option(opts.access_log.as_ref())?;
    let (mut web, udp) = Web::open(&opts, store.clone(), tcp_stats.clone(), log.clone()).await?;
    let again = args.clone();
    web.reload_with(reloads, move || options(&again));
    let mut bound = Bound {
        udp,
        address: opts.address,
        ..Bound::default()
    };
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(addr) = opts.tcp {
        let listener = tcp::bind(addr).await?;
        bound.tcp = Some(listener.local_addr()?);
        let mut sd = shutdown.clone();
        tasks.spawn(tcp::serve(listener, store, tcp_stats, log, async move {
            sd.wait().await
        }));
    }
    let scrapes = match opts.metrics {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(netio::metrics::bind_addr(Some(addr)))
                .await
                .map_err(|e| anyhow::anyhow!("--metrics {addr}: {e}"))?;
            bound.metrics = Some(listener.local_addr()?);
            let (handle, scrapes) = netio::metrics::channel();
            let mut sd = shutdown.clone();
            tasks.spawn(async move {
                if let Err(e) =
                    netio::metrics::serve(listener, handle, async move { sd.wait().await }).await
                {
                    tracing::warn!("metrics endpoint: {e}");
                }
            });
            Some(scrapes)
        }
        None => None,
    };
    println!("{bound}");
    let mut sd = shutdown.clone();
    let stats = web.run(async move { sd.wait().await }, scrapes).await?;
    while tasks.join_next().await.is_some() {}
    tracing::info!("stopped: {stats}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn args(line: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("trickles-web").chain(line.iter().copied())).unwrap()
    }

    fn file(text: &str) -> Source {
        Source::new("web.toml", text)
    }

    #[test]
    fn defaults_with_only_the_required_options() {
        let o = options(&args(&["--root", "/srv", "--keys", "/k"])).unwrap();
        assert_eq!(o.root, PathBuf::from("/srv"));
        assert_eq!(o.keys, PathBuf::from("/k"));
        assert_eq!(o.listen, parse_listen(DEFAULT_LISTEN).unwrap());
        assert_eq!(o.rotate, Duration::from_secs(DEFAULT_ROTATE_S));
        assert_eq!((o.queue, o.mtu), (DEFAULT_QUEUE, DEFAULT_MTU));
        assert_eq!((o.tcp, o.metrics, o.address), (None, None, None));
        assert!(o.pcap.is_none());
    }

    #[test]
    fn the_capture_ring_comes_from_either_place_and_bad_sizes_are_located() {
        let base = ["--root", "/srv", "--keys", "/k", "--pcap", "/cap"];
        assert!(options(&args(&base)).unwrap().pcap_ring.is_none());
        let o = options(&args(&[&base[..], &["--pcap-ring-mb", "8"]].concat())).unwrap();
        assert_eq!(o.pcap_ring, Some(netio::pcap::Ring::megabytes(8).unwrap()));
        let from_file = options_from(&args(&base), &file("pcap_ring_mb = 2\n")).unwrap();
        assert_eq!(
            from_file.pcap_ring,
            Some(netio::pcap::Ring::megabytes(2).unwrap())
        );
        let err = options_from(&args(&base), &file("\npcap_ring_mb = 0\n"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("web.toml:2:16: "), "{err}");
        let err = options(&args(&[&base[..], &["--pcap-ring-mb", "0"]].concat()))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--pcap-ring-mb 0: "), "{err}");
        let err = options(&args(&[
            "--root",
            "/srv",
            "--keys",
            "/k",
            "--pcap-ring-mb",
            "8",
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("give --pcap DIR too"), "{err}");
    }

    #[test]
    fn the_command_line_overrides_the_config_file() {
        let text = "root = \"/from-file\"\nkeys = \"/file-keys\"\nlisten = \"udp:127.0.0.1:9000\"\n\
                    tcp = \"127.0.0.1:8080\"\nrotate_s = 60\nqueue = 10\nmtu = 9000\n\
                    address = \"10.2.0.80\"\npcap = \"/cap\"\n";
        let from_file = options_from(&args(&[]), &file(text)).unwrap();
        assert_eq!(from_file.root, PathBuf::from("/from-file"));
        assert_eq!(
            from_file.listen,
            parse_listen("udp:127.0.0.1:9000").unwrap()
        );
        assert_eq!(from_file.tcp, Some("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(from_file.rotate, Duration::from_secs(60));
        assert_eq!((from_file.queue, from_file.mtu), (10, 9000));
        assert_eq!(from_file.address, Some("10.2.0.80".parse().unwrap()));
        assert_eq!(from_file.pcap, Some(PathBuf::from("/cap")));
        let cli = args(&[
            "--root",
            "/cli",
            "--listen",
            "udp:127.0.0.1:9001",
            "--tcp",
            "127.0.0.1:8081",
            "--rotate-s",
            "5",
            "--queue",
            "20",
            "--mtu",
            "1400",
            "--address",
            "10.2.0.81",
        ]);
        let o = options_from(&cli, &file(text)).unwrap();
        assert_eq!(o.root, PathBuf::from("/cli"));
        assert_eq!(o.keys, PathBuf::from("/file-keys"), "not given: the file's");
        assert_eq!(o.listen, parse_listen("udp:127.0.0.1:9001").unwrap());
        assert_eq!(o.tcp, Some("127.0.0.1:8081".parse().unwrap()));
        assert_eq!(o.rotate, Duration::from_secs(5));
        assert_eq!((o.queue, o.mtu), (20, 1400));
        assert_eq!(o.address, Some("10.2.0.81".parse().unwrap()));
        // A bad value in the file is not looked at when the command line gives its own.
        let bad = text
            .replace("udp:127.0.0.1:9000", "nowhere")
            .replace("127.0.0.1:8080", "nowhere");
        assert!(options_from(&cli, &file(&bad)).is_ok());
        assert!(options_from(&args(&[]), &file(&bad)).is_err());
    }

    #[test]
    fn errors_in_the_file_name_file_line_and_key() {
        let base = "root = \"/r\"\nkeys = \"/k\"\n";
        for (extra, key, message) in [
            ("tcp = \"nowhere\"", "tcp", "not a socket address"),
            ("metrics = \"1.2.3.4\"", "metrics", "not a socket address"),
            ("address = \"ten\"", "address", "not an IP address"),
            (
                "listen = \"udp:127.0.0.1:1=127.0.0.1:2\"",
                "listen",
                "many peers",
            ),
            ("rotate_s = 0", "rotate_s", "at least 1"),
            (
                "listen = \"tun:tw0\"\naddress = \"10.0.0.1\"",
                "address",
                "only for udp",
            ),
            ("mtu = \"big\"", "mtu", "invalid type"),
            ("mtu = 100", "mtu", "MTU 100 leaves no room for data"),
            ("rotate = 5", "rotate", "did you mean `rotate_s`?"),
            ("colour = 1", "colour", "unknown field"),
        ] {
            let text = format!("{base}{extra}\n");
            let e = options_from(&args(&[]), &file(&text))
                .unwrap_err()
                .to_string();
            let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
            assert!(
                e.starts_with(&format!("web.toml:{line}:")) && e.contains(&format!("key `{key}`")),
                "{extra}: {e}"
            );
            assert!(e.contains(message), "{extra}: {e}");
        }
    }

    #[test]
    fn errors_on_the_command_line_name_the_option() {
        let e = options(&args(&["--keys", "/k"])).unwrap_err().to_string();
        assert!(e.contains("--root"), "{e}");
        let e = options(&args(&["--root", "/r"])).unwrap_err().to_string();
        assert!(e.contains("--keys"), "{e}");
        let base = ["--root", "/r", "--keys", "/k"];
        let with = |more: &[&str]| {
            let line: Vec<&str> = base.iter().chain(more).copied().collect();
            options(&args(&line)).unwrap_err().to_string()
        };
        assert!(with(&["--rotate-s", "0"]).contains("--rotate-s"));
        assert_eq!(with(&["--mtu", "67"]), "--mtu: MTU 67 not in 68..=65535");
        assert!(with(&["--listen", "udp:127.0.0.1:1=127.0.0.1:2"]).contains("--listen"));
        assert!(with(&["--listen", "tun:tw0", "--address", "10.0.0.1"]).contains("only for udp"));
        // A config file that does not exist is named.
        let e = with(&["--config", "/nonexistent/web.toml"]);
        assert!(e.contains("/nonexistent/web.toml"), "{e}");
    }
}
