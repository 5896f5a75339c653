//! The receive side: one batch of slots, filled by one `recvmmsg` (UDP, with GRO) or one
//! TUN read (with offload, a super-packet split into packets), reused from call to call.
//!
//! ```text
//!  recvmmsg ─► slots [buf, len, stride, source] ─► split by stride ─► frames ≤ the limit
//!  tun read ─► virtio header + super-packet ─► tun-rs splits ─► one slot a packet ─┘
//! ```
//!
//! Each fill records what it received and what it dropped ([`Fill`]), so the link's
//! counters are written in one place, and [`Batch::frames`] / [`Batch::datagrams`] hand
//! out exactly the frames that were counted as delivered.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use super::split::split;

/// Slots one UDP receive fills at most (`recvmmsg`).
pub const BATCH: usize = 32;
/// Slots one TUN read may fill: a 64 KiB super-packet split at the smallest MSS offload is
/// used with (see `tun.rs`).
pub(crate) const TUN_SLOTS: usize = 128;
/// Bytes of each slot: a GRO-coalesced run (or the largest datagram) fits.
const SLOT: usize = 64 * 1024;

/// What one slot holds after a receive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub(crate) len: usize,
    pub(crate) stride: usize,
    pub(crate) src: SocketAddr,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            len: 0,
            stride: 0,
            src: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        }
    }
}

/// What one receive handed over and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fill {
    /// Datagrams (or TUN packets) the kernel handed over.
    pub datagrams: usize,
    /// Bytes in them.
    pub bytes: usize,
    /// Cut short by a buffer too small (`truncated`).
    pub truncated: usize,
    /// Longer than the link carries (`oversize`).
    pub oversize: usize,
    /// Empty datagrams (`empty`).
    pub empty: usize,
}

impl Fill {
    /// Datagrams that go on to the daemon's core.
    pub fn delivered(&self) -> usize {
        self.datagrams - self.truncated - self.oversize - self.empty
    }
}

/// Buffers for a link's batched receive ([`Links::recv`](super::Links::recv),
/// [`Links::try_recv_batch`](super::Links::try_recv_batch)), reused from call to call.
pub struct Batch {
    pub(super) bufs: Vec<Vec<u8>>,
    pub(super) meta: Vec<quinn_udp::RecvMeta>,
    pub(super) slots: Vec<Slot>,
    pub(super) sizes: Vec<usize>,
    pub(super) filled: usize,
    /// Longest frame handed on by the last fill.
    pub(super) limit: usize,
    pub(super) last: Fill,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("filled", &self.filled)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    /// Room for a receive of [`BATCH`] UDP slots of 64 KiB (and, once a TUN link reads
    /// into it, a super-packet's packets).
    pub fn new() -> Batch {
        Batch {
            bufs: (0..BATCH).map(|_| vec![0u8; SLOT]).collect(),
            meta: vec![quinn_udp::RecvMeta::default(); BATCH],
            slots: vec![Slot::default(); BATCH],
            sizes: Vec::new(),
            filled: 0,
            limit: usize::MAX,
            last: Fill::default(),
        }
    }

    /// Writes every slot once, so the batch's memory (2 MiB for UDP) is resident from the
    /// start: a daemon's footprint then shows what it holds, not how many slots a burst
    /// has happened to fill so far. Returns the bytes it holds.
    pub fn make_resident(&mut self) -> usize {
        self.bufs
            .iter_mut()
            .map(|b| {
                b.fill(0);
                b.len()
            })
            .sum()
    }

    /// What the last receive handed over and dropped.
    pub fn last(&self) -> Fill {
        self.last
    }

    /// Forgets the last receive.
    pub(crate) fn clear(&mut self) {
        self.filled = 0;
        self.last = Fill::default();
    }

