//! TUN devices: opened with offload (virtio-net header, TSO/USO), read a super-packet at a
//! time and split into packets no longer than the MTU, written in coalesced batches; and
//! the address notation they are configured in.
//!
//! ```text
//!  kernel ─► read: virtio header + up to 64 KiB ─► tun-rs gso_split ─► packets ≤ MTU ─► core
//!  core ─► packets ─► queue (header room in front) ─► tun-rs GRO coalesce ─► few writes ─► kernel
//! ```
//!
//! This is wireguard-go's TUN offload (`tun/offload_linux.go`) as tun-rs 2 implements it:
//! the core never sees more than an MTU, the kernel sees few, large packets. Without
//! offload (asked for, or a device that refuses it) the same calls read and write one
//! packet each.

use std::io;
use std::net::IpAddr;

use tun_rs::{GROTable, IDEAL_BATCH_SIZE, VIRTIO_NET_HDR_LEN};

use super::batch::{Batch, Fill};
use super::tx::Sent;

/// A TUN device, as [`open_tun`] returns it.
pub use tun_rs::AsyncDevice;

/// Why TUN devices moved into network namespaces cannot be used here, if they cannot: not
/// root, no `/dev/net/tun`, or no `ip` command (iproute2). What the daemons' namespace
/// tests and `waist demo --tun` check before they start.
pub fn netns_unsupported() -> Option<&'static str> {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    });
    if !root {
        return Some("not root");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun");
    }
    let ip = std::process::Command::new("ip")
        .arg("-V")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !ip.is_ok_and(|s| s.success()) {
        return Some("no `ip` command (apt-get install iproute2)");
    }
    None
}

/// Creates (or opens) the TUN device `name` with `addresses` (address, prefix length) and
/// `mtu`, offloads off, for a daemon that drives one device itself. Needs root.
///
/// # Errors
///
/// The device cannot be created (no permission, a bad name).
pub fn open_tun(
    name: &str,
    addresses: &[(IpAddr, u8)],
    mtu: usize,
) -> anyhow::Result<tun_rs::AsyncDevice> {
    open_tun_with(name, addresses, mtu, false)
}

/// [`open_tun`] with offload on or off: with it the device is read and written with a
/// virtio-net header, TSO and USO on (see the [module docs](self)).
///
/// # Errors
///
/// The device cannot be created (no permission, a bad name).
pub fn open_tun_with(
    name: &str,
    addresses: &[(IpAddr, u8)],
    mtu: usize,
    offload: bool,
) -> anyhow::Result<tun_rs::AsyncDevice> {
    let mut b = tun_rs::DeviceBuilder::new()
        .name(name.to_string())
        .mtu(u16::try_from(mtu).unwrap_or(1500))
        .offload(offload);
    for &(addr, len) in addresses {
        b = match addr {
            IpAddr::V4(v4) => b.ipv4(v4, len, None),
            IpAddr::V6(v6) => b.ipv6(v6, len),
        };
    }
    b.build_async()
        .map_err(|e| anyhow::anyhow!("cannot create TUN device `{name}`: {e} (root needed)"))
}

/// `10.1.0.1/24` → (address, prefix length).
///
/// # Errors
///
/// A message naming what is wrong.
pub fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected ADDRESS/LENGTH"))?;
    let addr: IpAddr = a.parse().map_err(|e| format!("`{a}`: {e}"))?;
    let len: u8 = l.parse().map_err(|e| format!("`{l}`: {e}"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if len > max {
        return Err(format!("prefix length {len} above {max}"));
    }
    Ok((addr, len))
}

/// A TUN device driven in batches: reads split super-packets, writes coalesce.
pub(crate) struct TunIo {
    pub(crate) dev: tun_rs::AsyncDevice,
    /// One read: the virtio-net header and a super-packet.
    original: Vec<u8>,
    gro: GROTable,
    /// Queued packets, each behind room for a virtio-net header.
    out: Vec<Vec<u8>>,
    queued: usize,
}

impl TunIo {
    pub(crate) fn new(dev: tun_rs::AsyncDevice) -> TunIo {
        TunIo {
            dev,
            original: vec![0; VIRTIO_NET_HDR_LEN + 65_535],
            gro: GROTable::default(),
            out: Vec::new(),
            queued: 0,
        }
    }

    /// Whether reads and writes carry a virtio-net header (offload on).
    pub(crate) fn offload(&self) -> bool {
        self.dev.tcp_gso() || self.dev.udp_gso()
    }

    /// One read, split into `batch`'s slots; packets over `limit` are counted, not handed
    /// on.
    pub(crate) fn try_recv_batch(&mut self, batch: &mut Batch, limit: usize) -> io::Result<Fill> {
        let (bufs, sizes) = batch.packet_slots();
        let n = self.dev.try_recv_multiple(&mut self.original, bufs, sizes, 0)?;
        Ok(batch.fill_packets(n, limit))
    }

    /// Queues `packet`; whether the queue is full and must be flushed now.
    pub(crate) fn push(&mut self, packet: &[u8]) -> bool {
        if self.queued == self.out.len() {
            self.out.push(Vec::with_capacity(VIRTIO_NET_HDR_LEN + 1500));
        }
        if let Some(b) = self.out.get_mut(self.queued) {
            b.clear();
            b.resize(VIRTIO_NET_HDR_LEN, 0);
            b.extend_from_slice(packet);
            self.queued += 1;
        }
        self.queued >= IDEAL_BATCH_SIZE
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    /// Writes every queued packet, coalesced where the offload allows; with `capturing`,
    /// `captured` sees each packet as it was queued (before coalescing) if the write
    /// succeeded.
    pub(crate) fn flush(&mut self, capturing: bool, mut captured: impl FnMut(&[u8])) -> Sent {
        let mut sent = Sent::default();
        let n = std::mem::take(&mut self.queued);
        let Some(bufs) = self.out.get_mut(..n) else {
            return sent;
        };
        if n == 0 {
            return sent;
        }
        let bytes: usize = bufs.iter().map(|b| b.len() - VIRTIO_NET_HDR_LEN).sum();
        // Copied for the capture first: coalescing rewrites the buffers.
        let copies: Vec<Vec<u8>> = if capturing {
            bufs.iter()
                .map(|b| b.get(VIRTIO_NET_HDR_LEN..).unwrap_or_default().to_vec())
                .collect()
        } else {
            Vec::new()
        };
        let r = tun_rs::DeviceImpl::send_multiple(&self.dev, &mut self.gro, bufs, VIRTIO_NET_HDR_LEN)
            .map(|_| ());
        sent.calls += 1;
        if r.is_ok() {
            for c in &copies {
                captured(c);
            }
        }
        sent.record(n, bytes, &r);
        sent
    }
}
