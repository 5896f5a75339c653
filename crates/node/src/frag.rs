//! IPv4 fragmentation (RFC 791 §3.2, RFC 1812 §5.2.6.1) for a packet without DF that is too
//! big for its outgoing link. The first fragment keeps every option; later ones keep only
//! options whose copied flag is set (ESP's option 158 is one: a piggybacked instruction
//! rides in every fragment). Each fragment's header checksum is computed afresh.

use alloc::vec::Vec;

use waist_ip::rewrite::fill_ipv4_checksum;
use waist_ip::{IPV4_HEADER_LEN, IpHeader, Version};

/// Why a packet cannot be fragmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragError {
    /// Not a well-formed IPv4 packet.
    NotIpv4,
    /// The MTU leaves no room for 8 bytes of data after the header.
    MtuTooSmall,
}

/// The options of a later fragment: those with the copied flag, padded to a word.
fn copied_options(options: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = options;
    while let [t, tail @ ..] = rest {
        match *t {
            0 => break,
            1 => rest = tail,
            _ => {
                let Some(&len) = tail.first() else { break };
                let n = usize::from(len);
                let Some((opt, after)) = rest.split_at_checked(n).filter(|_| n >= 2) else {
                    break;
                };
                if t & 0x80 != 0 {
                    out.extend_from_slice(opt);
                }
                rest = after;
            }
        }
    }
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out
}

/// Cuts `packet` into fragments of at most `mtu` bytes and hands each to `emit`, first to
/// last.
///
/// # Errors
///
/// [`FragError`]; nothing is emitted then.
pub fn fragment(packet: &[u8], mtu: usize, mut emit: impl FnMut(Vec<u8>)) -> Result<(), FragError> {
    let h = IpHeader::parse_unverified(packet).map_err(|_| FragError::NotIpv4)?;
    if h.version != Version::V4 {
        return Err(FragError::NotIpv4);
    }
    let header = packet.get(..h.header_len).ok_or(FragError::NotIpv4)?;
    let data = packet
        .get(h.header_len..h.total_len)
        .ok_or(FragError::NotIpv4)?;
    let later_options = copied_options(header.get(IPV4_HEADER_LEN..).unwrap_or_default());
    let later_hl = IPV4_HEADER_LEN + later_options.len();
    let first_room = mtu.saturating_sub(h.header_len) & !7;
    let later_room = mtu.saturating_sub(later_hl) & !7;
    if first_room == 0 || later_room == 0 {
        return Err(FragError::MtuTooSmall);
    }
    let flags = u16::from_be_bytes([
        header.get(6).copied().unwrap_or(0),
        header.get(7).copied().unwrap_or(0),
    ]);
    let base_offset = usize::from(flags & 0x1FFF) * 8;
    let last_mf = flags & 0x2000 != 0;
    let mut at = 0;
    while at < data.len() {
        let first = at == 0;
        let room = if first { first_room } else { later_room };
        let end = (at + room).min(data.len());
        let more = end < data.len() || last_mf;
        let mut f = Vec::with_capacity(later_hl.max(h.header_len) + end - at);
        if first {
            f.extend_from_slice(header);
        } else {
            f.extend_from_slice(header.get(..IPV4_HEADER_LEN).unwrap_or_default());
            f.extend_from_slice(&later_options);
            if let Some(b) = f.first_mut() {
                *b = 0x40 | (later_hl / 4) as u8;
            }
        }
        f.extend_from_slice(data.get(at..end).unwrap_or_default());
        let total = u16::try_from(f.len()).map_err(|_| FragError::NotIpv4)?;
        let offset = u16::try_from((base_offset + at) / 8).map_err(|_| FragError::NotIpv4)?;
        let word = (flags & 0x4000) | if more { 0x2000 } else { 0 } | (offset & 0x1FFF);
        if let Some(t) = f.get_mut(2..4) {
            t.copy_from_slice(&total.to_be_bytes());
        }
        if let Some(w) = f.get_mut(6..8) {
            w.copy_from_slice(&word.to_be_bytes());
        }
        fill_ipv4_checksum(&mut f);
        emit(f);
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn fragments_reassemble_and_verify() {
        // 10.0.0.1 → 10.0.0.2, UDP, a non-copied NOP+RR-like option (7) and a copied one
        // (0x9E, ESP's), 1000 bytes of data.
        let mut p = vec![0u8; 28 + 1000];
        waist_ip::emit_header(
            &mut p,
            [10, 0, 0, 1].into(),
            [10, 0, 0, 2].into(),
            17,
            9,
            1008,
        )
        .unwrap();
        p.copy_within(20..28, 28);
        p[0] = 0x47;
        p[6] = 0; // DF off
        p[20..28].copy_from_slice(&[7, 3, 4, 0x9E, 4, 0xAA, 0xBB, 0]);
        for (i, b) in p[28..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p[2..4].copy_from_slice(&(1028u16).to_be_bytes());
        fill_ipv4_checksum(&mut p);
        let mut frags = Vec::new();
        fragment(&p, 300, |f| frags.push(f)).unwrap();
        assert_eq!(frags.len(), 4);
        let mut data = Vec::new();
        for (n, f) in frags.iter().enumerate() {
            assert!(f.len() <= 300);
            let (h, rest) = etherparse::Ipv4Header::from_slice(f).unwrap();
            assert_eq!(h.header_checksum, h.calc_header_checksum());
            assert_eq!(h.more_fragments, n < 3);
            assert_eq!(usize::from(h.fragment_offset.value()) * 8, data.len());
            if n == 0 {
                assert_eq!(h.options.as_slice(), &[7, 3, 4, 0x9E, 4, 0xAA, 0xBB, 0]);
            } else {
                assert_eq!(h.options.as_slice(), &[0x9E, 4, 0xAA, 0xBB]);
            }
            data.extend_from_slice(&rest[..usize::from(h.total_len) - h.header_len()]);
        }
        assert_eq!(data, p[28..]);
        assert_eq!(fragment(&p, 30, |_| ()), Err(FragError::MtuTooSmall));
    }
}
