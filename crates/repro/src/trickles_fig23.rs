//! Trickles paper Fig. 23 (§6.1, "Optimizations"): pipelined transfers on one connection,
//! SKIP alone against SKIP with parallel requests against TCP.
//!
//! **Setup.** 100 Mb/s each way, RTT 10 ms, a drop-tail queue of one bandwidth-delay
//! product; one client with 10 outstanding pipelined requests for objects of one size. Each
//! object owns a region of the output space twice its size, so the server sends a SKIP for
//! the second half (the paper: "the server sent SKIP notifications when 50% of the file was
//! transmitted"). Server application: [`PipelineApp`].
//!
//! * **SKIP only** (the sockets interface): the requests go out as one byte stream; the
//!   server reads it through input continuations, one request per request packet, so the
//!   client learns one object's output continuation per round trip.
//! * **SKIP + parallel requests** (`msk_request`, here [`Client::request`]): each request
//!   rides in a packet of its own and the server answers each on its own, so the client
//!   learns the objects' continuations as fast as it can send requests.
//! * **SKIP only, objects in four regions** (ours, not in the paper): as SKIP only, but each
//!   region is a quarter of the object, so every object overflows three times and goes on
//!   through fresh input continuations into fresh regions (§5.2); it measures what
//!   objects of unknown length cost when regions are chosen too small.
//! * **TCP**: smoltcp's TCP (Reno, MSS 1460, window capped at 1.5 BDP so it does not
//!   overflow the queue) fetching the same bytes as one pipelined stream after the
//!   request, as HTTP/1.1 pipelining would.
//!
//! Throughput is the objects' bytes over the time from the SYN to the last byte. The paper
//! gives Fig. 23's shape in words — with 20 KB objects (smaller than the bandwidth-delay
//! product) SKIP alone cannot get continuations fast enough to fill the link, and parallel
//! requests bring Trickles close to TCP — and one number: 250 KB objects, SKIP alone,
//! Trickles 86 Mb/s against TCP 91 Mb/s.
//!
//! [`Client::request`]: trickles::client::Client::request

use std::io::Write;

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::app::{AppRun, PipelineApp, run_app};
use trickles::sim::{self, LinkConfig, Transfer, tcp};

use crate::common::{Options, plot_and_check};
use crate::plot::{Chart, Series};

/// Pipelined requests outstanding.
pub const OBJECTS: u64 = 10;
/// One-way delay (µs): RTT 10 ms.
pub const DELAY_US: u64 = 5_000;

/// Our extra column: SKIP alone with regions a quarter of the object, so every object
/// overflows its region three times and goes on through fresh input continuations (§5.2).
pub const OVERFLOW_PARTS: u64 = 4;

/// One object size's results, Mb/s.
#[derive(Clone, Copy, Debug, Default)]
pub struct Row {
    /// Object size, bytes.
    pub size: u64,
    /// Trickles, SKIP only.
    pub skip: f64,
    /// Trickles, SKIP + parallel requests.
    pub parallel: f64,
    /// Trickles, SKIP only, regions of a quarter object (each object in four parts).
    pub overflow: f64,
    /// smoltcp TCP.
    pub tcp: f64,
    /// Every transfer complete and byte-exact.
    pub exact: bool,
}

fn link() -> LinkConfig {
    // 100 Mb/s: 100 bits per µs tick; a queue of one BDP (10 ms at 100 Mb/s = 125 KB).
    LinkConfig::with_delay(DELAY_US).rate(100, 10_000)
}

fn trickles(size: u64, region: u64, parallel: bool, seed: u64) -> (f64, bool) {
    let mut run = AppRun::new(DELAY_US, PipelineApp::requests(OBJECTS, size));
    run.link = link();
    run.framed = parallel;
    run.seed = seed;
    run.time_limit_us = 600_000_000;
    let out = run_app(
        &run,
        &|| Box::new(PipelineApp::new(&[0x23; 16], region, parallel)),
        ServerConfig::new(sim::sim_keys()),
        ClientConfig::default(),
    );
    let exact = out.complete
        && out.received == PipelineApp::new(&[0x23; 16], region, parallel).expected(OBJECTS, size);
    (mbps(OBJECTS * size, out.elapsed_us), exact)
}

