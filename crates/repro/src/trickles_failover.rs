//! Trickles §3.3 and §5.1: a server replaced in the middle of a transfer.
//!
//! One client fetches an object over a 100 Mb/s link (one-way delay 5 ms) from a
//! stateless server whose application ([`ObjectApp`]) serves it through the event queue,
//! answering every `interval` (0: at once; 1 ms: events wait in the queue as behind a
//! busy application). Halfway through the failure-free transfer the server is replaced
//! by a fresh replica: same keys, an empty replay filter, a new application instance, no
//! memory at all. Either the queued minisockets are lost with the old server, or they are
//! extracted under the replicas' migration key and installed on the new one.
//!
//! The paper has no figure for this; it claims the capability (minisockets "can be
//! migrated safely to other sockets, including those on other machines", and a minisocket
//! cache "can simply be dropped"). We report whether each transfer completes byte-exact,
//! its time, and the stall: the longest time without new data after the failover.

use std::io::Write;

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::app::{AppOutcome, AppRun, Failover, ObjectApp, run_app};
use trickles::sim::{self, LinkConfig, object_byte};

use crate::common::{Options, plot_and_check};
use crate::plot::{Chart, Series};

/// One row: interval, failover kind, outcome.
#[derive(Clone, Debug)]
pub struct Row {
    /// Application service interval (µs).
    pub interval_us: u64,
    /// `None`: no failover; `Some(migrate)`.
    pub failover: Option<bool>,
    /// Completed byte-exact.
    pub exact: bool,
    /// Transfer time (µs).
    pub elapsed_us: u64,
    /// Longest stall after the failover (µs).
    pub stall_us: Option<u64>,
    /// Minisockets migrated or lost.
    pub moved: u64,
    /// Minisockets lost.
    pub lost: u64,
}

fn transfer(len: u64, interval_us: u64, failover: Option<Failover>, seed: u64) -> AppOutcome {
    let mut run = AppRun::new(5_000, vec![len.to_be_bytes().to_vec()]);
    run.link = LinkConfig::with_delay(5_000).rate(100, 15_000);
    run.service_interval_us = interval_us;
    run.failover = failover;
    run.seed = seed;
    run.time_limit_us = 600_000_000;
    run_app(
        &run,
        &|| Box::new(ObjectApp::new(&[0x42; 16])),
        ServerConfig::new(sim::sim_keys()),
        ClientConfig::default(),
    )
}

fn exact(o: &AppOutcome, len: u64) -> bool {
    o.complete
        && o.received.len() as u64 == len
        && o.received
            .iter()
            .enumerate()
            .all(|(i, &b)| b == object_byte(i as u64))
}

/// Runs the comparison; `runs` is the object size in MB (default 10).
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let len = opts.runs.unwrap_or(10).clamp(1, 1000) * 1_000_000;
    writeln!(
        out,
        "Trickles failover: {} MB over 100 Mb/s, one-way delay 5 ms; server replaced halfway",
        len / 1_000_000
    )?;
    writeln!(
        out,
        "paper: no figure; minisockets can be dropped or migrated to another machine (§3.3, §5.1)"
    )?;
    writeln!(
        out,
        "{:>9} {:>22} {:>6} {:>10} {:>10} {:>9} {:>6}",
        "interval", "failover", "exact", "time (ms)", "stall (ms)", "migrated", "lost"
    )?;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    for interval_us in [0u64, 1_000] {
        let base = transfer(len, interval_us, None, opts.seed);
        let at_us = base.elapsed_us / 2;
        for failover in [None, Some(false), Some(true)] {
            let o = match failover {
                None => base.clone(),
                Some(migrate) => transfer(
                    len,
                    interval_us,
                    Some(Failover { at_us, migrate }),
                    opts.seed,
                ),
            };
            let row = Row {
                interval_us,
                failover,
                exact: exact(&o, len),
                elapsed_us: o.elapsed_us,
                stall_us: o.failover_stall_us,
                moved: o.server.migrated,
                lost: o.server.dropped,
            };
            let label = match failover {
                None => "none".to_string(),
                Some(false) => format!("at {:.1} ms, dropped", at_us as f64 / 1000.0),
                Some(true) => format!("at {:.1} ms, migrated", at_us as f64 / 1000.0),
            };
            writeln!(
                out,
                "{:>7}us {:>22} {:>6} {:>10.1} {:>10} {:>9} {:>6}",
                interval_us,
                label,
                row.exact,
                row.elapsed_us as f64 / 1000.0,
                row.stall_us
                    .map_or("-".to_string(), |s| format!("{:.1}", s as f64 / 1000.0)),
                row.moved,
                row.lost
            )?;
            if interval_us == 1_000 {
                series.push(Series {
                    label: format!("service every 1 ms, failover: {label}"),
                    points: o
                        .progress
                        .iter()
                        .map(|&(t, b)| (t as f64 / 1000.0, b as f64 / 1e6))
                        .collect(),
                    dashed: failover.is_some(),
                });
            }
            rows.push(row);
        }
    }
    let chart = Chart {
        title: "Trickles: a server replaced halfway through a transfer".into(),
        x_label: "time (ms)".into(),
        y_label: "bytes delivered (MB)".into(),
        log_y: false,
        series,
    };
    let path = opts.dir.join("trickles-failover.png");
    plot_and_check(
        &chart,
        &path,
        out,
        rows.iter().all(|r| r.exact),
        "a transfer did not complete byte-exact",
    )?;
    Ok(rows)
}
