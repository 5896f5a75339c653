//! Trickles paper Fig. 17: throughput of a single isolated client against object size,
//! Trickles with the request in its SYN beside TCP.
//!
//! **Paper.** §6.1: "a client fetching small objects will achieve significant performance
//! improvements because of the reduction in the number of control packets (Figure 17).
//! Trickles requires fewer packets for connection setup than TCP. Trickles processes data
//! piggybacked in SYN packets into output continuations without holding state, and can send
//! an immediate response." The figure plots both protocols' throughput for one client over
//! object sizes; its numbers are not in the text of our copy. What the text says, and what
//! we check: Trickles ahead for small objects, where connection setup dominates, the two
//! converging as the object grows and the transfer itself dominates.
//!
//! **Ours.** One client fetches objects of each size, each on a fresh connection (the
//! handshake is part of every fetch), `runs` objects per size (default 5), over the same
//! two netsim links for both protocols: 100 Mb/s each way, RTT 200 µs (a LAN), a drop-tail
//! queue of 5 ms (62.5 KB, about 42 full packets: a small switch's buffer). Trickles
//! ([`trickles::sim::run`]): the
//! client's `connect` puts the 8-byte request in the SYN and the server answers it at once.
//! TCP ([`trickles::sim::tcp::run_tcp_with`], smoltcp 0.14 Reno, MSS 1460): three-way
//! handshake, then the client's 8-byte request
//! ([`TcpConfig::request_len`](tcp::TcpConfig::request_len)), then the response, with a
//! 64 KB receive window (the classic unscaled maximum), which with the queue's 62.5 KB and
//! the path's 2.5 KB never overflows the queue. A second TCP column, a reference and not
//! the baseline, keeps smoltcp's 8 MiB window: its slow start overflows the queue on
//! objects from about 50 KB, and smoltcp (no SACK, a 1 s minimum retransmit timeout) then
//! waits a second, a stall the paper's Linux TCP would not have. Throughput is the objects' bytes over the sum of their times from the first
//! SYN to the last byte. Loss-free runs are deterministic (the seed moves sequence numbers
//! only), so the objects of one size take the same time; several are fetched anyway, as in
//! the paper's repeated fetches. Packets per object count both directions.

use std::io::Write;

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::{self, LinkConfig, Transfer, tcp};

use crate::common::{Options, plot_and_check};
use crate::plot::{Chart, Series};

/// Object sizes swept, bytes (1 KB to 2 MB).
pub const SIZES: [u64; 11] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
];

/// One-way delay of both links, µs (a 200 µs round trip).
pub const DELAY_US: u64 = 100;

/// Bytes of the request both clients send: the object's length, big-endian.
pub const REQUEST_LEN: usize = 8;

/// Drop-tail queue of the link, µs of transmission at 100 Mb/s (62.5 KB).
pub const QUEUE_US: u64 = 5_000;

/// TCP's receive buffer, hence its largest window: 64 KB.
pub const TCP_WINDOW: usize = 65_535;

/// The link both protocols use: 100 Mb/s each way, one-way [`DELAY_US`], a drop-tail queue
/// of [`QUEUE_US`].
pub fn link() -> LinkConfig {
    LinkConfig::with_delay(DELAY_US).rate(100, QUEUE_US)
}

/// One object size: both protocols over `objects` fresh connections.
#[derive(Clone, Copy, Debug, Default)]
pub struct Point {
    /// Object size, bytes.
    pub size: u64,
    /// Objects fetched per protocol.
    pub objects: u32,
    /// Trickles' throughput, Mb/s (bytes over the summed fetch times).
    pub trickles: f64,
    /// TCP's throughput, Mb/s (64 KB window).
    pub tcp: f64,
    /// TCP's throughput with smoltcp's 8 MiB window, Mb/s: a reference.
    pub tcp_big_window: f64,
    /// Trickles' losses and timeouts over all its fetches.
    pub trickles_losses: u64,
    /// Trickles' mean fetch time, µs.
    pub trickles_us: f64,
    /// TCP's mean fetch time, µs.
    pub tcp_us: f64,
    /// Trickles' packets per object, both directions.
    pub trickles_packets: f64,
    /// TCP's packets per object, both directions.
    pub tcp_packets: f64,
    /// Whether every fetch of both protocols completed with exactly the object's bytes.
    pub byte_exact: bool,
}

impl Point {
    /// Trickles' throughput over TCP's.
    pub fn ratio(&self) -> f64 {
        if self.tcp > 0.0 {
            self.trickles / self.tcp
        } else {
            0.0
        }
    }
}

