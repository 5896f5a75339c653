//! Finding the ESP instruction: the IPv4 option walk, the IPv6 hop-by-hop walk, and the
//! dedicated payload.

use core::ops::Range;

use waist_ip::IpHeader;

use super::fixed::{Fixed, be16, fixed};
use super::{EOL, Form, HOP_BY_HOP, IpError, Located, NOP, PAD1, PADN, field};
use crate::consts::{HEADER_LEN, IP_PROTOCOL, IPV4_OPTION, IPV4_ROUTER_ALERT, IPV6_HBH_OPTION};
use crate::wire::Header;

/// Checks that `p[range]` is exactly one ESP instruction.
fn check_instruction(p: &[u8], range: Range<usize>) -> Result<Range<usize>, IpError> {
    let offset = range.start;
    Header::new_checked(p.get(range.clone()).unwrap_or_default())
        .map(|_| range)
        .map_err(|error| IpError::Instruction { offset, error })
}

/// The ESP instruction that starts `p[start..end]` (a dedicated packet's payload).
fn instruction_at(p: &[u8], start: usize, end: usize) -> Result<Range<usize>, IpError> {
    let avail = end.saturating_sub(start);
    let len = match p.get(start + 3) {
        Some(&n) if start + 3 < end => avail.min(HEADER_LEN + usize::from(n)),
        _ => avail,
    };
    check_instruction(p, start..start + len)
}

/// What the IPv4 option walk found.
pub(super) struct V4Options {
    pub(super) esp: Option<Range<usize>>,
    pub(super) router_alert: bool,
    /// Option bytes before End of Options List (or the header end).
    pub(super) used: usize,
}

pub(super) fn v4_options(p: &[u8], header_len: usize) -> Result<V4Options, IpError> {
    let mut found = V4Options {
        esp: None,
        router_alert: false,
        used: 0,
    };
    let mut at = field::V4_HEADER_LEN;
    // Each step advances at least one byte through at most 40.
    while let Some(&kind) = p.get(at).filter(|_| at < header_len) {
        match kind {
            EOL => break,
            NOP => at += 1,
            _ => {
                let len = p.get(at + 1).map_or(0, |&l| usize::from(l));
                if len < 2 || at + len > header_len {
                    return Err(IpError::OptionLength { offset: at });
                }
                if kind == IPV4_OPTION {
                    if found.esp.is_some() {
                        return Err(IpError::Duplicate { offset: at + 2 });
                    }
                    found.esp = Some(check_instruction(p, at + 2..at + len)?);
                } else if kind == IPV4_ROUTER_ALERT {
                    found.router_alert = true;
                }
                at += len;
            }
        }
    }
    found.used = at.min(header_len) - field::V4_HEADER_LEN;
    Ok(found)
}

/// What the IPv6 hop-by-hop walk found.
pub(super) struct HopByHop {
    pub(super) next: u8,
    pub(super) end: usize,
    pub(super) esp: Option<Range<usize>>,
    /// Option bytes before the trailing padding.
    pub(super) used: usize,
}

pub(super) fn hop_by_hop(p: &[u8], start: usize, end: usize) -> Result<HopByHop, IpError> {
    let available = end.saturating_sub(start);
    let declared = p.get(start + 1).map_or(8, |&n| (usize::from(n) + 1) * 8);
    if declared > available {
        return Err(IpError::ExtensionLength {
            declared,
            available,
        });
    }
    let hbh_end = start + declared;
    let first = start + 2;
    let mut found = HopByHop {
        next: p.get(start).copied().unwrap_or(0),
        end: hbh_end,
        esp: None,
        used: 0,
    };
    let mut at = first;
    // Each step advances at least one byte through at most 2046.
    while let Some(&kind) = p.get(at).filter(|_| at < hbh_end) {
        if kind == PAD1 {
            at += 1;
            continue;
        }
        let data = at + 2;
        let data_end = data + p.get(at + 1).map_or(usize::MAX - data, |&l| usize::from(l));
        if data_end > hbh_end {
            return Err(IpError::OptionLength { offset: at });
        }
        if kind == IPV6_HBH_OPTION {
            if found.esp.is_some() {
                return Err(IpError::Duplicate { offset: data });
            }
            found.esp = Some(check_instruction(p, data..data_end)?);
        }
        if kind != PADN {
            found.used = data_end - first;
        }
        at = data_end;
    }
    Ok(found)
}

