//! Trickles paper §5.3 and §6.1 "Optimizations": delta-encoded transport continuations.
//!
//! **Paper.** The server sends only the continuation fields the client cannot predict
//! (timestamp, updated RTT, MAC); "this optimization increased throughput on the 100 Mb/s
//! LAN bandwidth by 1.2 Mb/s, or 1.4%" (Trickles ran near 85 Mb/s there). The paper gives
//! no per-packet byte counts.
//!
//! **Ours.** [`trickles::sim::run`] twice over the same links, once with full 54-byte
//! continuations and once with [`trickles::delta`] (client `delta: true`): the 100 Mb/s
//! bottleneck of [`crate::trickles_rtt`] (drop-tail queue of one bandwidth-delay product)
//! at a few RTTs, loss-free and with 1% forward (server-to-client) loss. The object is
//! `runs` MB (default 20). Data per response stays the same (MSS 1362), so a delta makes
//! each response frame shorter, not fuller. Columns: transport-continuation bytes per
//! response that carries one, frame bytes per response, goodput with full continuations
//! and with deltas, and the difference. Each point is the mean of [`SEEDS`] seeds.

use std::io::Write;

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::{self, Transfer};

use crate::common::{Options, plot_and_check};
use crate::plot::{Chart, Series};
use crate::trickles_rtt::bottleneck;

/// Round-trip times swept, milliseconds.
pub const RTTS_MS: [u64; 3] = [2, 10, 50];
/// Forward loss rates, parts per million.
pub const LOSS_PPM: [u32; 2] = [0, 10_000];
/// Seeds per point.
pub const SEEDS: u64 = 3;
/// The paper's gain, Mb/s, and its relative gain, %.
pub const PAPER_GAIN: (f64, f64) = (1.2, 1.4);

/// One encoding's mean over the seeds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Side {
    /// Goodput, Mb/s.
    pub goodput: f64,
    /// Transport-continuation bytes per response that carried one.
    pub cont_bytes: f64,
    /// Frame bytes (address prefix, TCP header, payload) per response.
    pub frame_bytes: f64,
    /// Whether every run finished byte-exact with no MAC rejection.
    pub ok: bool,
}

/// One condition: full continuations against deltas.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Round-trip time, ms.
    pub rtt_ms: u64,
    /// Forward loss, ppm.
    pub loss_ppm: u32,
    /// Full 54-byte continuations.
    pub full: Side,
    /// Delta-encoded continuations.
    pub delta: Side,
}

fn side(t: &Transfer, seeds: impl Iterator<Item = u64>, delta: bool) -> Side {
    let mut s = Side {
        ok: true,
        ..Side::default()
    };
    let mut n = 0.0;
    for seed in seeds {
        let t = Transfer { seed, ..*t };
        let client = ClientConfig {
            delta,
            ..ClientConfig::default()
        };
        let o = sim::run(&t, ServerConfig::new(sim::sim_keys()), client);
        let with_cont = if delta {
            o.server.deltas
        } else {
            // Every response but a retransmission carries a full continuation.
            o.server.continuation_bytes / trickles::continuation::CONTINUATION_LEN as u64
        };
        s.goodput += o.goodput_mbps();
        s.cont_bytes += o.server.continuation_bytes as f64 / with_cont.max(1) as f64;
        // Frames on the simulated link carry an 8-byte address prefix.
        s.frame_bytes += (o.server.response_bytes + 8 * o.server.responses) as f64
            / o.server.responses.max(1) as f64;
        s.ok &= o.complete && o.byte_exact && o.server.mac_rejections == 0;
        s.ok &= (o.server.deltas > 0) == delta;
        n += 1.0;
    }
    s.goodput /= n;
    s.cont_bytes /= n;
    s.frame_bytes /= n;
    s
}

/// Runs the comparison; `runs` is the object size in MB (default 20).
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let mb = opts.runs.unwrap_or(20).clamp(1, 1_000);
    writeln!(
        out,
        "Trickles §5.3/§6.1: delta-encoded continuations ({mb} MB object, 100 Mb/s, queue = 1 BDP, MSS 1362, mean of {SEEDS} seeds)"
    )?;
    writeln!(
        out,
        "paper: +{:.1} Mb/s (+{:.1}%) on a 100 Mb/s LAN (about 85 Mb/s); sends timestamp, RTT and MAC only",
        PAPER_GAIN.0, PAPER_GAIN.1
    )?;
    writeln!(
        out,
        "{:>7} {:>7} {:>15} {:>15} {:>13} {:>13} {:>10} {:>10} {:>9} {:>8}",
        "RTT ms",
        "loss %",
        "cont B (full)",
        "cont B (delta)",
        "frame (full)",
        "frame (delta)",
        "full Mb/s",
        "delta Mb/s",
        "gain Mb/s",
        "gain %"
    )?;
    let mut rows = Vec::new();
    opts.progress.phase(
        "(loss, RTT) points",
        (LOSS_PPM.len() * RTTS_MS.len()) as u64,
    );
    for loss_ppm in LOSS_PPM {
        for rtt_ms in RTTS_MS {
            let mut t = Transfer::new(mb * 1_000_000, rtt_ms * 500);
            t.link = bottleneck(rtt_ms * 500);
            t.loss_fwd_ppm = loss_ppm;
            t.time_limit_us = 3_600_000_000;
            let seeds = || (0..SEEDS).map(|i| opts.seed.wrapping_add(i));
            let row = Row {
                rtt_ms,
                loss_ppm,
                full: side(&t, seeds(), false),
                delta: side(&t, seeds(), true),
            };
            opts.progress.advance(1);
            let gain = row.delta.goodput - row.full.goodput;
            writeln!(
                out,
                "{:>7} {:>7.2} {:>15.1} {:>15.1} {:>13.1} {:>13.1} {:>10.2} {:>10.2} {:>+9.2} {:>+8.2}",
                rtt_ms,
                f64::from(loss_ppm) / 10_000.0,
                row.full.cont_bytes,
                row.delta.cont_bytes,
                row.full.frame_bytes,
                row.delta.frame_bytes,
                row.full.goodput,
                row.delta.goodput,
                gain,
                100.0 * gain / row.full.goodput.max(f64::MIN_POSITIVE),
            )?;
            rows.push(row);
        }
    }
    opts.progress.finish();
    let chart = Chart {
        title: format!("Trickles delta encoding (§5.3): goodput, {mb} MB, 100 Mb/s"),
        x_label: "RTT (ms)".into(),
        y_label: "goodput (Mb/s)".into(),
        log_y: false,
        series: LOSS_PPM
            .iter()
            .flat_map(|&loss| {
                let pick = |f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
                    rows.iter()
                        .filter(|r| r.loss_ppm == loss)
                        .map(|r| (r.rtt_ms as f64, f(r)))
                        .collect()
                };
                let pct = f64::from(loss) / 10_000.0;
                [
                    Series {
                        label: format!("full continuations, {pct}% loss"),
                        points: pick(|r| r.full.goodput),
                        dashed: true,
                    },
                    Series {
                        label: format!("delta continuations, {pct}% loss"),
                        points: pick(|r| r.delta.goodput),
                        dashed: false,
                    },
                ]
            })
            .collect(),
    };
    let path = opts.dir.join("trickles-delta.png");
    plot_and_check(
        &chart,
        &path,
        out,
        rows.iter().all(|r| r.full.ok && r.delta.ok),
        "a transfer did not finish byte-exact, or a rebuilt continuation failed the MAC",
    )?;
    Ok(rows)
}