/// Fetches `objects` objects of `size` bytes with each protocol over `link`, seeds from
/// `seed` on.
pub fn measure(size: u64, objects: u32, link: LinkConfig, seed: u64) -> Point {
    let mut p = Point {
        size,
        objects,
        byte_exact: true,
        ..Point::default()
    };
    let tcp_cfg = tcp::TcpConfig {
        request_len: REQUEST_LEN,
        rx_buffer: TCP_WINDOW,
        ..tcp::TcpConfig::default()
    };
    let big_cfg = tcp::TcpConfig {
        request_len: REQUEST_LEN,
        ..tcp::TcpConfig::default()
    };
    let (mut t_us, mut c_us, mut b_us) = (0u64, 0u64, 0u64);
    for k in 0..u64::from(objects) {
        let mut t = Transfer::new(size, link.delay);
        t.link = link;
        t.seed = seed.wrapping_add(k);
        t.time_limit_us = 600_000_000;
        let ours = sim::run(
            &t,
            ServerConfig::new(sim::sim_keys()),
            ClientConfig::default(),
        );
        let base = tcp::run_tcp_with(&t, &tcp_cfg);
        let big = tcp::run_tcp_with(&t, &big_cfg);
        p.trickles_losses += ours.client.losses + ours.client.timeouts;
        b_us += big.elapsed_us;
        p.byte_exact &= big.complete && big.byte_exact && big.received == size;
        p.byte_exact &= ours.complete
            && ours.byte_exact
            && ours.received == size
            && base.complete
            && base.byte_exact
            && base.received == size;
        t_us += ours.elapsed_us;
        c_us += base.elapsed_us;
        p.trickles_packets += (ours.client.requests + ours.server.responses) as f64;
        p.tcp_packets += (base.client.requests + base.server.responses) as f64;
    }
    let n = f64::from(objects.max(1));
    let bits = (size * u64::from(objects)) as f64 * 8.0;
    p.trickles = if t_us > 0 { bits / t_us as f64 } else { 0.0 };
    p.tcp = if c_us > 0 { bits / c_us as f64 } else { 0.0 };
    p.tcp_big_window = if b_us > 0 { bits / b_us as f64 } else { 0.0 };
    p.trickles_us = t_us as f64 / n;
    p.tcp_us = c_us as f64 / n;
    p.trickles_packets /= n;
    p.tcp_packets /= n;
    p
}

/// Runs the sweep; `runs` is the number of objects per size (default 5).
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Point>> {
    let objects = u32::try_from(opts.runs.unwrap_or(5).clamp(1, 100)).unwrap_or(5);
    writeln!(
        out,
        "Trickles Fig. 17: one client, throughput against object size ({objects} objects per size, \
         a fresh connection each; 100 Mb/s, RTT {} µs)",
        2 * DELAY_US
    )?;
    writeln!(
        out,
        "paper: Trickles with SYN data well ahead of TCP for small objects (fewer control packets: \
         the request rides in the SYN and is answered at once), the two converging for large \
         objects; the figure's numbers are not in the text"
    )?;
    writeln!(
        out,
        "Trickles: request in the SYN; TCP (smoltcp 0.14 Reno, MSS {}, 64 KB window): handshake, \
         {REQUEST_LEN}-byte request, response; queue {} KB",
        tcp::TCP_MSS,
        QUEUE_US * 100 / 8 / 1000
    )?;
    writeln!(
        out,
        "{:>9} {:>15} {:>11} {:>7} {:>13} {:>9} {:>13} {:>9} {:>14} {:>15}",
        "size (KB)",
        "Trickles (Mb/s)",
        "TCP (Mb/s)",
        "ratio",
        "Trickles (µs)",
        "TCP (µs)",
        "Trickles pkts",
        "TCP pkts",
        "Trickles lost",
        "TCP 8 MiB wnd"
    )?;
    let mut rows = Vec::new();
    for size in SIZES {
        let p = measure(size, objects, link(), opts.seed);
        writeln!(
            out,
            "{:>9} {:>15.2} {:>11.2} {:>7.2} {:>13.0} {:>9.0} {:>13.1} {:>9.1} {:>14} {:>15.2}",
            size as f64 / 1000.0,
            p.trickles,
            p.tcp,
            p.ratio(),
            p.trickles_us,
            p.tcp_us,
            p.trickles_packets,
            p.tcp_packets,
            p.trickles_losses,
            p.tcp_big_window
        )?;
        rows.push(p);
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        writeln!(
            out,
            "ours: Trickles/TCP {:.2}× at {} KB, {:.2}× at {} KB",
            first.ratio(),
            first.size / 1000,
            last.ratio(),
            last.size / 1000
        )?;
    }
    let chart = Chart {
        title: format!(
            "Trickles Fig. 17: one client, fresh connection per object (100 Mb/s, RTT {} µs)",
            2 * DELAY_US
        ),
        x_label: "log10(object size in KB): 0 = 1 KB, 3 = 1 MB".into(),
        y_label: "throughput (Mb/s)".into(),
        log_y: false,
        series: vec![
            Series {
                label: "Trickles, request in SYN (ours)".into(),
                points: rows
                    .iter()
                    .map(|p| ((p.size as f64 / 1000.0).log10(), p.trickles))
                    .collect(),
                dashed: false,
            },
            Series {
                label: "TCP: smoltcp Reno, handshake then request (ours)".into(),
                points: rows
                    .iter()
                    .map(|p| ((p.size as f64 / 1000.0).log10(), p.tcp))
                    .collect(),
                dashed: false,
            },
            Series {
                label: "TCP, 8 MiB window (reference: 1 s stalls after queue overflow)".into(),
                points: rows
                    .iter()
                    .map(|p| ((p.size as f64 / 1000.0).log10(), p.tcp_big_window))
                    .collect(),
                dashed: true,
            },
        ],
    };
    let path = opts.dir.join("trickles-fig17.png");
    plot_and_check(
        &chart,
        &path,
        out,
        rows.iter().all(|p| p.byte_exact),
        "a fetch did not deliver exactly the object",
    )?;
    Ok(rows)
}
