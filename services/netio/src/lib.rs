//! # netio — the I/O of the waist daemons
//!
//! The daemons are thin tokio shells around sans-IO cores; everything that touches the
//! operating system lives here, shared by all of them:
//!
//! * [`clock`]: the one clock a daemon reads, in the cores' `Instant` (microseconds), and
//!   the timer deadline for a core's `poll_timeout`.
//! * [`config`]: TOML configs whose errors name the file, line and key; the `[[link]]`
//!   section and its emulation parameters.
//! * [`link`]: links — IP-in-UDP to one peer, or a TUN device — polled together by one
//!   task, each with optional user-space emulation ([`emulate`]) of what it sends.
//! * [`pcap`]: capture per link, LINKTYPE_RAW, for tshark and Wireshark.
//! * [`raw`]: raw IPv4 sockets, whole packets to and from the kernel's own stack (host
//!   tools behind a TUN device; root).
//! * [`metrics`]: a Prometheus endpoint (classic text or OpenMetrics, as the scraper asks;
//!   a JSON view at `/api/status` for tools; 127.0.0.1 by default) that asks the core's
//!   task for a fresh snapshot at each scrape — no shared state, no locks.
//! * [`trace`]: tracing to stderr, filtered by `RUST_LOG`.
//! * [`shutdown`]: graceful shutdown on SIGINT/SIGTERM, awaited by every task.
//!
//! No protocol logic: a daemon hands frames to its core and sends what the core returns.
//! * [`ports`]: free UDP ports for configs written before the daemons that bind them
//!   start (launchers and the daemons' tests).
//! * [`process`]: a daemon as a child process (killed when dropped, its log lines, its
//!   signals, a run to its exit), for the daemons' tests and launchers.
//!
//! No command-line helpers: reading a daemon's metrics page is the `waist` CLI's
//! (`waist::host::scrape`).
#![warn(missing_docs)]

pub mod clock;
pub mod config;
pub mod emulate;
pub mod link;
pub mod metrics;
pub mod pcap;
pub mod ports;
pub mod process;
pub mod raw;
pub mod shutdown;
pub mod trace;
