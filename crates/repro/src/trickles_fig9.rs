//! Trickles paper Fig. 9: TCP Reno's server state beside the Trickles transport
//! continuations, for TCPBase 40, startCwnd 3, ssthresh 8, with no loss.
//!
//! **Ours.** For each request k the Trickles column is what the server's planner
//! ([`trickles::cc::plan`]) sends: `TCPCwnd(k)` and the packet numbers of the responses.
//! The TCP column is Reno run one acknowledgment at a time ([`RenoSim`]): its cwnd after the
//! ack and the segments it may then send (`snd_nxt` up to `k + cwnd`). The figure's table
//! is not in our copy of the paper, so the paper's column is the rule the figure
//! illustrates — cwnd equals TCPCwnd(k) and the output trickle numbers equal snd_nxt — and
//! the run checks it row by row.

use std::collections::BTreeSet;
use std::io::Write;

use trickles::cc::{self, CcConfig, RequestMode};
use trickles::continuation::{Continuation, EpochStart};
use trickles::cwnd::{RenoSim, tcp_cwnd};
use trickles::sack::SackBlock;

use crate::common::{Options, plot_and_check};
use crate::plot::{self, Chart, Series};

/// Fig. 9's initial conditions.
pub const TCP_BASE: u32 = 40;
/// Fig. 9's startCwnd.
pub const START_CWND: u16 = 3;
/// Fig. 9's ssthresh.
pub const SSTHRESH: u16 = 8;

/// One row: request k, Reno's cwnd and new segments, Trickles' TCPCwnd and responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Request (ack) number.
    pub k: u32,
    /// Reno's cwnd after the ack.
    pub reno_cwnd: u32,
    /// Segments Reno sends on the ack.
    pub reno_sent: Vec<u32>,
    /// TCPCwnd(k).
    pub trickles_cwnd: u32,
    /// Trickles response packet numbers.
    pub trickles_sent: Vec<u32>,
}

/// Computes `n` rows from request TCPBase + 1.
pub fn rows(n: u32) -> anyhow::Result<Vec<Row>> {
    let cfg = CcConfig::default();
    let mut reno = RenoSim::new(u32::from(START_CWND), u32::from(SSTHRESH));
    let mut snd_nxt = TCP_BASE + 1 + u32::from(START_CWND);
    let mut rows = Vec::new();
    for k in TCP_BASE + 1..=TCP_BASE + n {
        reno.ack();
        let reno_sent: Vec<u32> = (snd_nxt..k + 1 + reno.cwnd).collect();
        snd_nxt = k + 1 + reno.cwnd;
        let c = Continuation {
            number: k,
            tcp_base: TCP_BASE,
            start_cwnd: START_CWND,
            ssthresh: SSTHRESH,
            proof_start: TCP_BASE + 1,
            rtt_us: 0,
            timestamp_ms: 0,
            epoch_start: EpochStart::Open,
            rtx: 0,
            site: 0,
            key_epoch: 0,
            flags: 0,
            conn_nonce: 0,
            tag: [0; 16],
        };
        let proof = [SackBlock {
            left: TCP_BASE + 1,
            right: k,
            nonce: 0,
        }];
        let slots =
            cc::plan(&c, &proof, RequestMode::Normal, &cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        rows.push(Row {
            k,
            reno_cwnd: reno.cwnd,
            reno_sent,
            trickles_cwnd: tcp_cwnd(
                u64::from(k),
                u64::from(TCP_BASE),
                u32::from(START_CWND),
                u32::from(SSTHRESH),
            ),
            trickles_sent: slots
                .iter()
                .map(|s| s.number)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        });
    }
    Ok(rows)
}

fn list(v: &[u32]) -> String {
    match v {
        [] => "-".into(),
        [a] => a.to_string(),
        _ => v.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
    }
}

/// Prints the table (ours beside Reno's) and draws cwnd against k.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let rows = rows(40)?;
    writeln!(
        out,
        "Trickles Fig. 9: TCPBase {TCP_BASE}, startCwnd {START_CWND}, ssthresh {SSTHRESH}, no loss"
    )?;
    writeln!(
        out,
        "paper: TCP cwnd = TCPCwnd(k) and output trickle # = snd_nxt on every row"
    )?;
    writeln!(
        out,
        "{:>4} | {:>8} {:>10} | {:>11} {:>12} | match",
        "k", "TCP cwnd", "TCP sends", "TCPCwnd(k)", "trickles #"
    )?;
    let mut mismatches = 0;
    for r in &rows {
        let ok = r.reno_cwnd == r.trickles_cwnd && r.reno_sent == r.trickles_sent;
        mismatches += usize::from(!ok);
        writeln!(
            out,
            "{:>4} | {:>8} {:>10} | {:>11} {:>12} | {}",
            r.k,
            r.reno_cwnd,
            list(&r.reno_sent),
            r.trickles_cwnd,
            list(&r.trickles_sent),
            if ok { "yes" } else { "NO" }
        )?;
    }
    writeln!(
        out,
        "rows matching: {} of {}",
        rows.len() - mismatches,
        rows.len()
    )?;
    let chart = Chart {
        title: "Trickles Fig. 9: window against request number".into(),
        x_label: "request number k".into(),
        y_label: "cwnd (packets)".into(),
        log_y: false,
        series: vec![
            Series {
                label: "TCP Reno (ack by ack)".into(),
                points: rows
                    .iter()
                    .map(|r| (f64::from(r.k), f64::from(r.reno_cwnd)))
                    .collect(),
                dashed: true,
            },
            Series {
                label: "Trickles TCPCwnd(k) (ours)".into(),
                points: rows
                    .iter()
                    .map(|r| (f64::from(r.k), f64::from(r.trickles_cwnd)))
                    .collect(),
                dashed: false,
            },
        ],
    };
    let path = opts.dir.join("trickles-fig9.png");
    plot_and_check(
        &chart,
        &path,
        out,
        mismatches == 0,
        &format!("{mismatches} rows differ from TCP Reno"),
    )?;
    under_loss(opts, out)?;
    Ok(rows)
}

