//! The network-processor paper's Figs. 4 and 5 on real processes: stream handlers in the
//! router against the same handlers in a stream host process.
//!
//! ```text
//! cargo build --release -p waist-router
//! cargo run --release -p waist-router --example stream_figs -- [--quick] [--plain] [--out FILE]
//! ```
//!
//! Starts two `waist-router` processes from the binary beside this example: the router
//! (a publisher link, a host link, eight subscriber links) and the stream host
//! (`waist_router::streams::host_config`). The publisher and the subscribers are sockets
//! in this process, sending and receiving IP packets in UDP datagrams on the router's
//! links. Each handler is deployed twice in the one router: on stream 1 while admission
//! has headroom (it runs in the router), then, with the provisioned rate raised by a
//! `SetRate` control message so the headroom is 0, on stream 2 (the router passes its
//! fragments to the host, which runs it and sends the output back through the router).
//! Measurements alternate between the two so noise hits both alike.
//!
//! * Fig. 4: latency of content routing to one subscriber, one message at a time, per size.
//! * Fig. 5: throughput of each handler at 1, 10 and 50 kB with at most [`WINDOW`]
//!   messages under way; then customised multicast at 50 kB to 2, 4 and 8 subscribers.
//!
//! The publisher sends each message in UDP GSO runs (`--plain`: one datagram a system
//! call) and the subscribers read with recvmmsg/GRO, as the router's links do.
//!
//! The report (stdout, and Markdown with `--out`) puts the paper's numbers beside ours and
//! the router's and host's stream counters that show which path ran.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // measurement driver

#[path = "stream_figs/bench.rs"]
mod bench;
#[path = "stream_figs/procs.rs"]
mod procs;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use bench::{Bench, Block, HOST, sub_addr};
use procs::Procs;
use stream_handlers::envelope::Status;
use stream_handlers::spec::Spec;

/// Messages under way at once in a throughput run.
const WINDOW: usize = 16;
/// Alternations of router and host in a throughput measurement.
const ROUNDS: usize = 4;
/// Subscriber links the router has.
const SUBS: usize = 8;
/// Stream ids: in the router, on the host.
const ROUTER_STREAM: u16 = 1;
const HOST_STREAM: u16 = 2;
/// Rates for `SetRate`: plenty of headroom; none (a 1 ns budget).
const ROOMY_PPS: u32 = 1_000;
const FULL_PPS: u32 = 1_000_000_000;

/// Fig. 4's sizes and the paper's latencies there (µs): host, IXP.
const FIG4: [(usize, f64, f64); 6] = [
    (100, 36.0, 34.0),
    (1_000, 83.0, 82.0),
    (1_500, 132.0, 132.0),
    (10_000, 896.0, 854.0),
    (50_000, 6_800.0, 5_600.0),
    (100_000, 16_400.0, 11_900.0),
];
/// Fig. 5's sizes.
const FIG5_SIZES: [usize; 3] = [1_000, 10_000, 50_000];
/// Fig. 5's handlers: name, spec (after `to`, `S0`/`S1` the subscribers), the paper's claim.
const FIG5: [(&str, &str, &str); 6] = [
    (
        "route",
        "S0 | fields flight | route flight default=0",
        "IXP ≥ host",
    ),
    ("mirror", "S0 S1 | mirror", "IXP ≥ host; host at 50 kB −7 %"),
    (
        "filter",
        "S0 | fields flight | filter flight<5000",
        "IXP ≥ host",
    ),
    (
        "multicast",
        "S0 S1 | fields flight | multicast 0=flight<5000 1=flight>=2500",
        "50 kB: IXP 1.25× host",
    ),
    ("delta", "S0 | fields flight | delta 20 1", "IXP ≥ host"),
    ("format", "S0 | byteswap", "host ahead as size grows"),
];

struct Opts {
    quick: bool,
    plain: bool,
    out: Option<String>,
}

fn main() -> ExitCode {
    netio::trace::report(run())
}

