//! Trickles paper Figs. 20 and 21: single-client throughput against packet loss on the
//! forward (server-to-client) and the reverse (client-to-server) path, beside TCP.
//!
//! **Paper.** 100 MB objects over a 100 Mb/s link, RTT 10 ms "to emphasize effects of
//! loss" (Fig. 21's caption in our copy says RTT 0 ms; the text treats both figures as
//! one experiment). Fig. 20: "Trickles achieves similar throughput to TCP under all loss
//! rates" on the forward path. Fig. 21: "TCP cumulative acknowledgments make it robust
//! against reverse path loss"; to Trickles a lost request is indistinguishable from a lost
//! response, so it slows as much as under forward loss. The figures' numbers are not in our
//! copy.
//!
//! **Ours.** The links of [`crate::trickles_rtt`] (100 Mb/s, queue of one bandwidth-delay
//! product) at RTT 10 ms, random loss of 0–5% on one direction at a time; each point is
//! the mean goodput of three seeds (from `--seed`). The object is `runs` MB (default 20 MB:
//! at 5% loss a transfer runs at about a megabit per second, and the default keeps the
//! command near ten seconds; 100 reproduces the paper's size in about a minute). The
//! columns are those of [`crate::trickles_rtt`], window-capped TCP reference included.

use std::io::Write;

use trickles::sim::{Transfer, tcp};

use crate::common::Options;
use crate::plot::{self, Chart, Series};
use crate::trickles_rtt::{Point, bottleneck, header, measure, row, summary};

/// Loss rates swept, parts per million.
pub const LOSS_PPM: [u32; 8] = [0, 2_500, 5_000, 10_000, 20_000, 30_000, 40_000, 50_000];
/// The paper's RTT for these figures, ms.
pub const RTT_MS: u64 = 10;
/// Seeds per point.
pub const SEEDS: u64 = 3;

/// Which direction loses packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Server to client: responses and data (Fig. 20).
    Forward,
    /// Client to server: requests and ACKs (Fig. 21).
    Reverse,
}

/// Runs both sweeps; `runs` is the object size in MB (default 20).
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<(Direction, u32, Point)>> {
    let mb = opts.runs.unwrap_or(20).clamp(1, 1_000);
    writeln!(
        out,
        "Trickles Figs. 20-21: single-client throughput against loss ({mb} MB object, RTT {RTT_MS} ms, 100 Mb/s, queue = 1 BDP)"
    )?;
    writeln!(
        out,
        "TCP: smoltcp 0.14 Reno, MSS {}; Trickles: MSS 1362; mean of {SEEDS} seeds per point",
        tcp::TCP_MSS
    )?;
    let mut rows = Vec::new();
    opts.progress
        .phase("loss points", 2 * LOSS_PPM.len() as u64);
    for (dir, fig, paper) in [
        (
            Direction::Forward,
            "Fig. 20, forward (server-to-client) loss",
            "paper: Trickles similar to TCP at all loss rates",
        ),
        (
            Direction::Reverse,
            "Fig. 21, reverse (client-to-server) loss",
            "paper: TCP robust (cumulative ACKs); Trickles slows as under forward loss",
        ),
    ] {
        writeln!(out, "{fig} — {paper}")?;
        header(out, "loss (%)")?;
        let mut this = Vec::new();
        for loss in LOSS_PPM {
            let mut t = Transfer::new(mb * 1_000_000, RTT_MS * 500);
            t.link = bottleneck(RTT_MS * 500);
            t.time_limit_us = 3_600_000_000;
            match dir {
                Direction::Forward => t.loss_fwd_ppm = loss,
                Direction::Reverse => t.loss_rev_ppm = loss,
            }
            let p = measure(&t, (0..SEEDS).map(|i| opts.seed.wrapping_add(i)));
            row(out, &format!("{:.2}", f64::from(loss) / 10_000.0), &p)?;
            rows.push((dir, loss, p));
            this.push((f64::from(loss) / 10_000.0, p));
            opts.progress.advance(1);
        }
        summary(out, &this, "% loss")?;
    }
    opts.progress.finish();
    for (dir, name, file) in [
        (Direction::Forward, "forward", "trickles-loss-fwd.png"),
        (Direction::Reverse, "reverse", "trickles-loss-rev.png"),
    ] {
        let pick = |f: fn(&Point) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .filter(|r| r.0 == dir)
                .map(|(_, l, p)| (f64::from(*l) / 10_000.0, f(p)))
                .collect()
        };
        let chart = Chart {
            title: format!(
                "Trickles Fig. {}: throughput against {name} loss (RTT {RTT_MS} ms, {mb} MB)",
                if dir == Direction::Forward { 20 } else { 21 }
            ),
            x_label: format!("{name} loss rate (%)"),
            y_label: "goodput (Mb/s)".into(),
            log_y: true,
            series: vec![
                Series {
                    label: "Trickles (ours)".into(),
                    points: pick(|p| p.trickles),
                    dashed: false,
                },
                Series {
                    label: "TCP: smoltcp Reno (ours)".into(),
                    points: pick(|p| p.tcp),
                    dashed: false,
                },
                Series {
                    label: "TCP, window capped at 1.5 BDP (reference)".into(),
                    points: pick(|p| p.tcp_capped),
                    dashed: true,
                },
            ],
        };
        let path = opts.dir.join(file);
        plot::draw(&chart, &path)?;
        writeln!(out, "plot: {}", path.display())?;
    }
    anyhow::ensure!(
        rows.iter().all(|r| r.2.byte_exact),
        "a transfer delivered wrong bytes"
    );
    anyhow::ensure!(
        rows.iter()
            .all(|r| r.2.trickles_complete == r.2.runs && r.2.tcp_complete == r.2.runs),
        "a transfer did not finish"
    );
    Ok(rows)
}
