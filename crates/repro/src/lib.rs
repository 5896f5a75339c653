//! The paper reproductions behind `waist repro`: each experiment runs the workspace's cores
//! (in the simulator, on the IXP1200 model, or timed on this machine), prints our numbers
//! beside the paper's, and writes its plot and data files.
//!
//! A short tour:
//!
//! * one module per reproduction, named as on the command line (`ess-fig11` is
//!   [`ess_fig11`]); each has a `run(opts, out)` that prints its report to `out` and returns
//!   its rows, so tests can check the numbers;
//! * [`Name`] lists them and [`run`] dispatches on it (the `clap` feature makes `Name` a
//!   `clap::ValueEnum` for the CLI);
//! * [`common`]: the [`Options`] every reproduction takes, the [`Progress`] it reports
//!   through (the CLI plugs its terminal bar in as a [`ProgressSink`]), the seeded
//!   generator, `median`, the least-squares `fit` and the plot-then-check tail;
//! * [`plot`]: line charts as PNG files, with an embedded font.
//!
//! Nothing here parses arguments or draws progress bars: that is the `waist` CLI's job.
//!
//! ```
//! use repro::{Name, Options, Progress};
//!
//! let opts = Options {
//!     dir: std::env::temp_dir().join("repro-doc"),
//!     log2: 16,
//!     seed: 0x5eed,
//!     runs: None,
//!     progress: Progress::default(),
//! };
//! let mut out = Vec::new();
//! repro::run(Name::SnapFig2, &opts, &mut out)?;
//! assert!(String::from_utf8(out)?.contains("PLAN"));
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::io::Write;

pub mod common;
pub mod plot;

pub use common::{Options, Progress, ProgressSink};

pub mod esp_aggregation;
pub mod esp_fig8;
pub mod ess_collisions;
pub mod ess_fig11;
pub mod fastpath_fig4;
pub mod fastpath_fig5;
pub mod fastpath_model;
pub mod fastpath_table4;
pub mod fastpath_table5;
pub mod ixp_esp_fig11;
pub mod ixp_esp_table1;
pub mod ixp_esp_table2;
pub mod ixp_esp_table3;
pub mod ixp_fig4;
pub mod ixp_fig5;
pub mod snap_fig2;
pub mod snap_table2;
pub mod trickles_bloom;
pub mod trickles_delta;
pub mod trickles_failover;
pub mod trickles_fig17;
pub mod trickles_fig23;
pub mod trickles_fig9;
pub mod trickles_loss;
pub mod trickles_memory;
pub mod trickles_rtt;

/// The reproductions `waist repro` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Name {
    /// ESP paper Fig. 11: mean probes per `find` against fill, for h = 0.5, 1, 2.
    EssFig11,
    /// ESP paper Fig. 2 and §2.3: collision probabilities of 64-bit random tags.
    EssCollisions,
    /// ESP paper Fig. 8 (§4.3.2): P(a random set of IDmaps is collision-free) vs set size.
    EspFig8,
    /// ESP paper §4.3: plain vs robust aggregation over a 5000-leaf tree with lossy links.
    EspAggregation,
    /// SNAP paper Table II (§VII.A): per-node switching cost of IP and SNAP, per packet and
    /// per byte, from ping round trips over 0–3 hops and 12 payload sizes (ours timed here).
    SnapTable2,
    /// SNAP paper Fig. 2 / §VII.B: ping in PLAN compiled to SNAP (`snap_vm::plan`) beside
    /// the paper's listing and Fig. 1's hand-written ping: instructions, packet overhead,
    /// and a round trip on the VM.
    SnapFig2,
    /// Trickles paper Fig. 9: TCP Reno's window and segments beside Trickles' TCPCwnd(k)
    /// and response numbers (TCPBase 40, startCwnd 3, ssthresh 8).
    TricklesFig9,
    /// Trickles paper §2.2/§6.1: replay-filter false positives with the paper's parameters.
    TricklesBloom,
    /// Trickles paper Fig. 16: stateless server memory against 1 … 10,000 clients.
    TricklesMemory,
    /// Trickles paper Fig. 19: single-client throughput against RTT, Trickles beside
    /// smoltcp's TCP over the same 100 Mb/s link (`--runs`: object MB, default 100).
    TricklesRtt,
    /// Trickles paper Fig. 17: one client's throughput against object size, Trickles with
    /// the request in its SYN beside smoltcp's TCP (handshake, request, response), a fresh
    /// connection per object (`--runs`: objects per size, default 5).
    TricklesFig17,
    /// Trickles paper Figs. 20–21: single-client throughput against forward and reverse
    /// loss at RTT 10 ms, Trickles beside smoltcp's TCP (`--runs`: object MB, default 20).
    TricklesLoss,
    /// Trickles §3.3/§5.1: a server replaced halfway through a transfer, its queued
    /// minisockets dropped or migrated; completion and stall (`--runs`: object MB, default 10).
    TricklesFailover,
    /// Trickles paper Fig. 23: 10 pipelined objects on one connection, SKIP alone vs SKIP +
    /// parallel requests vs TCP, 5–250 KB objects.
    TricklesFig23,
    /// Trickles paper §5.3/§6.1: continuation bytes per response and goodput with full and
    /// delta-encoded continuations over the same 100 Mb/s link (`--runs`: object MB,
    /// default 20).
    TricklesDelta,
    /// ESP paper Table 1: ESS call times and access counts on the modelled IXP1200.
    IxpEspTable1,
    /// ESP paper Table 2: COMPARE and COUNT latency, ESS in SRAM, SDRAM or split.
    IxpEspTable2,
    /// ESP paper Table 3: COMPARE and COUNT throughput, serial as the paper estimated it and
    /// with the model's threads and engines (`--runs`: packets per full-machine run).
    IxpEspTable3,
    /// ESP paper Fig. 11: find() latency on the modelled IXP1200 against fill, h = 0.5, 1, 2,
    /// with chain lengths measured in the real store (`--log2`: store size).
    IxpEspFig11,
    /// Stream-handlers paper Fig. 4: source-to-destination latency, content-based routing
    /// at an intermediate host vs at the IXP, 100 B to 100 kB (IXP1200 model).
    IxpFig4,
    /// Stream-handlers paper Fig. 5: throughput at the intermediate node for each handler,
    /// host vs IXP (IXP1200 model).
    IxpFig5,
    /// Source hashing paper Table 4: instructions to compute an index (source hash, XOR
    /// folding, CRC, keyed SipHash), counted with callgrind (`--runs`: packets, default
    /// 10000).
    FastpathTable4,
    /// Source hashing paper Table 5: instructions to reach the forwarding information
    /// (source hash, XOR, CRC, hashbrown with SipHash and FxHash, threaded index).
    FastpathTable5,
    /// Source hashing paper Fig. 5: collisions against table size for source hashing, XOR
    /// folding and CRC on IPv4 address sets clustered in subnets.
    FastpathFig5,
    /// Source hashing paper Fig. 4: speedup of flow-id caching for the 16-filter
    /// classifier and for IP forwarding with a 100-entry table (`--runs`: rounds).
    FastpathFig4,
    /// Source hashing paper §3.2 Fig. 2 and §4.1: datagram, VC, source-hashing and
    /// threaded-index costs against n with measured L and s (R = 1 ms; `--runs`: timing
    /// rounds, default 41).
    FastpathModel,
}