fn one_of(a: Option<Located>, b: Option<Located>) -> Result<Option<Located>, IpError> {
    match (a, b) {
        (Some(_), Some(b)) => Err(IpError::Duplicate {
            offset: b.range.start,
        }),
        (a, b) => Ok(a.or(b)),
    }
}

/// Finds the ESP instruction in an IPv4 or IPv6 packet.
///
/// Only a byte range comes back: a router rewrites the instruction's control bits and
/// operands through [`Located::header_mut`] and leaves the IP header as it is, so packets
/// cannot be diverted (paper §2.5).
///
/// Returns `Ok(None)` for a well-formed packet that carries none. Bytes past the IP total
/// length are ignored. The IPv4 checksum is not verified, and a piggybacked IPv4 option is
/// accepted with or without Router Alert.
///
/// ```
/// use esp_proto::wire::{Form, Header, HeaderRepr, Loc, emit_dedicated_ipv4, locate};
///
/// let repr = HeaderRepr { loc: Loc::OUTPUT, err: false, rb: false, opcode: 1, cid: 7, operand_len: 2 };
/// let mut esp = [0u8; 10];
/// repr.emit(&mut esp)?;
/// let mut packet = [0u8; 64];
/// let n = emit_dedicated_ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64, &esp, b"hi", &mut packet)?;
/// let packet = &mut packet[..n];
///
/// let found = locate(packet)?.expect("an ESP packet");
/// assert_eq!((found.form, found.range.clone()), (Form::Dedicated, 20..30));
/// let mut view = found.header_mut(packet)?;
/// view.set_err(true); // only the instruction's bytes change
/// assert!(Header::new_checked(&packet[20..30])?.err());
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`IpError`] says what is malformed: the IP header or its lengths, an option or the
/// hop-by-hop header, bytes carried as an instruction, or a second instruction.
#[inline]
pub fn locate(packet: &[u8]) -> Result<Option<Located>, IpError> {
    locate_in(&IpHeader::parse_unverified(packet)?, packet)
}

/// As [`locate`], for a packet whose IP header the caller has already checked (a router
/// that parsed it to forward the packet): the fixed header is not read again. `h` must be
/// `packet`'s own header, from [`IpHeader::parse`] or [`IpHeader::parse_unverified`]
/// (with another header the answer is meaningless, though nothing panics). The answer is
/// [`locate`]'s for the same packet.
///
/// # Errors
///
/// As [`locate`], but for the fixed header's checks (the caller made them).
// Always inlined, so that a caller holding the header in registers hands over only the
// three lengths the walk needs and builds nothing else.
#[inline(always)]
pub fn locate_in(h: &IpHeader, packet: &[u8]) -> Result<Option<Located>, IpError> {
    locate_fixed(fixed(h), packet)
}