fn tcp_pipelined(size: u64, seed: u64) -> (f64, bool) {
    let mut t = Transfer::new(OBJECTS * size, DELAY_US);
    t.link = link();
    t.seed = seed;
    t.time_limit_us = 600_000_000;
    let cfg = tcp::TcpConfig {
        // 1.5 BDP: never overflows the one-BDP queue (smoltcp has no SACK and a 1 s
        // minimum RTO; a loss would measure that, not pipelining).
        rx_buffer: 187_500,
        request_len: 8,
        ..tcp::TcpConfig::default()
    };
    let o = tcp::run_tcp_with(&t, &cfg);
    (
        mbps(OBJECTS * size, o.elapsed_us),
        o.complete && o.byte_exact,
    )
}

fn mbps(bytes: u64, us: u64) -> f64 {
    if us == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / us as f64
    }
}

/// Runs the comparison for 5 KB … 250 KB objects.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    writeln!(
        out,
        "Trickles Fig. 23: {OBJECTS} pipelined objects on one connection, 100 Mb/s, RTT 10 ms"
    )?;
    writeln!(
        out,
        "paper: 20 KB objects: SKIP alone cannot fill the link, SKIP + parallel requests comes \
         close to TCP; 250 KB, SKIP alone: Trickles 86 Mb/s, TCP 91 Mb/s"
    )?;
    writeln!(
        out,
        "ours also: SKIP only with regions of 1/{OVERFLOW_PARTS} object, each object going on \
         through fresh input continuations (§5.2)"
    )?;
    writeln!(
        out,
        "{:>8} {:>16} {:>20} {:>18} {:>10} {:>14} {:>6}",
        "size KB",
        "SKIP only Mb/s",
        "SKIP+parallel Mb/s",
        "overflow x4 Mb/s",
        "TCP Mb/s",
        "parallel/TCP",
        "exact"
    )?;
    let mut rows = Vec::new();
    for size in [5_000u64, 10_000, 20_000, 50_000, 100_000, 250_000] {
        let (skip, e1) = trickles(size, 2 * size, false, opts.seed);
        let (parallel, e2) = trickles(size, 2 * size, true, opts.seed);
        let (overflow, e4) = trickles(size, size.div_ceil(OVERFLOW_PARTS), false, opts.seed);
        let (tcp, e3) = tcp_pipelined(size, opts.seed);
        let row = Row {
            size,
            skip,
            parallel,
            overflow,
            tcp,
            exact: e1 && e2 && e3 && e4,
        };
        writeln!(
            out,
            "{:>8} {:>16.2} {:>20.2} {:>18.2} {:>10.2} {:>14.2} {:>6}",
            size / 1000,
            skip,
            parallel,
            overflow,
            tcp,
            parallel / tcp,
            row.exact
        )?;
        rows.push(row);
    }
    let series = |label: &str, f: fn(&Row) -> f64, dashed| Series {
        label: label.into(),
        points: rows
            .iter()
            .map(|r| (r.size as f64 / 1000.0, f(r)))
            .collect(),
        dashed,
    };
    let chart = Chart {
        title: "Trickles Fig. 23: pipelined objects, 100 Mb/s, RTT 10 ms".into(),
        x_label: "object size (KB)".into(),
        y_label: "throughput (Mb/s)".into(),
        log_y: false,
        series: vec![
            series("Trickles, SKIP only", |r| r.skip, false),
            series("Trickles, SKIP + parallel requests", |r| r.parallel, false),
            series(
                "Trickles, SKIP only, objects in 4 regions",
                |r| r.overflow,
                false,
            ),
            series("smoltcp TCP, pipelined", |r| r.tcp, true),
        ],
    };
    let path = opts.dir.join("trickles-fig23.png");
    plot_and_check(
        &chart,
        &path,
        out,
        rows.iter().all(|r| r.exact),
        "a transfer did not complete byte-exact",
    )?;
    Ok(rows)
}