fn run() -> anyhow::Result<()> {
    let mut opts = Opts {
        quick: false,
        plain: false,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--plain" => opts.plain = true,
            "--out" => opts.out = Some(args.next().context("--out needs a file")?),
            _ => anyhow::bail!("unknown argument {a:?} (use --quick, --plain, --out FILE)"),
        }
    }
    let bin = procs::router_binary()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = std::env::temp_dir().join(format!("stream-figs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // On SIGINT or SIGTERM the measurement is dropped, and with it the daemons.
    let report = rt
        .block_on(async {
            tokio::select! {
                r = figs(&bin, &dir, &opts) => r,
                () = interrupted() => Err(anyhow::anyhow!("interrupted")),
            }
        })
        .with_context(|| format!("configs and logs of the daemons in {}", dir.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    println!("{report}");
    if let Some(path) = &opts.out {
        std::fs::write(path, &report).with_context(|| format!("writing {path}"))?;
    }
    Ok(())
}

/// Returns on SIGINT or SIGTERM (never, if they cannot be caught).
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn free() -> anyhow::Result<SocketAddr> {
    Ok(netio::ports::udp([127, 0, 0, 1].into())?)
}

fn link(name: &str, local: SocketAddr, peer: SocketAddr) -> String {
    format!("[[link]]\nname = \"{name}\"\non = \"udp:{local}={peer}\"\n\n")
}

fn route(prefix: &str, link: &str) -> String {
    format!("[[route]]\nprefix = \"{prefix}\"\nlink = \"{link}\"\n\n")
}

/// A spec with `S0`… replaced by the subscribers' stream addresses.
fn spec(tail: &str) -> String {
    let mut s = format!("to {tail}");
    for i in (0..SUBS).rev() {
        s = s.replace(&format!("S{i}"), &format!("{}:7400", sub_addr(i)));
    }
    s
}

fn multicast_spec(n: usize) -> String {
    let to: Vec<String> = (0..n).map(|i| format!("S{i}")).collect();
    let preds: Vec<String> = (0..n)
        .map(|i| {
            let lo = i * 5_000 / n;
            format!("{i}=flight in {lo}..{}", lo + 4_999)
        })
        .collect();
    spec(&format!(
        "{} | fields flight | multicast {}",
        to.join(" "),
        preds.join(" ")
    ))
}

/// The two daemons, the sockets, and everything measured.
struct World {
    procs: Procs,
    router_metrics: SocketAddr,
    host_metrics: SocketAddr,
    bench: Bench,
}

/// The daemons (configs and logs in `dir`) and the sockets.
async fn world(bin: &Path, dir: &Path, plain: bool) -> anyhow::Result<World> {
    let publisher = bench::socket()?;
    let subs = (0..SUBS)
        .map(|_| bench::socket())
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (rp, h, rh) = (free()?, free()?, free()?);
    let mut r = format!(
        "[node]\nname = \"r1\"\naddresses = [\"{}\"]\n\n[streams]\nhost = \"{HOST}\"\n\
         rate_pps = {ROOMY_PPS}\nshare_percent = 50\noverrun_messages = 4000000000\n\n",
        bench::ROUTER
    );
    r += &link("pub", rp, publisher.0.local_addr()?);
    r += &link("host", rh, h);
    r += &route(&format!("{}/32", bench::PUBLISHER), "pub");
    r += &route(&format!("{HOST}/32"), "host");
    let mut sub_links = Vec::new();
    for (i, s) in subs.iter().enumerate() {
        let rs = free()?;
        r += &link(&format!("s{i}"), rs, s.0.local_addr()?);
        r += &route(&format!("{}/32", sub_addr(i)), &format!("s{i}"));
        sub_links.push(rs);
    }
    let host = waist_router::streams::host_config("sh", HOST.into(), &format!("udp:{h}={rh}"));
    let mut procs = Procs::default();
    let host_metrics = procs.start(bin, dir, "host", &host)?;
    let router_metrics = procs.start(bin, dir, "router", &r)?;
    publisher.0.connect(rp).await?;
    for (s, rs) in subs.iter().zip(sub_links) {
        s.0.connect(rs).await?;
    }
    Ok(World {
        procs,
        router_metrics,
        host_metrics,
        bench: Bench::new(publisher, rp, subs, !plain),
    })
}

impl World {
    /// Deploys `spec` in the router (stream 1) and on the host (stream 2).
    async fn deploy_both(&mut self, spec: &str) -> anyhow::Result<()> {
        self.bench.set_rate(ROOMY_PPS).await?;
        self.bench
            .deploy(ROUTER_STREAM, spec, Status::OnNode)
            .await?;
        self.bench.set_rate(FULL_PPS).await?;
        self.bench.deploy(HOST_STREAM, spec, Status::OnHost).await?;
        // The host gets its deployment before the data.
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(())
    }

    /// The router's measured cost of stream 1's handlers, ns a packet; fails unless
    /// stream 1 is in the router and stream 2 on the host.
    async fn check_placement(&mut self) -> anyhow::Result<f64> {
        self.procs.check()?;
        let m = procs::scrape(self.router_metrics).await?;
        let a = procs::placement(&m, ROUTER_STREAM);
        let b = procs::placement(&m, HOST_STREAM);
        match (a, b) {
            (Some((pa, cost)), Some((pb, _))) if pa == "router" && pb == "host" => Ok(cost),
            other => anyhow::bail!("streams not where they were deployed: {other:?}"),
        }
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median_mean(b: &Block) -> (f64, f64) {
    let mut v: Vec<f64> = b.latencies.iter().map(|&d| us(d)).collect();
    v.sort_by(f64::total_cmp);
    let med = v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    (med, mean)
}

/// Messages a second, and Mbit/s of input.
fn rate(b: &Block, size: usize) -> (f64, f64) {
    let s = b.elapsed.as_secs_f64().max(1e-9);
    let mps = b.completed as f64 / s;
    (mps, mps * size as f64 * 8.0 / 1e6)
}

async fn fig4(w: &mut World, quick: bool, r: &mut String) -> anyhow::Result<(f64, f64)> {
    let (warm, n) = if quick { (2, 10) } else { (10, 200) };
    let spec_text = spec("S0 | fields flight | route flight default=0");
    let parsed: Spec = spec_text.parse()?;
    w.deploy_both(&spec_text).await?;
    writeln!(
        r,
        "## Fig. 4: latency, application-level routing to one subscriber\n\n\
         `{spec_text}`; one message at a time, {n} a size a path after {warm} warm-up, \
         alternating router and host message by message; latency from the first fragment's \
         send to the last fragment's arrival.\n\n\
         | size | paper host | paper IXP | paper less | host median (mean) µs | router median (mean) µs | host/router | less | lost r/h |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    let mut less = (0.0, 0.0);
    for (size, ph, pi) in FIG4 {
        let a = w.bench.prepare(ROUTER_STREAM, &parsed, size, warm + n)?;
        let b = w.bench.prepare(HOST_STREAM, &parsed, size, warm + n)?;
        let (mut ra, mut rb) = (Block::default(), Block::default());
        for i in 0..warm + n {
            let x = w
                .bench
                .run(ROUTER_STREAM, std::slice::from_ref(&a[i]), 1)
                .await?;
            let y = w
                .bench
                .run(HOST_STREAM, std::slice::from_ref(&b[i]), 1)
                .await?;
            if i >= warm {
                ra.add(x);
                rb.add(y);
            }
        }
        let (am, aa) = median_mean(&ra);
        let (bm, ba) = median_mean(&rb);
        let pct = 100.0 * (1.0 - am / bm);
        if size == 50_000 {
            less.0 = pct;
        }
        if size == 100_000 {
            less.1 = pct;
        }
        eprintln!("fig4 {size} B: router {am:.0} µs, host {bm:.0} µs");
        writeln!(
            r,
            "| {size} B | {ph:.0} | {pi:.0} | {:.0} % | {bm:.0} ({ba:.0}) | {am:.0} ({aa:.0}) | {:.2} | {pct:.0} % | {}/{} |",
            100.0 * (1.0 - pi / ph),
            bm / am,
            ra.lost,
            rb.lost
        )?;
    }
    w.check_placement().await?;
    Ok(less)
}

/// `msgs` on `stream` through [`Bench::run`], with the CPU time each process used.
async fn timed(
    w: &mut World,
    stream: u16,
    msgs: &[bench::Prepared],
    window: usize,
) -> anyhow::Result<Block> {
    let pids = [None, w.procs.pid("router"), w.procs.pid("host")];
    let before = pids.map(procs::cpu_ns);
    let mut b = w.bench.run(stream, msgs, window).await?;
    let after = pids.map(procs::cpu_ns);
    for i in 0..3 {
        b.cpu_ns[i] = after[i].saturating_sub(before[i]);
    }
    Ok(b)
}

/// CPU time a message on the host path over that on the router path (all processes).
fn cpu_ratio(router: &Block, host: &Block) -> f64 {
    let per = |b: &Block| b.cpu_ns.iter().sum::<u64>() as f64 / b.sent.max(1) as f64;
    per(host) / per(router).max(1e-9)
}

/// CPU µs a message: harness, router, host.
fn cpu(b: &Block) -> String {
    let per = |ns: u64| ns as f64 / 1e3 / b.sent.max(1) as f64;
    format!(
        "{:.1}, {:.1}, {:.1}",
        per(b.cpu_ns[0]),
        per(b.cpu_ns[1]),
        per(b.cpu_ns[2])
    )
}

/// Both paths on `spec_text` at `size`, in [`ROUNDS`] rounds of `n / ROUNDS` messages a
/// path: router then host, then host then router, and so on.
async fn throughput(
    w: &mut World,
    spec_text: &str,
    size: usize,
    n: usize,
) -> anyhow::Result<(Block, Block)> {
    let parsed: Spec = spec_text.parse()?;
    let part = n.div_ceil(ROUNDS);
    let (mut ra, mut rb) = (Block::default(), Block::default());
    for round in 0..ROUNDS {
        let a = w.bench.prepare(ROUTER_STREAM, &parsed, size, part)?;
        let b = w.bench.prepare(HOST_STREAM, &parsed, size, part)?;
        if round % 2 == 0 {
            ra.add(timed(w, ROUTER_STREAM, &a, WINDOW).await?);
            rb.add(timed(w, HOST_STREAM, &b, WINDOW).await?);
        } else {
            rb.add(timed(w, HOST_STREAM, &b, WINDOW).await?);
            ra.add(timed(w, ROUTER_STREAM, &a, WINDOW).await?);
        }
    }
    Ok((ra, rb))
}

fn loss(a: &Block, b: &Block) -> String {
    format!("{}/{} ({}/{})", a.lost, b.lost, a.unexpected, b.unexpected)
}

async fn fig5(w: &mut World, quick: bool, r: &mut String) -> anyhow::Result<()> {
    writeln!(
        r,
        "## Fig. 5: throughput per handler\n\n\
         Flight records, at most {WINDOW} messages under way; {ROUNDS} rounds alternating \
         router and host (router first, then host first, …). Mbit/s of input; lost = messages some subscriber did not get whole \
         (router/host; in brackets fragments no handler sent there). Handler ns/pkt is the \
         router's own measure of the handlers' cost a packet; CPU µs/msg is the CPU time \
         the harness, the router and the host used a message on each path (on loopback a \
         sender's CPU time includes the kernel's delivery to the receiving socket); CPU h/r \
         is the host path's total over the router path's, a measure the other load on the \
         machine hardly moves.\n\n\
         | handler | size | router msg/s | router Mbit/s | host msg/s | host Mbit/s | router/host | lost r/h | handler ns/pkt | CPU µs/msg, router path | CPU µs/msg, host path | CPU h/r | paper |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )?;
    for (name, tail, claim) in FIG5 {
        let spec_text = spec(tail);
        w.deploy_both(&spec_text).await?;
        for size in FIG5_SIZES {
            let n = (120_000_000 / size).clamp(2_000, 30_000) / if quick { 100 } else { 1 };
            let (a, b) = throughput(w, &spec_text, size, n).await?;
            let cost = w.check_placement().await?;
            let ((am, ab), (bm, bb)) = (rate(&a, size), rate(&b, size));
            eprintln!("fig5 {name} {size} B: router {am:.0}/s, host {bm:.0}/s");
            writeln!(
                r,
                "| {name} | {size} B | {am:.0} | {ab:.1} | {bm:.0} | {bb:.1} | {:.2} | {} | {cost:.0} | {} | {} | {:.2} | {claim} |",
                am / bm,
                loss(&a, &b),
                cpu(&a),
                cpu(&b),
                cpu_ratio(&a, &b)
            )?;
        }
    }
    Ok(())
}

async fn multicast(w: &mut World, quick: bool, r: &mut String) -> anyhow::Result<f64> {
    let size = 50_000;
    let n = if quick { 20 } else { 4_000 };
    writeln!(
        r,
        "\n## Customised multicast at 50 kB to 2, 4 and 8 subscribers\n\n\
         Subscriber i takes flights in a window of half the range, shifted by i; {n} messages \
         a path.\n\n\
         | subscribers | router msg/s | router Mbit/s | host msg/s | host Mbit/s | router/host | copies r/h | lost r/h | CPU µs/msg, router path | CPU µs/msg, host path | CPU h/r |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    let mut two = 0.0;
    for subs in [2, 4, 8] {
        let spec_text = multicast_spec(subs);
        w.deploy_both(&spec_text).await?;
        let (a, b) = throughput(w, &spec_text, size, n).await?;
        w.check_placement().await?;
        let ((am, ab), (bm, bb)) = (rate(&a, size), rate(&b, size));
        if subs == 2 {
            two = am / bm;
        }
        eprintln!("multicast {subs}: router {am:.0}/s, host {bm:.0}/s");
        writeln!(
            r,
            "| {subs} | {am:.0} | {ab:.1} | {bm:.0} | {bb:.1} | {:.2} | {}/{} | {} | {} | {} | {:.2} |",
            am / bm,
            a.copies,
            b.copies,
            loss(&a, &b),
            cpu(&a),
            cpu(&b),
            cpu_ratio(&a, &b)
        )?;
    }
    Ok(two)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

async fn figs(bin: &Path, dir: &Path, opts: &Opts) -> anyhow::Result<String> {
    let mut w = world(bin, dir, opts.plain).await?;
    let started = Instant::now();
    let mut r = format!(
        "# Stream handlers on real processes: the paper's Figs. 4 and 5\n\n\
         Router and stream host are `waist-router` processes ({}); publisher and subscribers \
         are sockets of the harness on the router's IP-in-UDP loopback links; 1400-byte \
         fragments, {}.{}\n\n",
        bin.display(),
        if opts.plain {
            "the publisher sending one datagram a system call (`--plain`)"
        } else {
            "the publisher sending each message in UDP GSO runs of up to 44 datagrams, the \
             subscribers reading with recvmmsg/GRO (as the router's links do)"
        },
        if opts.quick {
            " `--quick`: few messages."
        } else {
            ""
        }
    );
    let less = fig4(&mut w, opts.quick, &mut r).await?;
    r.push('\n');
    fig5(&mut w, opts.quick, &mut r).await?;
    let two = multicast(&mut w, opts.quick, &mut r).await?;
    let rm = procs::scrape(w.router_metrics).await?;
    let hm = procs::scrape(w.host_metrics).await?;
    let counters = [
        ("router", "waist_stream_messages_total", &rm),
        ("router", "waist_stream_to_host_total", &rm),
        ("router", "waist_stream_fragments_out_total", &rm),
        ("host", "waist_stream_messages_total", &hm),
        ("host", "waist_stream_fragments_out_total", &hm),
    ];
    writeln!(r, "\n## Which path ran (counters at the end)\n")?;
    for (who, name, text) in counters {
        writeln!(r, "* {who} `{name}` = {}", procs::value(text, name))?;
    }
    let ran = procs::value(&rm, "waist_stream_messages_total") > 0.0
        && procs::value(&rm, "waist_stream_to_host_total") > 0.0
        && procs::value(&hm, "waist_stream_messages_total") > 0.0;
    if !ran {
        anyhow::bail!("the counters do not show both paths running");
    }
    writeln!(
        r,
        "\n## Goals\n\n\
         * Fig. 4, 50 kB: paper IXP 18 % less latency than the host; ours {:.0} % → {}\n\
         * Fig. 4, 100 kB: paper IXP 27 % less; ours {:.0} % → {}\n\
         * Customised multicast, 50 kB, two subscribers: paper IXP 1.25× the host; ours {two:.2}× → {}\n\n\
         Run time {:.0} s.",
        less.0,
        verdict(less.0 >= 18.0),
        less.1,
        verdict(less.1 >= 27.0),
        verdict(two >= 1.25),
        started.elapsed().as_secs_f64()
    )?;
    Ok(r)
}
