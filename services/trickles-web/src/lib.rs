//! # trickles-web — the stateless web server and its clients as daemons
//!
//! Thin tokio shells around `crates/trickles`: no protocol logic lives here. The server
//! hands each IP packet to [`trickles::app::Service`] running
//! [`trickles::app::http::HttpApp`] over the files of a directory; the clients drive
//! [`trickles::client::Demux`].
//!
//! * [`access`]: the access log (Common Log Format), written for both transports.
//! * [`keys`]: the key file (a master secret, created 0600 when missing) and the rotation
//!   period every process sharing it agrees on.
//! * [`store`]: the served directory as an object store.
//! * [`server`]: `trickles-web`: Trickles over IP-in-UDP or a TUN device.
//! * [`daemon`]: `trickles-web`'s command line over its config file, and its `run`.
//! * [`tcp`]: the plain-TCP fallback serving the same directory.
//! * [`options`]: the clients' shared options (servers, the first hop, emulation).
//! * [`udp`]: the client side's link: one UDP link to one or more replicas (failover,
//!   spraying), or to the first hop of a waist router network (`--via udp:LOCAL=PEER`), with optional
//!   emulation.
//! * [`get`]: the downloader, `trickles-get`.
//! * [`proxy`]: `trickles-proxy`, relaying TCP clients' GETs over Trickles.
//! * [`load`]: `trickles-load`, the load generator of the benchmarks (Trickles or TCP).

pub mod access;
pub mod daemon;
pub mod get;
pub mod keys;
pub mod load;
pub mod options;
pub mod proxy;
pub mod server;
pub mod store;
pub mod tcp;
pub mod udp;
