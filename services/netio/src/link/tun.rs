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
/// virtio-net header, TSO and USO on: reads split super-packets, writes coalesce.
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

/// The capacity of each queued packet's buffer: a virtio-net header in front and room to
/// coalesce a 64 KiB super-packet behind it. tun-rs's GRO appends a packet to another only
/// while the buffer's capacity holds the result (`2 × header + length`, as wireguard-go's
/// `coalesceTCPPackets`), without reallocating: buffers sized for one MTU never coalesce
/// (every packet became its own write), and the capacity is also the only bound keeping a
/// coalesced packet's 16-bit IP length from overflowing, so it must not exceed this (with
/// the global allocator `Vec::with_capacity` gives exactly the capacity asked for).
const OUT_CAPACITY: usize = 2 * VIRTIO_NET_HDR_LEN + 65_535;

/// Puts `packet` into the queue buffer `b`, behind room for a virtio-net header.
fn load(b: &mut Vec<u8>, packet: &[u8]) {
    if b.capacity() > OUT_CAPACITY {
        // Grown by an over-long packet: coalescing into it could pass 64 KiB.
        *b = Vec::with_capacity(OUT_CAPACITY);
    }
    b.clear();
    b.resize(VIRTIO_NET_HDR_LEN, 0);
    b.extend_from_slice(packet);
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
        let n = self
            .dev
            .try_recv_multiple(&mut self.original, bufs, sizes, 0)?;
        Ok(batch.fill_packets(n, limit))
    }

    /// Queues `packet`; whether the queue is full and must be flushed now.
    pub(crate) fn push(&mut self, packet: &[u8]) -> bool {
        if self.queued == self.out.len() {
            self.out.push(Vec::with_capacity(OUT_CAPACITY));
        }
        if let Some(b) = self.out.get_mut(self.queued) {
            load(b, packet);
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
        let r =
            tun_rs::DeviceImpl::send_multiple(&self.dev, &mut self.gro, bufs, VIRTIO_NET_HDR_LEN)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The one's-complement sum of `data` added to `sum`, folded.
    fn fold(mut sum: u32, data: &[u8]) -> u16 {
        for c in data.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    /// An IPv4 TCP segment (ACK only) of `payload` bytes at `seq`, checksums right.
    fn segment(seq: u32, payload: usize) -> Vec<u8> {
        let tcp_len = 20 + payload;
        let mut p = vec![0u8; 20 + tcp_len];
        let (src, dst) = ([10, 2, 0, 1], [10, 1, 0, 1]);
        waist_ip::emit_header(&mut p, src.into(), dst.into(), 6, 63, tcp_len).unwrap();
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&5201u16.to_be_bytes());
        t[2..4].copy_from_slice(&40000u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&7u32.to_be_bytes());
        t[12] = 5 << 4;
        t[13] = 0x10;
        t[14..16].copy_from_slice(&512u16.to_be_bytes());
        for (i, b) in t[20..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        let mut pseudo = [src, dst].concat();
        pseudo.extend([0, 6]);
        pseudo.extend((tcp_len as u16).to_be_bytes());
        let sum = !fold(u32::from(fold(0, &pseudo)), &p[20..]);
        p[36..38].copy_from_slice(&sum.to_be_bytes());
        p
    }

    #[test]
    fn queued_segments_coalesce_into_super_packets_of_at_most_64_kib() {
        // One flow's in-order segments, as a split super-packet is forwarded.
        const N: usize = IDEAL_BATCH_SIZE;
        const MSS: usize = 1448;
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for i in 0..N {
            let mut b = Vec::with_capacity(OUT_CAPACITY);
            load(&mut b, &segment(1000 + (i * MSS) as u32, MSS));
            bufs.push(b);
        }
        GROTable::default()
            .apply_gro(&mut bufs, VIRTIO_NET_HDR_LEN, true)
            .unwrap();
        // Coalesced heads grew; the packets they took stay as they were (not written).
        let heads: Vec<&Vec<u8>> = bufs
            .iter()
            .filter(|b| b.len() > VIRTIO_NET_HDR_LEN + 40 + MSS)
            .collect();
        let payload: usize = heads
            .iter()
            .map(|b| b.len() - VIRTIO_NET_HDR_LEN - 40)
            .sum();
        assert_eq!(payload, N * MSS, "every segment went into a super-packet");
        // 45 segments of 1448 fit 64 KiB: three writes instead of 128.
        assert_eq!(heads.len(), N.div_ceil(65_495 / MSS));
        for h in heads {
            let ip = &h[VIRTIO_NET_HDR_LEN..];
            assert!(ip.len() <= 65_535, "super-packet of {} bytes", ip.len());
            assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
            // The virtio-net header asks the kernel to segment at the MSS (TCPv4).
            assert_eq!(h[1], 1, "gso_type TCPV4");
            assert_eq!(usize::from(u16::from_le_bytes([h[4], h[5]])), MSS);
        }
    }
}
