//! Free UDP ports to write into configs before the daemon that binds them starts.
//!
//! A config names its links' local addresses, so a test or a launcher that builds configs
//! must choose ports before any daemon binds them. Three things can take such a port
//! between the choice and the daemon's bind:
//!
//! * **the kernel's ephemeral allocation**: a port chosen by binding port 0 and closing the
//!   socket is one the kernel may hand to the next `bind(…:0)` or `connect` of any process;
//! * **a child being spawned**: a socket closed while another thread forks stays open in
//!   the child until the child execs, so closing a probe socket does not free its port at
//!   once, and the daemon's bind can fail with `AddrInUse`;
//! * **another process choosing too** (two test runs on one machine).
//!
//! On Linux [`udp`] therefore takes ports from just below the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`), which the kernel never hands out for port 0, and checks
//! that no socket holds one by reading `/proc/net/udp` and `/proc/net/udp6`, without
//! opening a socket on it. Each port it gives is claimed with an `flock` on a file named
//! after it in `$TMPDIR/netio-ports`, held until the process exits, and other processes
//! pass over claimed ports. Elsewhere (or where `/proc` cannot be read) it falls back to
//! asking the kernel for port 0. Either way it never returns a port twice in a process.
//!
//! ```
//! let a = netio::ports::udp("127.0.0.1".parse().unwrap()).unwrap();
//! let b = netio::ports::udp("127.0.0.1".parse().unwrap()).unwrap();
//! assert_ne!(a.port(), b.port());
//! ```

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;

/// The ports [`udp`] handed out in this process, and its claims on them.
static GIVEN: Mutex<Option<Given>> = Mutex::new(None);

/// How many ports [`udp`] tries before it gives up.
const ATTEMPTS: usize = 1000;

/// How many ports below the ephemeral range [`udp`] chooses from: with Linux's default
/// range, 30068–32767, clear of the fixed ports `waist up` and the demo count up from
/// (27000 and 28000) and of the tests' per-process `first_port`s (14000–26400).
const POOL: u16 = 2_700;

/// The lowest port [`udp`] chooses (the ones below are privileged).
const LOWEST: u16 = 1024;

/// The smallest pool worth choosing from; with less, [`udp`] asks the kernel.
const SMALLEST_POOL: u16 = 1000;

/// A UDP address on `ip` that was free a moment ago and that no earlier call in this
/// process, nor any other process still running, was given. See the [module docs](self)
/// for how it is chosen.
///
/// # Errors
/// The bind's error if `ip` cannot be bound (e.g. it is not an address of this machine), or
/// `AddrInUse` if 1000 candidates were all taken or already handed out.
pub fn udp(ip: IpAddr) -> io::Result<SocketAddr> {
    // Whether `ip` is ours at all. The probe's port is an ephemeral one nobody is given.
    UdpSocket::bind(SocketAddr::new(ip, 0))?;
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let given = given.get_or_insert_with(|| Given::new(claims_dir()));
    match (pool(), bound_ports()) {
        (Some(pool), Some(bound)) => from_pool(ip, pool, &bound, given),
        _ => from_kernel(ip, given),
    }
}

/// The ports a process was given, each claimed with a lock on a file named after it, so
/// that other processes using this module pass over it while this one runs.
///
/// The lock is `flock`'s: the kernel drops it when the process exits, however it exits,
/// so a crashed test leaves no port claimed. Where no such file can be opened (no writable
/// temporary directory), ports are still given once per process, unclaimed.
#[derive(Debug)]
struct Given {
    ports: BTreeSet<u16>,
    /// Where the claim files are; `None`: ports are not claimed.
    dir: Option<PathBuf>,
    /// The locked claim files, held until the process exits.
    claims: Vec<File>,
}

impl Given {
    fn new(dir: Option<PathBuf>) -> Given {
        Given {
            ports: BTreeSet::new(),
            dir,
            claims: Vec::new(),
        }
    }

    /// Takes `port` if this process has not given it and no other process claims it.
    fn take(&mut self, port: u16) -> bool {
        if self.ports.contains(&port) {
            return false;
        }
        if let Some(dir) = &self.dir {
            let path = dir.join(port.to_string());
            // Another user's claim file cannot be opened for writing; a lock needs none.
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .or_else(|_| File::open(&path));
            match file.map(|f| (f.try_lock(), f)) {
                Ok((Ok(()), f)) => self.claims.push(f),
                Ok((Err(TryLockError::WouldBlock), _)) => return false,
                // The file cannot be opened or locked: give the port unclaimed.
                Ok((Err(TryLockError::Error(_)), _)) | Err(_) => {}
            }
        }
        self.ports.insert(port)
    }
}

/// The directory of claim files (`netio-ports` in the temporary directory), shared by
/// every user: created world-writable and sticky, as `/tmp` is.
fn claims_dir() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("netio-ports");
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Best effort: another user's claims only need to be lockable, not written.
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
        }
    }
    Some(dir)
}

/// A port of `pool` that no socket holds (`bound`) and that can be `given`.
fn from_pool(
    ip: IpAddr,
    pool: Range<u16>,
    bound: &BTreeSet<u16>,
    given: &mut Given,
) -> io::Result<SocketAddr> {
    let random = RandomState::new();
    let len = u64::from(pool.end - pool.start);
    for attempt in 0..ATTEMPTS {
        let offset = random.hash_one(attempt) % len;
        // `offset < len`, which fits a u16.
        let port = pool.start + u16::try_from(offset).unwrap_or(0);
        if !bound.contains(&port) && given.take(port) {
            return Ok(SocketAddr::new(ip, port));
        }
    }
    Err(exhausted(ip))
}

