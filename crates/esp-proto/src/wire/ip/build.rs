//! Building packets: dedicated ESP packets, and piggybacking an instruction on a packet.

use core::net::IpAddr;
use core::ops::Range;

use waist_ip::emit_header;
use waist_ip::rewrite::fill_ipv4_checksum;

use super::fixed::{Fixed, fixed_header, put16};
use super::parse::{hop_by_hop, locate, v4_options};
use super::{EOL, HOP_BY_HOP, IpError, PAD1, PADN, ROUTER_ALERT, field};
use crate::consts::{IP_PROTOCOL, IPV4_OPTION, IPV6_HBH_OPTION};
use crate::wire::Header;

/// Bytes of a dedicated IPv4 ESP packet (see [`emit_dedicated_ipv4`]).
pub const fn dedicated_ipv4_len(esp_len: usize, payload_len: usize) -> usize {
    field::V4_HEADER_LEN + esp_len + payload_len
}

/// Bytes of a dedicated IPv6 ESP packet (see [`emit_dedicated_ipv6`]).
pub const fn dedicated_ipv6_len(esp_len: usize, payload_len: usize) -> usize {
    field::V6_HEADER_LEN + esp_len + payload_len
}

fn write_parts(out: &mut [u8], parts: &[&[u8]]) -> Result<usize, IpError> {
    let needed = parts.iter().map(|p| p.len()).sum();
    if out.len() < needed {
        return Err(IpError::BufferTooSmall {
            needed,
            len: out.len(),
        });
    }
    let mut at = 0;
    for part in parts {
        if let Some(dst) = out.get_mut(at..at + part.len()) {
            dst.copy_from_slice(part);
        }
        at += part.len();
    }
    Ok(at)
}

fn check_esp(esp: &[u8]) -> Result<(), IpError> {
    Header::new_checked(esp)
        .map(|_| ())
        .map_err(|error| IpError::Instruction { offset: 0, error })
}

/// `value` as an IP length field of a packet of `len` bytes.
fn length_field(value: usize, len: usize) -> Result<u16, IpError> {
    u16::try_from(value).map_err(|_| IpError::Ip(waist_ip::IpError::TooLong { len }))
}

