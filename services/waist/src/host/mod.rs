//! Host tools: the `waist` CLI as an end host on a real link to a router.
//!
//! ```text
//!  waist esp send ─► esp_proto::endpoint::Endpoint ─┐                ┌─► router ─► …
//!  waist snap ping ─► waist_node::host::SnapPinger ─┤                │
//!  waist stream … ─► stream_handlers::endpoint,     ─┴─► HostLink ────┤
//!                    envelope (UDP 7400, 7401)        (IP-in-UDP or  └─◄ answers
//!                                                      raw IPv4)
//! ```
//!
//! A host on a UDP link is simply the link's far end: it sends and receives whole IP
//! packets, one per datagram, to and from the router's link address (the router's
//! `[[link]]` has `local` = the router's side, `peer` = ours). A host behind a TUN device
//! uses the kernel's raw sockets instead ([`Via::Raw`], root). Nothing here parses or
//! builds packets by itself: the ESP endpoint, the SNAP pinger and `waist_ip` do; nor
//! opens a socket: the link is `netio`'s ([`netio::link::Links`], [`netio::raw::RawIp`]).
//!
//! Beside the tools, what a command-line client of our daemons needs: [`scrape`] reads a
//! daemon's metrics page (`waist route show`, and `waist up`/`status` waiting for and
//! reporting on their daemons). Free ports for configs written ahead are netio's
//! (`netio::ports`).

pub mod esp;
pub mod link;
pub mod route;
pub mod scrape;
pub mod snap;
pub mod stream;
pub mod stream_host;

use std::net::SocketAddr;
use std::str::FromStr;

use netio::link::LinkSpec;

pub use link::HostLink;

/// How the tool reaches its router: `--via`, in the one link notation of every waist
/// daemon and tool ([`netio::link::LinkSpec`]) or `raw`.
///
/// ```text
///  udp:LOCAL=PEER   IP-in-UDP to the router   udp:127.0.0.1:40100=127.0.0.1:40001
///  raw              the kernel's IPv4 stack   (a host behind a TUN device; root)
/// ```
///
/// `udp:LOCAL` (no peer) and `tun:NAME` are links too, but not a host tool's: a host's
/// UDP link goes to its one router, and a host behind a TUN device reaches it with `raw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// An IP-in-UDP link: bind `local` (the router's link peer address) and exchange
    /// datagrams with `peer` (the router's link local address).
    Udp {
        /// Our side of the link.
        local: SocketAddr,
        /// The router's side.
        peer: SocketAddr,
    },
    /// The kernel's IPv4 stack through raw sockets (a host behind a TUN device; root).
    Raw,
}

impl Via {
    /// The link it opens, in the one notation (`None` for raw mode).
    pub fn spec(&self) -> Option<LinkSpec> {
        match *self {
            Via::Udp { local, peer } => Some(LinkSpec::Udp {
                local,
                peer: Some(peer),
            }),
            Via::Raw => None,
        }
    }
}

impl FromStr for Via {
    type Err = String;

    /// `udp:LOCAL=PEER` (e.g. `udp:127.0.0.1:40100=127.0.0.1:40001`, parsed by
    /// [`LinkSpec`]) or `raw`.
    fn from_str(s: &str) -> Result<Via, String> {
        if s == "raw" {
            return Ok(Via::Raw);
        }
        let spec = s
            .parse::<LinkSpec>()
            .map_err(|e| format!("{e} (a host tool takes udp:LOCAL=PEER or raw)"))?;
        match spec {
            LinkSpec::Udp {
                local,
                peer: Some(peer),
            } => Ok(Via::Udp { local, peer }),
            LinkSpec::Udp { peer: None, .. } => Err(format!(
                "`{s}`: a host tool's link goes to one router: udp:LOCAL=PEER \
                 (PEER: the router's end of the link)"
            )),
            LinkSpec::Tun { .. } => Err(format!(
                "`{s}`: host tools do not open TUN devices; a host behind one reaches its \
                 router with `--via raw`"
            )),
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.spec() {
            Some(spec) => write!(f, "{spec}"),
            None => f.write_str("raw"),
        }
    }
}

/// The tools' default source address: the first host of 10.1.0.0/16, the network the
/// examples and tests attach tools to (a router must route it back toward the tool).
pub const DEFAULT_SRC: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 1, 0, 1);

/// Exit code of an answer (or of a ping with at least one reply).
pub const EXIT_ANSWER: u8 = 0;
/// Exit code of a computation that aborted in the network.
pub const EXIT_ABORT: u8 = 1;
/// Exit code when nothing came back in time.
pub const EXIT_TIMEOUT: u8 = 2;

/// Runs `f` on a current-thread runtime (the tools are one task each).
///
/// # Errors
///
/// If the runtime cannot be built, or `f` fails.
pub fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_parses() {
        assert_eq!("raw".parse::<Via>(), Ok(Via::Raw));
        let via = Via::Udp {
            local: SocketAddr::from(([127, 0, 0, 1], 5)),
            peer: SocketAddr::from(([127, 0, 0, 1], 6)),
        };
        assert_eq!("udp:127.0.0.1:5=127.0.0.1:6".parse::<Via>(), Ok(via));
        assert_eq!(via.to_string(), "udp:127.0.0.1:5=127.0.0.1:6");
        assert_eq!(
            "udp:[::1]:5=[::1]:6".parse::<Via>().map(|v| v.to_string()),
            Ok("udp:[::1]:5=[::1]:6".to_string())
        );
        assert_eq!(Via::Raw.to_string(), "raw");
        assert!("tcp:1=2".parse::<Via>().is_err());
        assert!("udp:x=127.0.0.1:6".parse::<Via>().is_err());
    }

    #[test]
    fn links_that_are_not_a_hosts_say_why() {
        let e = "udp:127.0.0.1:5".parse::<Via>().unwrap_err();
        assert!(
            e.contains("one router") && e.contains("udp:LOCAL=PEER"),
            "{e}"
        );
        let e = "tun:wth0,10.1.0.1/16".parse::<Via>().unwrap_err();
        assert!(e.contains("TUN") && e.contains("--via raw"), "{e}");
        let e = "carrier-pigeon:1".parse::<Via>().unwrap_err();
        assert!(e.contains("udp:LOCAL=PEER or raw"), "{e}");
    }
}
