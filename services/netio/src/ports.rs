//! Free UDP ports to write into configs before the daemon that binds them starts.
//!
//! A config names its links' local addresses, so a test or a launcher that builds configs
//! must choose ports before any daemon binds them. Asking the kernel for port 0 and closing
//! the socket gives a free port, but the kernel may hand the same port to the next such
//! request (in another test running in parallel, say) before the daemon binds it. [`udp`]
//! remembers every port it handed out in this process and never returns one twice.
//!
//! ```
//! let a = netio::ports::udp("127.0.0.1".parse().unwrap()).unwrap();
//! let b = netio::ports::udp("127.0.0.1".parse().unwrap()).unwrap();
//! assert_ne!(a.port(), b.port());
//! ```

use std::collections::BTreeSet;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Mutex;

/// The ports [`udp`] handed out in this process.
static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// How many kernel-chosen ports [`udp`] tries before it gives up.
const ATTEMPTS: usize = 1000;

/// A UDP address on `ip` that was free a moment ago and that no earlier call in this
/// process returned.
///
/// # Errors
/// The bind's error (e.g. `ip` is not an address of this machine), or `AddrInUse` if every
/// port the kernel offered in 1000 tries had already been handed out.
pub fn udp(ip: IpAddr) -> io::Result<SocketAddr> {
    // Hold the sockets until a fresh port turns up, so the kernel offers new ones.
    let mut held = Vec::new();
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for _ in 0..ATTEMPTS {
        let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        let addr = socket.local_addr()?;
        if given.insert(addr.port()) {
            return Ok(addr);
        }
        held.push(socket);
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("no UDP port on {ip} that this process has not already handed out"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_the_same_port_twice() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let a = udp(ip).unwrap();
            assert_eq!(a.ip(), ip);
            assert!(seen.insert(a.port()), "port {} handed out twice", a.port());
            // Still free: the caller can bind it.
            UdpSocket::bind(a).unwrap();
        }
    }

    #[test]
    fn a_foreign_address_is_the_bind_error() {
        assert!(udp("192.0.2.1".parse().unwrap()).is_err());
    }
}
