//! Batched UDP receive (recvmmsg, GRO through quinn-udp): the buffers it reuses.

use std::io;
use std::net::SocketAddr;

/// Datagrams one batched receive takes at most.
pub const BATCH: usize = 32;
/// Bytes of each batch buffer: a GRO-coalesced run of datagrams fits.
const BATCH_BUF: usize = 64 * 1024;

/// Buffers for [`Links::try_recv_batch`](super::Links::try_recv_batch), reused from call to call.
pub struct Batch {
    pub(super) bufs: Vec<Vec<u8>>,
    pub(super) meta: Vec<quinn_udp::RecvMeta>,
    pub(super) filled: usize,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("filled", &self.filled)
            .finish_non_exhaustive()
    }
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    /// Room for [`BATCH`] receives of up to 64 KiB each.
    pub fn new() -> Batch {
        Batch {
            bufs: (0..BATCH).map(|_| vec![0u8; BATCH_BUF]).collect(),
            meta: vec![quinn_udp::RecvMeta::default(); BATCH],
            filled: 0,
        }
    }

    /// Runs one receive into the buffers and records how many slots it filled; returns the
    /// number of datagrams (a GRO slot holds several).
    pub(crate) fn fill(
        &mut self,
        recv: impl FnOnce(&mut [Vec<u8>], &mut [quinn_udp::RecvMeta]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        self.filled = 0;
        let n = recv(&mut self.bufs, &mut self.meta)?;
        self.filled = n;
        Ok(self
            .meta
            .iter()
            .take(n)
            .map(|m| m.len.div_ceil(m.stride.max(1)))
            .sum())
    }

    /// The datagrams of the last receive with their sources (a GRO buffer split by its
    /// stride).
    pub fn datagrams(&mut self) -> impl Iterator<Item = (SocketAddr, &mut [u8])> {
        self.bufs
            .iter_mut()
            .zip(self.meta.iter())
            .take(self.filled)
            .flat_map(|(buf, m)| {
                let stride = m.stride.max(1);
                let addr = m.addr;
                buf.get_mut(..m.len)
                    .unwrap_or_default()
                    .chunks_mut(stride)
                    .map(move |d| (addr, d))
            })
    }

    /// The frames of the last receive, one per datagram (a GRO buffer split by its stride).
    pub fn frames(&mut self) -> impl Iterator<Item = &mut [u8]> {
        self.bufs
            .iter_mut()
            .zip(self.meta.iter())
            .take(self.filled)
            .flat_map(|(buf, m)| {
                let stride = m.stride.max(1);
                buf.get_mut(..m.len).unwrap_or_default().chunks_mut(stride)
            })
    }
}