/// Runs reproduction `name`.
///
/// # Errors
///
/// If the output cannot be written.
pub fn run(name: Name, opts: &Options, out: &mut dyn Write) -> anyhow::Result<()> {
    match name {
        Name::EssFig11 => ess_fig11::run(opts, out).map(|_| ()),
        Name::EssCollisions => ess_collisions::run(opts, out).map(|_| ()),
        Name::EspFig8 => match opts.runs {
            Some(sets) => {
                esp_fig8::run_with_sets(opts, u32::try_from(sets).unwrap_or(u32::MAX), out)
                    .map(|_| ())
            }
            None => esp_fig8::run(opts, out).map(|_| ()),
        },
        Name::EspAggregation => {
            esp_aggregation::run(opts, opts.runs.unwrap_or(1000), out).map(|_| ())
        }
        Name::SnapTable2 => snap_table2::run(opts, out).map(|_| ()),
        Name::SnapFig2 => snap_fig2::run(out).map(|_| ()),
        Name::TricklesFig9 => trickles_fig9::run(opts, out).map(|_| ()),
        Name::TricklesBloom => trickles_bloom::run(opts, out).map(|_| ()),
        Name::TricklesMemory => trickles_memory::run(opts, out).map(|_| ()),
        Name::TricklesRtt => trickles_rtt::run(opts, out).map(|_| ()),
        Name::TricklesLoss => trickles_loss::run(opts, out).map(|_| ()),
        Name::TricklesFailover => trickles_failover::run(opts, out).map(|_| ()),
        Name::TricklesFig23 => trickles_fig23::run(opts, out).map(|_| ()),
        Name::TricklesDelta => trickles_delta::run(opts, out).map(|_| ()),
        Name::TricklesFig17 => trickles_fig17::run(opts, out).map(|_| ()),
        Name::IxpEspTable1 => ixp_esp_table1::run(opts, out).map(|_| ()),
        Name::IxpEspTable2 => ixp_esp_table2::run(opts, out).map(|_| ()),
        Name::IxpEspTable3 => ixp_esp_table3::run(opts, out).map(|_| ()),
        Name::IxpEspFig11 => ixp_esp_fig11::run(opts, out).map(|_| ()),
        Name::IxpFig4 => ixp_fig4::run(opts, out).map(|_| ()),
        Name::IxpFig5 => ixp_fig5::run(opts, out).map(|_| ()),
        Name::FastpathTable4 => fastpath_table4::run(opts, out).map(|_| ()),
        Name::FastpathTable5 => fastpath_table5::run(opts, out).map(|_| ()),
        Name::FastpathFig5 => fastpath_fig5::run(opts, out).map(|_| ()),
        Name::FastpathFig4 => fastpath_fig4::run(opts, out).map(|_| ()),
        Name::FastpathModel => fastpath_model::run(opts, out).map(|_| ()),
    }
}