/// A port the kernel offers for port 0 that can be `given`.
fn from_kernel(ip: IpAddr, given: &mut Given) -> io::Result<SocketAddr> {
    // Hold the sockets until a fresh port turns up, so the kernel offers new ones.
    let mut held = Vec::new();
    for _ in 0..ATTEMPTS {
        let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        let addr = socket.local_addr()?;
        if given.take(addr.port()) {
            return Ok(addr);
        }
        held.push(socket);
    }
    Err(exhausted(ip))
}

fn exhausted(ip: IpAddr) -> io::Error {
    io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("no free UDP port on {ip} that this process has not already handed out"),
    )
}

/// The ports just below the kernel's ephemeral range, if that range can be read and leaves
/// enough of them.
fn pool() -> Option<Range<u16>> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    pool_below(&range)
}

/// The pool below the ephemeral range `range` (as `ip_local_port_range` prints it: `low
/// high`).
fn pool_below(range: &str) -> Option<Range<u16>> {
    let low: u16 = range.split_whitespace().next()?.parse().ok()?;
    let start = low.saturating_sub(POOL).max(LOWEST);
    (low.saturating_sub(start) >= SMALLEST_POOL).then_some(start..low)
}

/// The local ports of every UDP socket in this network namespace, IPv4 and IPv6, if
/// `/proc` can tell.
fn bound_ports() -> Option<BTreeSet<u16>> {
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        let text = std::fs::read_to_string(table).ok()?;
        ports.extend(local_ports(&text));
    }
    Some(ports)
}

/// The local ports in a `/proc/net/udp{,6}` table: the second column of every row after the
/// header is `ADDRESS:PORT`, the port in hexadecimal.
fn local_ports(table: &str) -> impl Iterator<Item = u16> + '_ {
    table.lines().skip(1).filter_map(|row| {
        let local = row.split_whitespace().nth(1)?;
        let (_, port) = local.rsplit_once(':')?;
        u16::from_str_radix(port, 16).ok()
    })
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

    #[test]
    #[cfg(target_os = "linux")]
    fn linux_ports_come_from_below_the_ephemeral_range() {
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
        let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
        let Some(pool) = pool_below(&range) else {
            eprintln!("skipped: the ephemeral range starts at {low}, no pool below it");
            return;
        };
        for _ in 0..50 {
            let port = udp([127, 0, 0, 1].into()).unwrap().port();
            assert!(pool.contains(&port) && port < low, "{port} not in {pool:?}");
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn proc_sees_a_port_a_socket_holds() {
        // Hold a port of the pool, then check the table sees it.
        let Some(pool) = pool() else {
            eprintln!("skipped: no pool below the ephemeral range");
            return;
        };
        let held = (pool.start..pool.end)
            .find_map(|p| UdpSocket::bind(("127.0.0.1", p)).ok())
            .unwrap();
        let port = held.local_addr().unwrap().port();
        assert!(bound_ports().unwrap().contains(&port));
    }

    #[test]
    fn a_bound_or_given_port_is_never_chosen() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let bound = BTreeSet::from([40_000]);
        let mut given = Given::new(None);
        assert!(given.take(40_002));
        assert_eq!(
            from_pool(ip, 40_000..40_003, &bound, &mut given).unwrap(),
            SocketAddr::new(ip, 40_001)
        );
        assert!(given.ports.contains(&40_001));
        let e = from_pool(ip, 40_000..40_003, &bound, &mut given).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_port_another_process_claims_is_passed_over() {
        // Two `Given`s on one directory are two processes: flock locks belong to the open
        // file, so the second open's lock fails while the first is held.
        let dir = std::env::temp_dir().join(format!("netio-ports-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut one = Given::new(Some(dir.clone()));
        let mut two = Given::new(Some(dir.clone()));
        assert!(one.take(31_000));
        assert!(!two.take(31_000), "claimed twice");
        assert!(two.take(31_001));
        // The first process exits: its claims go with it.
        drop(one);
        assert!(two.take(31_000));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_pool_sits_below_the_ephemeral_range() {
        assert_eq!(pool_below("32768\t60999\n"), Some(30_068..32_768));
        assert_eq!(pool_below("3000 20000"), Some(1024..3000));
        // Too little room below: ask the kernel instead.
        assert_eq!(pool_below("2000 60999"), None);
        assert_eq!(pool_below("garbage"), None);
    }

    #[test]
    fn proc_tables_are_read_for_their_local_ports() {
        let v4 = "  sl  local_address rem_address   st\n\
                  \x20 12: 0100007F:A3BE 0100007F:9F8E 01 00000000:00000000\n\
                  \x20 13: 00000000:0035 00000000:0000 07 00000000:00000000\n";
        assert_eq!(local_ports(v4).collect::<Vec<_>>(), [0xA3BE, 0x35]);
        let v6 = "  sl  local_address                         remote_address\n\
                  \x20 0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 07\n";
        assert_eq!(local_ports(v6).collect::<Vec<_>>(), [0x1F90]);
    }
}