/// The window under loss: a simulated 20 MB transfer over 100 Mb/s with a 10 ms RTT and 1%
/// forward loss, sampled every 2 ms. Reno's shape is a sawtooth — additive increase,
/// halving at each loss — and its mean rate is about 1.22·MSS/(RTT·√p) (Mathis et al.).
fn under_loss(opts: &Options, out: &mut dyn Write) -> anyhow::Result<()> {
    use trickles::client::ClientConfig;
    use trickles::server::{DEFAULT_MSS, ServerConfig};
    use trickles::sim::{self, Transfer};
    let mut t = Transfer::new(20_000_000, 5_000);
    t.link = t.link.rate(100, 10_000);
    t.loss_fwd_ppm = 10_000;
    t.trace_us = 2_000;
    let o = sim::run(
        &t,
        ServerConfig::new(sim::sim_keys()),
        ClientConfig::default(),
    );
    anyhow::ensure!(
        o.complete && o.byte_exact,
        "the transfer under loss did not complete"
    );
    let mathis = 1.22 * f64::from(DEFAULT_MSS) * 8.0 / (10_000.0 * 0.01f64.sqrt());
    let mean_window =
        o.trace.iter().map(|&(_, w)| f64::from(w)).sum::<f64>() / o.trace.len().max(1) as f64;
    writeln!(out)?;
    writeln!(
        out,
        "under 1% forward loss (10 ms RTT, 100 Mb/s): {:.2} Mb/s; Reno's rate by Mathis' formula {:.2} Mb/s",
        o.goodput_mbps(),
        mathis
    )?;
    writeln!(
        out,
        "window: mean {:.1} packets in flight, {} losses, {} timeouts",
        mean_window, o.client.losses, o.client.timeouts
    )?;
    let chart = Chart {
        title: "Trickles window under 1% loss (sawtooth, as Reno)".into(),
        x_label: "time (ms)".into(),
        y_label: "packets in flight".into(),
        log_y: false,
        series: vec![Series {
            label: "Trickles (ours, simulated)".into(),
            points: o
                .trace
                .iter()
                .take(1_000)
                .map(|&(t, w)| (t as f64 / 1000.0, f64::from(w)))
                .collect(),
            dashed: false,
        }],
    };
    let path = opts.dir.join("trickles-fig9-loss.png");
    plot::draw(&chart, &path)?;
    writeln!(out, "plot: {}", path.display())?;
    Ok(())
}