/// [`locate`] after the fixed header.
#[inline]
fn locate_fixed(fixed: Fixed, packet: &[u8]) -> Result<Option<Located>, IpError> {
    match fixed {
        Fixed::V4 {
            header_len,
            total_len,
        } => {
            let options = v4_options(packet, header_len)?.esp.map(|range| Located {
                form: Form::Ipv4Option,
                range,
            });
            let first_fragment = be16(packet, field::V4_FRAGMENT) & 0x1FFF == 0;
            let dedicated =
                if packet.get(field::V4_PROTOCOL) == Some(&IP_PROTOCOL) && first_fragment {
                    Some(Located {
                        form: Form::Dedicated,
                        range: instruction_at(packet, header_len, total_len)?,
                    })
                } else {
                    None
                };
            one_of(options, dedicated)
        }
        Fixed::V6 { end } => {
            let mut next = packet.get(field::V6_NEXT_HEADER).copied().unwrap_or(0);
            let mut start = field::V6_HEADER_LEN;
            let mut options = None;
            if next == HOP_BY_HOP {
                let hbh = hop_by_hop(packet, start, end)?;
                options = hbh.esp.map(|range| Located {
                    form: Form::Ipv6HopByHop,
                    range,
                });
                (next, start) = (hbh.next, hbh.end);
            }
            let dedicated = if next == IP_PROTOCOL {
                Some(Located {
                    form: Form::Dedicated,
                    range: instruction_at(packet, start, end)?,
                })
            } else {
                None
            };
            one_of(options, dedicated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireError;

    const ESP: [u8; 9] = [0x12, 0, 1, 1, 0, 0, 0, 9, 0x55];

    /// An IPv4 header with `options`, protocol `protocol`, then `payload`.
    fn v4(options: &[u8], protocol: u8, payload: &[u8]) -> std::vec::Vec<u8> {
        let header_len = 20 + options.len();
        let total = header_len + payload.len();
        let mut p = std::vec![0x40 | (header_len / 4) as u8, 0, 0, total as u8];
        p.extend_from_slice(&[0, 0, 0, 0, 64, protocol, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(options);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn ipv4_option_walk() {
        // NOP, the ESP option, EOL, then padding that is not parsed.
        let mut options = std::vec![1, 158, 11];
        options.extend_from_slice(&ESP);
        options.extend_from_slice(&[0, 0xFF, 0xFF, 0xFF]);
        assert_eq!(options.len(), 16);
        let p = v4(&options, 6, b"tcp");
        let found = v4_options(&p, 36).unwrap();
        assert_eq!(
            (found.esp, found.router_alert, found.used),
            (Some(23..32), false, 12)
        );
        assert_eq!(
            locate(&p).unwrap(),
            Some(Located {
                form: Form::Ipv4Option,
                range: 23..32
            })
        );
        // A length byte of 1, or one past the options, is malformed.
        let p = v4(&[148, 4, 0, 0, 7, 1, 0, 0], 6, &[]);
        assert_eq!(locate(&p), Err(IpError::OptionLength { offset: 24 }));
        let p = v4(&[1, 1, 1, 7], 6, &[]);
        assert_eq!(locate(&p), Err(IpError::OptionLength { offset: 23 }));
        // Two ESP options.
        let mut two = std::vec![158, 11];
        two.extend_from_slice(&ESP);
        two.extend_from_slice(&two.clone());
        two.extend_from_slice(&[0, 0]);
        let p = v4(&two, 6, &[]);
        assert_eq!(locate(&p), Err(IpError::Duplicate { offset: 33 }));
    }

    #[test]
    fn dedicated_ipv4_and_fragments() {
        let p = v4(&[], IP_PROTOCOL, &ESP);
        assert_eq!(locate(&p).unwrap().map(|l| l.range), Some(20..29));
        let mut later = p.clone();
        later[7] = 1; // fragment offset 8: the instruction is in the first fragment
        assert_eq!(locate(&later), Ok(None));
        let p = v4(&[], IP_PROTOCOL, &ESP[..8]);
        assert_eq!(
            locate(&p),
            Err(IpError::Instruction {
                offset: 20,
                error: WireError::OperandLength {
                    declared: 1,
                    actual: 0
                }
            })
        );
        let p = v4(&[], IP_PROTOCOL, &ESP[..3]);
        assert_eq!(
            locate(&p),
            Err(IpError::Instruction {
                offset: 20,
                error: WireError::Truncated { len: 3 }
            })
        );
    }

    #[test]
    fn hop_by_hop_walk() {
        let ipv6 = |hbh: &[u8], payload: &[u8]| {
            let mut p = std::vec![0x60, 0, 0, 0, 0, (hbh.len() + payload.len()) as u8, 0, 64];
            p.extend_from_slice(&[0; 32]);
            p.extend_from_slice(hbh);
            p.extend_from_slice(payload);
            p
        };
        // Next header 17, 16 bytes: Pad1, the ESP option, PadN(0), Pad1.
        let mut hbh = std::vec![17, 1, 0, 0x3E, 9];
        hbh.extend_from_slice(&ESP);
        hbh.extend_from_slice(&[1, 0, 0]);
        let p = ipv6(&hbh, b"udp");
        let found = hop_by_hop(&p, 40, p.len()).unwrap();
        assert_eq!(
            (found.next, found.end, found.esp, found.used),
            (17, 56, Some(45..54), 12)
        );
        assert_eq!(
            locate(&p).unwrap().map(|l| l.form),
            Some(Form::Ipv6HopByHop)
        );
        // An option running past the header.
        hbh[15] = 3;
        assert_eq!(
            locate(&ipv6(&hbh, &[])),
            Err(IpError::OptionLength { offset: 54 })
        );
        // The ESP option's length disagrees with the instruction's.
        hbh[4] = 10;
        assert!(matches!(
            locate(&ipv6(&hbh, &[])),
            Err(IpError::Instruction { offset: 45, .. })
        ));
    }
}