    /// Runs one UDP receive (`recv(slices, meta)`, quinn-udp's) into the slots, records
    /// what it filled and counts it against `limit` (the longest frame handed on).
    pub(crate) fn fill_udp(
        &mut self,
        limit: usize,
        recv: impl FnOnce(&mut [io::IoSliceMut<'_>], &mut [quinn_udp::RecvMeta]) -> io::Result<usize>,
    ) -> io::Result<Fill> {
        self.clear();
        let mut it = self.bufs.iter_mut();
        let mut slices: [io::IoSliceMut<'_>; BATCH] = std::array::from_fn(|_| {
            io::IoSliceMut::new(it.next().map_or(&mut [][..], |b| &mut b[..]))
        });
        let n = recv(&mut slices, &mut self.meta)?.min(BATCH);
        for (slot, m) in self.slots.iter_mut().zip(&self.meta).take(n) {
            *slot = Slot {
                len: m.len,
                stride: m.stride,
                src: m.addr,
            };
        }
        Ok(self.account(n, limit))
    }

    /// The slots and their sizes for a TUN read ([`TUN_SLOTS`] of them, made on first use).
    pub(crate) fn packet_slots(&mut self) -> (&mut [Vec<u8>], &mut [usize]) {
        if self.bufs.len() < TUN_SLOTS {
            self.bufs.resize_with(TUN_SLOTS, || vec![0u8; SLOT]);
            self.slots.resize(TUN_SLOTS, Slot::default());
            self.sizes.resize(TUN_SLOTS, 0);
        }
        self.clear();
        (&mut self.bufs, &mut self.sizes)
    }

    /// Records `n` slots of one packet each (`sizes`), as a TUN read fills them.
    pub(crate) fn fill_packets(&mut self, n: usize, limit: usize) -> Fill {
        let n = n.min(self.sizes.len());
        for (slot, &len) in self.slots.iter_mut().zip(&self.sizes).take(n) {
            *slot = Slot {
                len,
                stride: len,
                ..Slot::default()
            };
        }
        self.account(n, limit)
    }

    /// Counts the `n` slots just filled.
    fn account(&mut self, n: usize, limit: usize) -> Fill {
        self.filled = n;
        self.limit = limit;
        let mut f = Fill::default();
        for (slot, buf) in self.slots.iter().zip(&self.bufs).take(n) {
            if slot.len == 0 {
                f.datagrams += 1;
                f.empty += 1;
                continue;
            }
            let s = split(slot.len, slot.stride, buf.len());
            f.datagrams += s.datagrams;
            f.truncated += s.truncated;
            f.bytes += slot.len.min(buf.len());
            f.oversize += s.filter(|r| r.len() > limit).count();
        }
        self.last = f;
        f
    }

    /// The datagrams of the last receive with their sources (a GRO slot split by its
    /// stride), exactly those counted as delivered.
    pub fn datagrams(&mut self) -> impl Iterator<Item = (SocketAddr, &mut [u8])> {
        let limit = self.limit;
        self.bufs
            .iter_mut()
            .zip(self.slots.iter())
            .take(self.filled)
            .flat_map(move |(buf, slot)| {
                let src = slot.src;
                let cap = buf.len();
                let mut rest: &mut [u8] = buf;
                let mut at = 0;
                split(slot.len, slot.stride, cap).filter_map(move |r| {
                    let taken = std::mem::take(&mut rest);
                    let (_, tail) = taken.split_at_mut(r.start - at);
                    let (d, tail) = tail.split_at_mut(r.len());
                    rest = tail;
                    at = r.end;
                    (d.len() <= limit).then_some((src, d))
                })
            })
    }

    /// The delivered datagrams of the last receive as runs: each GRO slot's datagrams as
    /// one region of the buffer with their stride (all `stride` long but the last), so
    /// that a caller that rewrites them in place can send the region on as one GSO run
    /// ([`Links::send_run`](super::Links::send_run)); a slot whose stride is over the limit
    /// yields only its last datagram, if that one fits. The same datagrams, in the same
    /// order, as [`datagrams`](Batch::datagrams): `(source, stride, region)`.
    pub fn runs_mut(&mut self) -> impl Iterator<Item = (SocketAddr, usize, &mut [u8])> {
        let limit = self.limit;
        self.bufs
            .iter_mut()
            .zip(self.slots.iter())
            .take(self.filled)
            .filter_map(move |(buf, slot)| {
                let cap = buf.len();
                let mut s = split(slot.len, slot.stride, cap);
                let first = s.next()?;
                let stride = first.len();
                let end = s.last().map_or(first.end, |r| r.end);
                let region = buf.get_mut(..end)?;
                if stride <= limit {
                    return Some((slot.src, stride, region));
                }
                // Every full datagram is over the limit; only a shorter last one may fit.
                let tail = region.get_mut((end - 1) / stride * stride..)?;
                (tail.len() < stride && tail.len() <= limit).then_some((slot.src, tail.len(), tail))
            })
    }

    /// The frames of the last receive, one per delivered datagram.
    pub fn frames(&mut self) -> impl Iterator<Item = &mut [u8]> {
        self.datagrams().map(|(_, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any metadata a receive reports (strides, lengths beyond the buffer, empty
        /// slots, sources): the frames handed on are exactly the delivered count, none
        /// over the limit, none outside its slot, and the counts add up.
        #[test]
        fn any_receive_hands_on_what_it_counts(
            slots in proptest::collection::vec((0usize..140_000, 0usize..70_000, any::<u16>()), 0..=BATCH),
            limit in 1usize..70_000,
        ) {
            let mut b = Batch::new();
            let f = b.fill_udp(limit, |bufs, m| {
                for (i, &(len, stride, port)) in slots.iter().enumerate() {
                    let n = len.min(bufs[i].len());
                    for (k, x) in bufs[i][..n].iter_mut().enumerate() {
                        *x = (k / 7) as u8 ^ i as u8;
                    }
                    m[i] = meta(len, stride);
                    m[i].addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
                }
                Ok(slots.len())
            }).unwrap();
            let got: Vec<(SocketAddr, usize)> = b.datagrams().map(|(a, d)| (a, d.len())).collect();
            prop_assert_eq!(got.len(), f.delivered());
            prop_assert!(got.iter().all(|&(_, n)| n > 0 && n <= limit));
            prop_assert_eq!(f.datagrams, f.delivered() + f.truncated + f.oversize + f.empty);
            // Each slot's frames come with that slot's source, in order.
            let ports: Vec<u16> = got.iter().map(|(a, _)| a.port()).collect();
            let mut expected = Vec::new();
            for &(len, stride, port) in &slots {
                let s = split(len, stride, SLOT);
                expected.extend(s.filter(|r| r.len() <= limit).map(|_| port));
            }
            prop_assert_eq!(ports, expected);
            // The runs hold exactly those datagrams, in order.
            let frames: Vec<Vec<u8>> = b.frames().map(|d| d.to_vec()).collect();
            let from_runs: Vec<Vec<u8>> = b
                .runs_mut()
                .flat_map(|(_, stride, r)| r.chunks(stride).map(<[u8]>::to_vec).collect::<Vec<_>>())
                .collect();
            prop_assert_eq!(from_runs, frames);
        }
    }

    fn meta(len: usize, stride: usize) -> quinn_udp::RecvMeta {
        let mut m = quinn_udp::RecvMeta::default();
        m.len = len;
        m.stride = stride;
        m
    }

    #[test]
    fn fills_count_what_they_hand_on() {
        let mut b = Batch::new();
        // A GRO run of 3 (last shorter), one empty datagram, one over the limit.
        let f = b
            .fill_udp(1500, |s, m| {
                s[0][..250].fill(7);
                m[0] = meta(250, 100);
                m[1] = meta(0, 0);
                m[2] = meta(2000, 2000);
                Ok(3)
            })
            .unwrap();
        assert_eq!(
            f,
            Fill {
                datagrams: 5,
                bytes: 2250,
                truncated: 0,
                oversize: 1,
                empty: 1
            }
        );
        assert_eq!(f.delivered(), 3);
        let lens: Vec<usize> = b.frames().map(|d| d.len()).collect();
        assert_eq!(lens, [100, 100, 50]);
        assert!(b.frames().all(|d| d.iter().all(|&x| x == 7)));
    }
}
