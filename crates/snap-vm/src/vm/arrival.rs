//! A packet's arrival at the VM (paper §VI.A, §IV.A.3): its structure checked, a
//! little-endian body converted once, its resource bound decremented, and the header
//! fields the run needs read out (of either address family).

use core::net::IpAddr;

use super::{End, Outcome};
use crate::wire::{HEADER_LEN, Packet};

/// Header fields of an arrived packet, its resource bound already decremented.
pub(super) struct Arrival {
    pub(super) rb: u16,
    pub(super) entry: u16,
    pub(super) port: u16,
    pub(super) src: IpAddr,
    pub(super) dst: IpAddr,
    pub(super) heap_at: usize,
    pub(super) stack_at: usize,
}

/// Checks the packet's structure, converts a little-endian body, and decrements the
/// resource bound; `None` (with `out.end` set) if the packet goes no further.
#[inline]
pub(super) fn arrive(packet: &mut [u8], out: &mut Outcome) -> Option<Arrival> {
    // Fast path: a big-endian IPv4 packet, every field read from one fixed-size header
    // copy. IPv6 packets and everything else take the checked view below.
    if let Some(h) = packet.first_chunk::<HEADER_LEN>() {
        let h = *h;
        let be16 = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let (code, heap, stack) = (
            usize::from(be16(16)),
            usize::from(be16(18)),
            usize::from(be16(20)),
        );
        let entry = be16(14);
        if h[0] == crate::wire::VERSION << 4
            && HEADER_LEN + 4 * (code + heap + stack) == packet.len()
            && usize::from(entry) < code
        {
            let rb = be16(12);
            out.rb_in = rb;
            if rb == 0 {
                out.end = End::NoResource;
                return None;
            }
            if let Some(f) = packet.get_mut(12..14) {
                f.copy_from_slice(&(rb - 1).to_be_bytes());
            }
            return Some(Arrival {
                rb: rb - 1,
                entry,
                port: be16(2),
                src: IpAddr::from([h[4], h[5], h[6], h[7]]),
                dst: IpAddr::from([h[8], h[9], h[10], h[11]]),
                heap_at: HEADER_LEN + 4 * code,
                stack_at: HEADER_LEN + 4 * (code + heap),
            });
        }
    }
    // Everything else: the checked view names the error, or converts the body's order.
    let mut p = match Packet::new_checked(&mut packet[..]) {
        Ok(p) => p,
        Err(e) => {
            out.end = End::Malformed(e);
            return None;
        }
    };
    p.normalize();
    let rb = p.rb();
    out.rb_in = rb;
    if rb == 0 {
        out.end = End::NoResource;
        return None;
    }
    p.set_rb(rb - 1);
    Some(Arrival {
        rb: rb - 1,
        entry: p.entry(),
        port: p.port(),
        src: p.src_addr(),
        dst: p.dst_addr(),
        heap_at: p.heap_offset(),
        stack_at: p.stack_offset(),
    })
}
