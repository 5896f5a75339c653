//! What a route leads to: a router (by id) or a network prefix some router originates.

use crate::lpm::{IpPrefix, Prefix, Prefix6};

use super::RouterId;

/// A destination of distance-vector routing: the key of a router's routes and of its
/// threaded table's positions.
///
/// Router ids are what the routers advertise about themselves (kind 1 updates); prefixes
/// are the networks routers attach and originate ([`Router::add_local_prefix`], kind 5
/// updates). Both get an index in every router's table the same way, so threaded labels
/// work for either. Ordered routers first, then IPv4, then IPv6 prefixes.
///
/// [`Router::add_local_prefix`]: super::Router::add_local_prefix
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dest {
    /// A router, named by its id.
    Router(RouterId),
    /// An IPv4 prefix.
    V4(Prefix),
    /// An IPv6 prefix.
    V6(Prefix6),
}

impl Dest {
    /// The router id, if this destination is a router.
    pub fn router(self) -> Option<RouterId> {
        match self {
            Self::Router(id) => Some(id),
            _ => None,
        }
    }

    /// The prefix, if this destination is one.
    pub fn prefix(self) -> Option<IpPrefix> {
        match self {
            Self::Router(_) => None,
            Self::V4(p) => Some(IpPrefix::V4(p)),
            Self::V6(p) => Some(IpPrefix::V6(p)),
        }
    }
}

impl From<RouterId> for Dest {
    fn from(id: RouterId) -> Self {
        Self::Router(id)
    }
}

impl From<Prefix> for Dest {
    fn from(p: Prefix) -> Self {
        Self::V4(p)
    }
}

impl From<Prefix6> for Dest {
    fn from(p: Prefix6) -> Self {
        Self::V6(p)
    }
}

impl From<IpPrefix> for Dest {
    fn from(p: IpPrefix) -> Self {
        match p {
            IpPrefix::V4(p) => Self::V4(p),
            IpPrefix::V6(p) => Self::V6(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_and_order() {
        let v4 = Prefix::new([10, 0, 0, 0], 8).unwrap_or_else(|e| panic!("{e}"));
        let v6 = Prefix6::new(
            [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            32,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Dest::from(7), Dest::Router(7));
        assert_eq!(Dest::from(v4).prefix(), Some(IpPrefix::V4(v4)));
        assert_eq!(Dest::from(IpPrefix::V6(v6)), Dest::V6(v6));
        assert_eq!(Dest::Router(7).router(), Some(7));
        assert_eq!(Dest::V4(v4).router(), None);
        assert_eq!(Dest::Router(7).prefix(), None);
        assert!(Dest::Router(u32::MAX) < Dest::V4(v4) && Dest::V4(v4) < Dest::V6(v6));
    }
}
