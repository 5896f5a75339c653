//! The demo's Trickles part: a stateless server on a simulated lossy link.

use std::io::Write;

use trickles::client::ClientConfig;
use trickles::server::ServerConfig;
use trickles::sim::{self, LinkConfig, Transfer};

/// Fetches 2 MB over a 100 Mb/s, 10 ms link losing 1% each way, then 500 clients at once,
/// and shows that the server kept nothing per connection.
///
/// # Errors
///
/// If writing fails or a transfer does not complete byte-exact.
pub fn run(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nTrickles (TOCS'08): a TCP-like transport whose server keeps no per-connection state"
    )?;
    let mut t = Transfer::new(2_000_000, 5_000);
    t.link = t.link.rate(100, 10_000);
    t.loss_fwd_ppm = 10_000;
    t.loss_rev_ppm = 10_000;
    let o = sim::run(
        &t,
        ServerConfig::new(sim::sim_keys()),
        ClientConfig::default(),
    );
    anyhow::ensure!(o.complete && o.byte_exact, "the transfer did not complete");
    writeln!(
        out,
        " 2 MB over 100 Mb/s, 10 ms RTT, 1% loss each way: byte-exact in {:.2} s ({:.1} Mb/s);",
        o.elapsed_us as f64 / 1e6,
        o.goodput_mbps()
    )?;
    writeln!(
        out,
        "   {} requests, {} losses recovered, {} timeouts; every continuation MAC-checked once",
        o.server.segments, o.client.losses, o.client.timeouts
    )?;
    let link = LinkConfig::with_delay(2_000).rate(100, 20_000);
    let many = sim::run_clients(500, 20_000, link, 20, 1, 60_000_000);
    anyhow::ensure!(
        many.complete == 500 && many.byte_exact,
        "not every client completed"
    );
    writeln!(
        out,
        " 500 clients at once: all byte-exact; server memory {} bytes, as for one client ({} bytes)",
        many.server_memory, o.server_memory
    )?;
    writeln!(
        out,
        " (reproductions: waist repro trickles-fig9 | trickles-bloom | trickles-rtt | trickles-loss | trickles-delta | trickles-memory)"
    )?;
    Ok(())
}