/// Writes a dedicated IPv4 ESP packet into `out`: a 20-byte header (protocol 253, DF set,
/// identification 0, checksum filled), the instruction `esp`, then `payload`. Returns the
/// bytes written, [`dedicated_ipv4_len`].
///
/// # Errors
///
/// [`IpError::Instruction`] if `esp` is not one ESP instruction, [`IpError::Ip`] (`TooLong`) past
/// 65535 bytes, [`IpError::BufferTooSmall`].
pub fn emit_dedicated_ipv4(
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    esp: &[u8],
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize, IpError> {
    check_esp(esp)?;
    let mut header = [0u8; field::V4_HEADER_LEN];
    emit_header(
        &mut header,
        IpAddr::from(src),
        IpAddr::from(dst),
        IP_PROTOCOL,
        ttl,
        esp.len() + payload.len(),
    )?;
    write_parts(out, &[&header, esp, payload])
}

/// Writes a dedicated IPv6 ESP packet into `out`: a 40-byte header (next header 253,
/// traffic class and flow label 0), the instruction `esp`, then `payload`. Returns the
/// bytes written, [`dedicated_ipv6_len`].
///
/// # Errors
///
/// As [`emit_dedicated_ipv4`], with the 65535-byte limit on the payload length.
pub fn emit_dedicated_ipv6(
    src: [u8; 16],
    dst: [u8; 16],
    hop_limit: u8,
    esp: &[u8],
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize, IpError> {
    check_esp(esp)?;
    let mut header = [0u8; field::V6_HEADER_LEN];
    emit_header(
        &mut header,
        IpAddr::from(src),
        IpAddr::from(dst),
        IP_PROTOCOL,
        hop_limit,
        esp.len() + payload.len(),
    )?;
    write_parts(out, &[&header, esp, payload])
}

/// Attaches the instruction `esp` to an IPv4 or IPv6 packet that carries none, writing
/// the new packet into `out` and returning its length (bytes past the IP length are
/// dropped). [`piggybacked_len`] says how long it will be.
///
/// IPv4: appends Router Alert (unless present) and option 158 to the options, pads them to
/// a 4-byte multiple with End of Options List, and updates IHL, total length and checksum.
/// IPv6: adds option 0x3E to the hop-by-hop header, inserting one if there is none (its
/// trailing padding is redone with Pad1/PadN), and updates payload length and next headers.
///
/// # Errors
///
/// The packet's own [`IpError`] if [`locate`] rejects it, [`IpError::AlreadyCarried`],
/// [`IpError::Instruction`] if `esp` is not one instruction, [`IpError::OptionSpace`] if it
/// does not fit (IPv4 with no other options: more than
/// [`MAX_IPV4_OPTION_OPERANDS`](crate::consts::MAX_IPV4_OPTION_OPERANDS) operand bytes),
/// [`IpError::Ip`] (`TooLong`), [`IpError::BufferTooSmall`].
pub fn piggyback_into(packet: &[u8], esp: &[u8], out: &mut [u8]) -> Result<usize, IpError> {
    plan(packet, esp)?.write(packet, esp, out)
}

/// Bytes of the packet [`piggyback_into`] makes from `packet` and `esp`.
///
/// # Errors
///
/// As [`piggyback_into`], bar [`IpError::BufferTooSmall`].
pub fn piggybacked_len(packet: &[u8], esp: &[u8]) -> Result<usize, IpError> {
    Ok(plan(packet, esp)?.len)
}

/// [`piggyback_into`] a new vector.
///
/// # Errors
///
/// As [`piggybacked_len`].
#[cfg(feature = "alloc")]
pub fn piggyback(packet: &[u8], esp: &[u8]) -> Result<alloc::vec::Vec<u8>, IpError> {
    let plan = plan(packet, esp)?;
    let mut out = alloc::vec![0; plan.len];
    plan.write(packet, esp, &mut out)?;
    Ok(out)
}

/// Where each piece of a piggybacked packet comes from.
struct Plan {
    len: usize,
    /// The new IPv4 header length, or the new IPv6 hop-by-hop header's.
    header_len: usize,
    form: PlanForm,
}

enum PlanForm {
    V4 {
        kept: usize,
        router_alert: bool,
        payload: Range<usize>,
    },
    V6 {
        next: u8,
        kept: Range<usize>,
        rest: Range<usize>,
    },
}

fn plan(packet: &[u8], esp: &[u8]) -> Result<Plan, IpError> {
    if let Some(found) = locate(packet)? {
        return Err(IpError::AlreadyCarried {
            offset: found.range.start,
        });
    }
    check_esp(esp)?;
    match fixed_header(packet)? {
        Fixed::V4 {
            header_len,
            total_len,
        } => {
            let options = v4_options(packet, header_len)?;
            let alert = if options.router_alert {
                0
            } else {
                ROUTER_ALERT.len()
            };
            let needed = alert + 2 + esp.len();
            let available = field::V4_OPTION_SPACE - options.used;
            if needed > available {
                return Err(IpError::OptionSpace { needed, available });
            }
            let kept = field::V4_HEADER_LEN + options.used;
            let new_header_len = (kept + needed).next_multiple_of(4);
            let len = new_header_len + (total_len - header_len);
            length_field(len, len)?;
            Ok(Plan {
                len,
                header_len: new_header_len,
                form: PlanForm::V4 {
                    kept,
                    router_alert: options.router_alert,
                    payload: header_len..total_len,
                },
            })
        }
        Fixed::V6 { end } => {
            let start = field::V6_HEADER_LEN;
            let next = packet.get(field::V6_NEXT_HEADER).copied().unwrap_or(0);
            let (next, kept, rest) = if next == HOP_BY_HOP {
                let hbh = hop_by_hop(packet, start, end)?;
                (hbh.next, start + 2..start + 2 + hbh.used, hbh.end..end)
            } else {
                (next, start..start, start..end)
            };
            let hbh_len = (2 + kept.len() + 2 + esp.len()).next_multiple_of(8);
            if esp.len() > usize::from(u8::MAX) || hbh_len > field::HBH_MAX_LEN {
                return Err(IpError::OptionSpace {
                    needed: hbh_len - 2 - kept.len(),
                    available: (2 + usize::from(u8::MAX)).min(field::HBH_MAX_LEN - 2 - kept.len()),
                });
            }
            let len = start + hbh_len + rest.len();
            length_field(len - start, len)?;
            Ok(Plan {
                len,
                header_len: hbh_len,
                form: PlanForm::V6 { next, kept, rest },
            })
        }
    }
}

impl Plan {
    fn write(&self, packet: &[u8], esp: &[u8], out: &mut [u8]) -> Result<usize, IpError> {
        let part = |r: Range<usize>| packet.get(r).unwrap_or_default();
        // Lengths below were bounded by `plan`: option lengths by the option space, header
        // lengths by their fields.
        let len = out.len();
        let out = out.get_mut(..self.len).ok_or(IpError::BufferTooSmall {
            needed: self.len,
            len,
        })?;
        match &self.form {
            PlanForm::V4 {
                kept,
                router_alert,
                payload,
            } => {
                let alert: &[u8] = if *router_alert { &[] } else { &ROUTER_ALERT };
                let used = kept + alert.len() + 2 + esp.len();
                let pad = [EOL; 3].get(..self.header_len - used).unwrap_or_default();
                let option = [IPV4_OPTION, (2 + esp.len()) as u8];
                let parts = [
                    part(0..*kept),
                    alert,
                    &option,
                    esp,
                    pad,
                    part(payload.clone()),
                ];
                write_parts(out, &parts)?;
                if let Some(first) = out.first_mut() {
                    *first = 0x40 | (self.header_len / 4) as u8;
                }
                put16(out, field::V4_TOTAL_LEN, self.len as u16);
                fill_ipv4_checksum(out);
            }
            PlanForm::V6 { next, kept, rest } => {
                let used = 2 + kept.len() + 2 + esp.len();
                let pad = match self.header_len - used {
                    n @ 2.. => [PADN, (n - 2) as u8, 0, 0, 0, 0, 0],
                    _ => [PAD1; 7],
                };
                let pad = pad.get(..self.header_len - used).unwrap_or_default();
                let hbh = [*next, (self.header_len / 8 - 1) as u8];
                let option = [IPV6_HBH_OPTION, esp.len() as u8];
                let start = field::V6_HEADER_LEN;
                let rest = part(rest.clone());
                write_parts(
                    out,
                    &[
                        part(0..start),
                        &hbh,
                        part(kept.clone()),
                        &option,
                        esp,
                        pad,
                        rest,
                    ],
                )?;
                if let Some(next_header) = out.get_mut(field::V6_NEXT_HEADER) {
                    *next_header = HOP_BY_HOP;
                }
                put16(out, field::V6_PAYLOAD_LEN, (self.len - start) as u16);
            }
        }
        Ok(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ESP: [u8; 8] = [0x10, 0, 5, 0, 0, 0, 0, 1];

    fn piggybacked(packet: &[u8]) -> std::vec::Vec<u8> {
        let mut out = std::vec![0; piggybacked_len(packet, &ESP).unwrap()];
        piggyback_into(packet, &ESP, &mut out).unwrap();
        out
    }

    #[test]
    fn ipv4_keeps_router_alert_and_options() {
        // Options: NOP, Router Alert, EOL + padding (dropped), then 2 payload bytes.
        let mut p = std::vec![
            0x47, 0, 0, 30, 0, 0, 0, 0, 9, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8
        ];
        p.extend_from_slice(&[1, 148, 4, 0, 0, 0, 0, 0, 0xAA, 0xBB]);
        fill_ipv4_checksum(&mut p);
        let out = piggybacked(&p);
        let mut options = std::vec![1, 148, 4, 0, 0, 158, 10];
        options.extend_from_slice(&ESP);
        options.push(EOL);
        assert_eq!(out[0], 0x49);
        assert_eq!(&out[2..4], &[0, 38]);
        assert_eq!(&out[20..], &[&options[..], &[0xAA, 0xBB]].concat()[..]);
        assert!(super::super::ipv4_checksum_ok(&out));
        assert_eq!(locate(&out).unwrap().map(|l| l.range), Some(27..35));
    }

    #[test]
    fn ipv6_redoes_hop_by_hop_padding() {
        // An existing hop-by-hop header: unknown option 0x05 of 2 bytes, then PadN(2).
        let mut p = std::vec![0x60, 0, 0, 0, 0, 9, 0, 1];
        p.extend_from_slice(&[0; 32]);
        p.extend_from_slice(&[59, 0, 0x05, 2, 0xC0, 0xDE, 1, 0, 0xEE]);
        let out = piggybacked(&p);
        let mut hbh = std::vec![59, 1, 0x05, 2, 0xC0, 0xDE, 0x3E, 8];
        hbh.extend_from_slice(&ESP);
        assert_eq!(out.len(), 40 + 16 + 1);
        assert_eq!(&out[4..8], &[0, 17, 0, 1]);
        assert_eq!(&out[40..], &[&hbh[..], &[0xEE]].concat()[..]);
        // One byte short of a multiple of 8 gets a Pad1.
        let esp7 = [0x10, 0, 5, 7, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7];
        let mut out = [0u8; 40 + 24 + 1];
        assert_eq!(piggyback_into(&p, &esp7, &mut out), Ok(out.len()));
        let expected = [
            &[59, 2, 5, 2, 0xC0, 0xDE, 0x3E, 15],
            &esp7[..],
            &[PAD1, 0xEE],
        ]
        .concat();
        assert_eq!(&out[40..], &expected[..]);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut out = [0u8; 64];
        let esp = [0x10, 0, 5, 0, 0, 0, 0, 1, 0];
        assert_eq!(
            emit_dedicated_ipv4([0; 4], [0; 4], 1, &esp, &[], &mut out),
            Err(IpError::Instruction {
                offset: 0,
                error: crate::wire::WireError::OperandLength {
                    declared: 0,
                    actual: 1
                }
            })
        );
        let big = std::vec![0u8; 65535];
        assert_eq!(
            emit_dedicated_ipv4([0; 4], [0; 4], 1, &ESP, &big, &mut out),
            Err(IpError::Ip(waist_ip::IpError::TooLong { len: 65563 }))
        );
        assert_eq!(
            emit_dedicated_ipv6([0; 16], [0; 16], 1, &ESP, &big[8..], &mut out),
            Err(IpError::BufferTooSmall {
                needed: 65575,
                len: 64
            })
        );
        // 40 bytes of options already: nothing fits.
        let mut p = std::vec![
            0x4F, 0, 0, 60, 0, 0, 0, 0, 9, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8
        ];
        p.extend_from_slice(&[1; 40]);
        assert_eq!(
            piggybacked_len(&p, &ESP),
            Err(IpError::OptionSpace {
                needed: 14,
                available: 0
            })
        );
    }
}
