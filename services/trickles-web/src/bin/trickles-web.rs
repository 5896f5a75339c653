//! `trickles-web --root DIR --keys FILE [--listen udp:ADDR | tun:NAME[,CIDR]] [--address IP]
//! [--tcp ADDR]`
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use netio::link::LinkSpec;
use serde::Deserialize;
use toml::Spanned;
use trickles_web::server::{Bound, Options, Web, parse_listen};
use trickles_web::store::FileStore;
use trickles_web::tcp::{self, TcpStats};

/// The Trickles web server: serves a directory over Trickles — a transport whose server
/// keeps no per-connection state — carried in UDP datagrams (no root needed) or as real
/// IP packets on a TUN device, and optionally over plain TCP too. Several processes given
/// the same key file are interchangeable replicas. Prints `ready udp=… tcp=… metrics=…`
/// on stdout once listening; stops cleanly on SIGINT or SIGTERM. Logging: RUST_LOG.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A TOML config with the same keys as these options (root, keys, listen, tcp,
    /// metrics, pcap, rotate_s, queue, mtu, address); options given here override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The directory to serve.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The key file: a master secret shared by replicas (created, mode 0600, if missing).
    #[arg(long, value_name = "FILE")]
    keys: Option<PathBuf>,
    /// Where Trickles packets arrive, a link: `udp:ADDR` (IP-in-UDP from any client) or
    /// `tun:NAME[,CIDR…]` (a TUN device, root; default udp:127.0.0.1:7700).
    #[arg(long, value_name = "LINK")]
    listen: Option<String>,
    /// With udp:ADDR, the inner (IP-level) address served (default: ADDR's IP, and any
    /// inner destination answered). Behind a waist router this is the network's address
    /// of the server (10.2.0.80); replicas with the same address and key file are one
    /// anycast service. Packets to other inner addresses are refused.
    #[arg(long, value_name = "IP")]
    address: Option<IpAddr>,
    /// Also serve the directory over plain TCP (HTTP/1.1) at ADDR.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<SocketAddr>,
    /// Serve Prometheus metrics at ADDR (GET /metrics; 127.0.0.1:0 picks a port).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Capture the Trickles packets into DIR/trickles-web.pcap.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Key rotation interval, seconds (default 300; replicas must agree).
    #[arg(long, value_name = "SECS")]
    rotate_s: Option<u64>,
    /// Most unanswered requests held (default 4096).
    #[arg(long, value_name = "N")]
    queue: Option<usize>,
    /// MTU of the path to clients (default 1500; over UDP the tunnel's 28 bytes come off).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<u16>,
    /// Check the configuration and exit.
    #[arg(long)]
    check: bool,
}

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    root: Option<Spanned<PathBuf>>,
    keys: Option<Spanned<PathBuf>>,
    listen: Option<Spanned<String>>,
    tcp: Option<Spanned<String>>,
    metrics: Option<Spanned<String>>,
    pcap: Option<Spanned<PathBuf>>,
    rotate_s: Option<Spanned<u64>>,
    queue: Option<Spanned<usize>>,
    mtu: Option<Spanned<u16>>,
    address: Option<Spanned<String>>,
}

/// The options from the config file, then the command line.
fn options(args: &Args) -> anyhow::Result<Options> {
    let (source, file) = match &args.config {
        Some(path) => {
            let (s, f) = netio::config::load::<File>(path)?;
            (Some(s), f)
        }
        None => (None, File::default()),
    };
    let located = |v: &Spanned<String>, m: String| -> anyhow::Error {
        match &source {
            Some(s) => s.error_for(v, m).into(),
            None => anyhow::anyhow!(m),
        }
    };
    let addr = |v: &Option<Spanned<String>>| -> anyhow::Result<Option<SocketAddr>> {
        v.as_ref()
            .map(|v| {
                v.get_ref()
                    .parse()
                    .map_err(|e| located(v, format!("not a socket address: {e}")))
            })
            .transpose()
    };
    let listen = match (&args.listen, &file.listen) {
        (Some(l), _) => parse_listen(l).map_err(|m| anyhow::anyhow!("--listen {m}"))?,
        (None, Some(l)) => parse_listen(l.get_ref()).map_err(|m| located(l, m))?,
        (None, None) => LinkSpec::Udp {
            local: SocketAddr::from(([127, 0, 0, 1], 7700)),
            peer: None,
        },
    };
    let address = match (args.address, &file.address) {
        (Some(a), _) => Some(a),
        (None, Some(a)) => Some(
            a.get_ref()
                .parse()
                .map_err(|e| located(a, format!("not an IP address: {e}")))?,
        ),
        (None, None) => None,
    };
    if let (Some(a), LinkSpec::Tun { .. }) = (address, &listen) {
        anyhow::bail!("address {a}: only for udp: links (tun: serves its CIDRs' addresses)");
    }
    let root = args
        .root
        .clone()
        .or_else(|| file.root.map(Spanned::into_inner))
        .ok_or_else(|| anyhow::anyhow!("--root DIR is required"))?;
    let keys = args
        .keys
        .clone()
        .or_else(|| file.keys.map(Spanned::into_inner))
        .ok_or_else(|| anyhow::anyhow!("--keys FILE is required"))?;
    let rotate_s = args
        .rotate_s
        .or(file.rotate_s.as_ref().map(|v| *v.get_ref()))
        .unwrap_or(300);
    if rotate_s == 0 {
        anyhow::bail!("rotate_s must be at least 1");
    }
    Ok(Options {
        root,
        keys,
        listen,
        tcp: args.tcp.or(addr(&file.tcp)?),
        metrics: args.metrics.or(addr(&file.metrics)?),
        pcap: args.pcap.clone().or(file.pcap.map(Spanned::into_inner)),
        rotate: Duration::from_secs(rotate_s),
        queue: args
            .queue
            .or(file.queue.map(Spanned::into_inner))
            .unwrap_or(4096),
        mtu: args
            .mtu
            .or(file.mtu.map(Spanned::into_inner))
            .unwrap_or(1500),
        address,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    netio::trace::init("info")?;
    let opts = options(&args)?;
    let store = FileStore::open(&opts.root)?;
    if args.check {
        println!("ok: {} files under {}", store.len(), store.root().display());
        return Ok(());
    }
    let (trigger, shutdown) = netio::shutdown::Shutdown::new();
    let _signals = netio::shutdown::on_signals(trigger)?;
    let tcp_stats = Arc::new(TcpStats::default());
    let (mut web, udp) = Web::open(&opts, store.clone(), tcp_stats.clone()).await?;
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
        tasks.spawn(tcp::serve(listener, store, tcp_stats, async move {
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
    tracing::info!(
        packets = stats.packets,
        events = stats.events,
        responses = stats.responses,
        refused = stats.rejected.total(),
        other_address = web.other_address(),
        "bye"
    );
    Ok(())
}
