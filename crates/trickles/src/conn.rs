//! The connection a continuation is bound to: both endpoints' addresses and ports.

/// An IP address, IPv4 or IPv6, as the MAC input sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    /// An IPv4 address.
    V4([u8; 4]),
    /// An IPv6 address.
    V6([u8; 16]),
}

impl Addr {
    /// The address bytes: 4 for IPv4, 16 for IPv6.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Addr::V4(a) => a,
            Addr::V6(a) => a,
        }
    }
}

/// The address as the IP layer (`waist-ip`) and `core::net` see it.
impl From<Addr> for core::net::IpAddr {
    #[inline]
    fn from(a: Addr) -> Self {
        match a {
            Addr::V4(a) => core::net::IpAddr::from(a),
            Addr::V6(a) => core::net::IpAddr::from(a),
        }
    }
}

/// An IP address as Trickles binds it into continuations.
impl From<core::net::IpAddr> for Addr {
    #[inline]
    fn from(a: core::net::IpAddr) -> Self {
        match a {
            core::net::IpAddr::V4(a) => Addr::V4(a.octets()),
            core::net::IpAddr::V6(a) => Addr::V6(a.octets()),
        }
    }
}

/// Client and server addresses and ports of one connection.
///
/// Every continuation's MAC covers this tuple, so a continuation issued to one connection
/// is worthless on any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FourTuple {
    /// The client's (stateful side's) address.
    pub client_addr: Addr,
    /// The client's port.
    pub client_port: u16,
    /// The server's (stateless side's) address.
    pub server_addr: Addr,
    /// The server's port.
    pub server_port: u16,
}

/// The longest [`FourTuple::encode`] output: two IPv6 addresses, two ports and a tag byte.
pub const FOUR_TUPLE_MAX_LEN: usize = 1 + 16 + 2 + 16 + 2;

impl FourTuple {
    /// Writes the tuple's canonical encoding into `out` and returns its length: a byte
    /// `4` or `6` (the address family), client address, client port, server address,
    /// server port, big-endian. Mixed families (which real connections never have) get
    /// family bytes `46` and `64`, so every tuple encodes uniquely.
    pub fn encode(&self, out: &mut [u8; FOUR_TUPLE_MAX_LEN]) -> usize {
        let family = match (self.client_addr, self.server_addr) {
            (Addr::V4(_), Addr::V4(_)) => 4u8,
            (Addr::V6(_), Addr::V6(_)) => 6,
            (Addr::V4(_), Addr::V6(_)) => 46,
            (Addr::V6(_), Addr::V4(_)) => 64,
        };
        let mut n = 0;
        let mut put = |bytes: &[u8], out: &mut [u8; FOUR_TUPLE_MAX_LEN]| {
            for &b in bytes {
                if let Some(slot) = out.get_mut(n) {
                    *slot = b;
                }
                n += 1;
            }
        };
        put(&[family], out);
        put(self.client_addr.as_bytes(), out);
        put(&self.client_port.to_be_bytes(), out);
        put(self.server_addr.as_bytes(), out);
        put(&self.server_port.to_be_bytes(), out);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_distinct_per_family_and_field() {
        let a = FourTuple {
            client_addr: Addr::V4([10, 0, 0, 1]),
            client_port: 1000,
            server_addr: Addr::V4([10, 0, 0, 2]),
            server_port: 80,
        };
        let mut b = a;
        b.client_port = 1001;
        let mut c = a;
        c.server_addr = Addr::V6([0; 16]);
        let (mut ea, mut eb, mut ec) = (
            [0; FOUR_TUPLE_MAX_LEN],
            [0; FOUR_TUPLE_MAX_LEN],
            [0; FOUR_TUPLE_MAX_LEN],
        );
        let (na, nb, nc) = (a.encode(&mut ea), b.encode(&mut eb), c.encode(&mut ec));
        assert_eq!(na, 13);
        assert_eq!(nc, 25);
        assert_ne!(ea[..na], eb[..nb]);
        assert_ne!(ea[..na], ec[..nc]);
    }
}
