//! Host tools: the `waist` CLI as an end host on a real link to a router.
//!
//! ```text
//!  waist esp send ─► esp_proto::endpoint::Endpoint ─┐                ┌─► router ─► …
//!  waist snap ping ─► waist_node::host::SnapPinger ─┴─► HostLink ────┤
//!                                                     (IP-in-UDP or  └─◄ answers
//!                                                      raw IPv4)
//! ```
//!
//! A host on a UDP link is simply the link's far end: it sends and receives whole IP
//! packets, one per datagram, to and from the router's link address (the router's
//! `[[link]]` has `local` = the router's side, `peer` = ours). A host behind a TUN device
//! uses the kernel's raw sockets instead ([`Via::Raw`], root). Nothing here parses or
//! builds packets by itself: the ESP endpoint, the SNAP pinger and `waist_ip` do.

pub mod esp;
pub mod link;
pub mod route;
pub mod snap;

use std::net::SocketAddr;
use std::str::FromStr;

pub use link::HostLink;

/// How the tool reaches its router.
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

impl FromStr for Via {
    type Err = String;

    /// `udp:LOCAL=PEER` (e.g. `udp:127.0.0.1:40100=127.0.0.1:40001`) or `raw`.
    fn from_str(s: &str) -> Result<Via, String> {
        if s == "raw" {
            return Ok(Via::Raw);
        }
        let spec = s
            .strip_prefix("udp:")
            .ok_or_else(|| format!("`{s}`: expected udp:LOCAL=PEER or raw"))?;
        let (local, peer) = spec
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected udp:LOCAL=PEER"))?;
        let addr = |a: &str| {
            a.parse::<SocketAddr>()
                .map_err(|e| format!("`{a}` is not an address:port ({e})"))
        };
        Ok(Via::Udp {
            local: addr(local)?,
            peer: addr(peer)?,
        })
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
        assert_eq!(
            "udp:127.0.0.1:5=127.0.0.1:6".parse::<Via>(),
            Ok(Via::Udp {
                local: SocketAddr::from(([127, 0, 0, 1], 5)),
                peer: SocketAddr::from(([127, 0, 0, 1], 6)),
            })
        );
        assert!("udp:127.0.0.1:5".parse::<Via>().is_err());
        assert!("tcp:1=2".parse::<Via>().is_err());
        assert!("udp:x=127.0.0.1:6".parse::<Via>().is_err());
    }
}
