//! Trickles paper Fig. 16 (left): server memory against the number of clients.
//!
//! **Ours.** `n` simulated clients (1 … 10,000), each on its own 100 Mb/s link with 2 ms
//! delay, fetch a 20 KB object from one stateless server; the server's memory
//! ([`trickles::server::Server::memory_bytes`]: the engine, keys and both replay filters)
//! is read at the end. Every transfer must finish byte-exact.
//!
//! **TCP, computed.** What a user-space TCP keeps per connection: smoltcp's socket structure
//! plus its send buffer, sized here at 64 KB (Linux's default `tcp_wmem` starts at 16 KB and
//! grows; the paper's Fig. 16 shows kernel TCP growing linearly until it runs out of memory
//! at 6000 clients). This column is arithmetic, not a measurement.

use std::io::Write;

use trickles::sim::{self, LinkConfig};

use crate::common::{Options, plot_and_check};
use crate::plot::{Chart, Series};

/// Send buffer charged per TCP connection in the computed column.
pub const TCP_SEND_BUFFER: usize = 64 * 1024;

/// Runs the sweep; `runs` caps the largest client count (default 10,000).
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<(u32, usize)>> {
    let max = opts.runs.unwrap_or(10_000).min(100_000) as u32;
    let tcp_per_conn =
        std::mem::size_of::<smoltcp::socket::tcp::Socket<'static>>() + TCP_SEND_BUFFER;
    writeln!(
        out,
        "Trickles server memory against clients (20 KB object each, 100 Mb/s links)"
    )?;
    writeln!(
        out,
        "paper: Trickles flat and small; TCP linear, exhausting 512 MB past 6000 clients"
    )?;
    writeln!(
        out,
        "{:>7} {:>10} {:>12} {:>18} {:>16}",
        "clients", "complete", "exact", "Trickles (bytes)", "TCP (computed)"
    )?;
    let link = LinkConfig::with_delay(2_000).rate(100, 20_000);
    let mut rows = Vec::new();
    let mut ours = Vec::new();
    let mut tcp = Vec::new();
    for n in [1u32, 10, 100, 1_000, 10_000, 100_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let o = sim::run_clients(n, 20_000, link, 20, opts.seed, 600_000_000);
        let tcp_bytes = n as usize * tcp_per_conn;
        writeln!(
            out,
            "{:>7} {:>10} {:>12} {:>18} {:>16}",
            n, o.complete, o.byte_exact, o.server_memory, tcp_bytes
        )?;
        anyhow::ensure!(
            o.complete == n as usize && o.byte_exact,
            "{n} clients: only {} complete",
            o.complete
        );
        rows.push((n, o.server_memory));
        ours.push((f64::from(n), o.server_memory as f64 / 1024.0));
        tcp.push((f64::from(n), tcp_bytes as f64 / 1024.0));
    }
    let flat = rows.windows(2).all(|w| w[0].1 == w[1].1);
    writeln!(out, "Trickles server memory independent of clients: {flat}")?;
    let chart = Chart {
        title: "Trickles Fig. 16: server memory against clients".into(),
        x_label: "simultaneous clients".into(),
        y_label: "server memory (KB)".into(),
        log_y: true,
        series: vec![
            Series {
                label: "Trickles server (ours, measured)".into(),
                points: ours,
                dashed: false,
            },
            Series {
                label: "TCP: socket + 64 KB send buffer (computed)".into(),
                points: tcp,
                dashed: true,
            },
        ],
    };
    let path = opts.dir.join("trickles-memory.png");
    plot_and_check(
        &chart,
        &path,
        out,
        flat,
        "server memory grew with the number of clients",
    )?;
    Ok(rows)
}
