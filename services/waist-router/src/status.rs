//! The router's status as the JSON view of its metrics endpoint serves it
//! (`GET /api/status`, loopback peers only): its routes, its links and its counters, read
//! from the node and the links at the time of the request. `waist route show --json` and
//! `waist status --json` read it back into these same types.
//!
//! ```json
//! {"router": "r1",
//!  "routes": [{"prefix": "10.3.0.0/16", "link": "r2", "next_hop": "127.0.0.1:27001",
//!              "cost": 2, "source": "dv", "rank": null, "state": null}, …],
//!  "links": [{"name": "r2", "kind": "udp", "local": "127.0.0.1:27000",
//!             "peer": "127.0.0.1:27001", "up": true, "counters": {"rx_frames": 10, …}}, …],
//!  "counters": {"frames_received": 10, …, "unclaimed": 0},
//!  "dropped": {"no_route": 0, …}}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Everything `GET /api/status` shows of a router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The router's name.
    pub router: String,
    /// Every route: static ones (one per link they list) and what distance vector learned
    /// (reachable ones).
    pub routes: Vec<RouteStatus>,
    /// Every link, in config order.
    pub links: Vec<LinkStatus>,
    /// The node's counters by name (the metrics' `waist_NAME_total`), and `unclaimed`.
    pub counters: BTreeMap<String, u64>,
    /// Frames dropped, by reason (`waist_frames_dropped_total{reason}`).
    pub dropped: BTreeMap<String, u64>,
}

/// One route.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteStatus {
    /// `10.3.0.0/16`, `2001:db8::/32`; a router learned by distance vector is `ID/32`.
    pub prefix: String,
    /// The link it leaves by.
    pub link: String,
    /// The link's far end (its UDP peer), if it has one: the next hop on a point-to-point
    /// link.
    pub next_hop: Option<String>,
    /// The distance-vector cost (0 for static routes).
    pub cost: u32,
    /// `static` or `dv`.
    pub source: String,
    /// A static route's preference on this link (0 = first choice); `None` for learned
    /// routes.
    pub rank: Option<usize>,
    /// A static route's state on this link: `active` (carrying it), `backup` (up, not
    /// first) or `down`; `None` for learned routes.
    pub state: Option<String>,
}

/// One link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkStatus {
    /// Its name.
    pub name: String,
    /// `udp` or `tun`.
    pub kind: String,
    /// The local UDP address it is bound to (`None` for TUN).
    pub local: Option<String>,
    /// The UDP peer it sends to (`None` for TUN, or UDP to many peers).
    pub peer: Option<String>,
    /// Whether the peer is thought to be there (`waist_link_up`).
    pub up: bool,
    /// Its traffic.
    pub counters: LinkCountersStatus,
}

/// A link's counters (the metrics' `waist_link_*_total{link}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCountersStatus {
    /// Frames received (each datagram of a GRO run counts).
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Received frames dropped at the link (truncated, oversize, empty, offload).
    pub rx_dropped: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames dropped because the socket was full.
    pub tx_full: u64,
    /// Send errors.
    pub tx_errors: u64,
    /// Sends and receives refused (the peer's port was closed).
    pub refused: u64,
}

impl From<netio::link::LinkCounters> for LinkCountersStatus {
    fn from(c: netio::link::LinkCounters) -> Self {
        LinkCountersStatus {
            rx_frames: c.rx_frames,
            rx_bytes: c.rx_bytes,
            rx_dropped: c.rx_dropped(),
            rx_errors: c.rx_errors,
            tx_frames: c.tx_frames,
            tx_bytes: c.tx_bytes,
            tx_full: c.tx_full,
            tx_errors: c.tx_errors,
            refused: c.refused,
        }
    }
}
