//! The end-system API (paper §2.6): an endpoint bound to a computation ID builds ESP
//! packets, attaches instructions to existing packets, and parses what comes back, with a
//! precise report when a computation aborted somewhere in the network.
//!
//! ```
//! use core::net::Ipv4Addr;
//! use esp_proto::endpoint::Endpoint;
//! use esp_proto::instr::Instruction;
//! use ess::Tag;
//!
//! let ep = Endpoint::new(7, Ipv4Addr::new(10, 0, 0, 1).into())
//!     .with_dest(Ipv4Addr::new(10, 0, 0, 9).into());
//! let packet = ep.packet(&Instruction::Mark { tag: Tag(42) })?;
//! // … the packet crosses routers; the receiver parses it:
//! let got = ep.receive(&packet)?;
//! assert_eq!(got.instr, Instruction::Mark { tag: Tag(42) });
//! assert!(got.error().is_none());
//! # Ok::<(), esp_proto::endpoint::EndpointError>(())
//! ```
//!
//! Opcodes that are not built in — inline microcode ([`OP_MICRO`](crate::instr::OP_MICRO)),
//! instructions a router's operator installed ([`INSTALLED`](crate::instr::INSTALLED)) —
//! have no [`Instruction`]: [`Endpoint::raw_instruction`], [`Endpoint::raw_packet_to`] and
//! [`Endpoint::receive_raw`] carry their operand field as bytes.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use crate::consts::HEADER_LEN;
use crate::instr::{InstrError, Instruction};
use crate::wire::{
    ErrCode, Header, HeaderRepr, IpError, Loc, WireError, addresses, dedicated_ipv4_len,
    dedicated_ipv6_len, emit_dedicated_ipv4, emit_dedicated_ipv6, locate, piggyback, reflect,
};

/// Why an endpoint could not build or read a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointError {
    /// The IP framing is malformed, or the instruction does not fit (e.g. a large
    /// instruction piggybacked on IPv4).
    Ip(IpError),
    /// The ESP header is malformed.
    Wire(WireError),
    /// The operands are not a valid instruction.
    Instr(InstrError),
    /// The packet carries no ESP instruction.
    NotEsp,
    /// The packet belongs to another computation.
    WrongCid {
        /// Its CID.
        got: u32,
    },
    /// No destination is bound and none was given.
    NoDestination,
    /// Source and destination are of different IP versions.
    AddressFamily,
    /// A raw operand field longer than ESP's one-byte operand length allows.
    OperandsTooLong {
        /// The opcode.
        opcode: u8,
        /// The field's length in bytes.
        len: usize,
    },
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointError::Ip(e) => write!(f, "{e}"),
            EndpointError::Wire(e) => write!(f, "{e}"),
            EndpointError::Instr(e) => write!(f, "{e}"),
            EndpointError::NotEsp => f.write_str("packet carries no ESP instruction"),
            EndpointError::WrongCid { got } => write!(f, "packet belongs to computation {got}"),
            EndpointError::NoDestination => f.write_str("no destination bound or given"),
            EndpointError::AddressFamily => {
                f.write_str("source and destination are different IP versions")
            }
            EndpointError::OperandsTooLong { opcode, len } => write!(
                f,
                "opcode {opcode}: {len} operand bytes; ESP's operand field holds at most 255"
            ),
        }
    }
}

impl core::error::Error for EndpointError {}

impl From<IpError> for EndpointError {
    fn from(e: IpError) -> Self {
        EndpointError::Ip(e)
    }
}
impl From<WireError> for EndpointError {
    fn from(e: WireError) -> Self {
        EndpointError::Wire(e)
    }
}
impl From<InstrError> for EndpointError {
    fn from(e: InstrError) -> Self {
        EndpointError::Instr(e)
    }
}

/// A computation that aborted in the network: what the end system learns from Err and its
/// code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputationError {
    /// The instruction that aborted (its operands as they were when it aborted).
    pub instr: Instruction,
    /// Why.
    pub code: ErrCode,
}

impl fmt::Display for ComputationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.code {
            ErrCode::StoreFull => "a router's ephemeral state store was full",
            ErrCode::MissingState => {
                "state it needed was missing at a router (never set up or expired)"
            }
            ErrCode::Malformed => "a router could not decode it",
            ErrCode::None | ErrCode::Other(_) => "a router reported an error",
        };
        write!(f, "{} aborted: {why}", self.instr.name())
    }
}

impl core::error::Error for ComputationError {}

/// An ESP packet as its receiver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The IP source.
    pub from: IpAddr,
    /// The instruction with its operands as the last router left them.
    pub instr: Instruction,
    /// The Loc bits (cleared by an abort).
    pub loc: Loc,
    /// Err and its code, if a router aborted.
    pub err: Option<ErrCode>,
}

impl Received {
    /// The precise error, if the computation aborted on the way.
    pub fn error(&self) -> Option<ComputationError> {
        self.err.map(|code| ComputationError {
            instr: self.instr,
            code,
        })
    }
}

/// An ESP packet as its receiver sees it, its operand field as bytes
/// ([`Endpoint::receive_raw`]): for opcodes that are not built in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawReceived {
    /// The IP source.
    pub from: IpAddr,
    /// The opcode.
    pub opcode: u8,
    /// The operand field as the last router left it.
    pub operands: Vec<u8>,
    /// The Loc bits (cleared by an abort).
    pub loc: Loc,
    /// Err and its code, if a router aborted.
    pub err: Option<ErrCode>,
}

/// What a host's ESP layer does with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostAction {
    /// Hand it to the application.
    Deliver,
    /// It had RB set: addresses swapped and RB cleared in place; send it back.
    Reflect,
    /// Not an ESP packet.
    NotEsp,
}

/// The host side of the reflector (§2.5): a packet arriving with RB set has its source and
/// destination swapped and RB cleared, to be sent back; others are delivered.
///
/// # Errors
///
/// [`EndpointError`] if the IP or ESP framing is malformed.
pub fn host_receive(packet: &mut [u8]) -> Result<HostAction, EndpointError> {
    let Some(located) = locate(packet)? else {
        return Ok(HostAction::NotEsp);
    };
    let mut header = located.header_mut(packet)?;
    if !header.rb() {
        return Ok(HostAction::Deliver);
    }
    header.set_rb(false);
    reflect(packet)?;
    Ok(HostAction::Reflect)
}

/// A communication endpoint bound to one computation. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    cid: u32,
    local: IpAddr,
    dest: Option<IpAddr>,
    loc: Loc,
    ttl: u8,
    reflect: bool,
}

impl Endpoint {
    /// An endpoint of computation `cid` at address `local`, running instructions at every
    /// site (Loc = all) by default.
    pub const fn new(cid: u32, local: IpAddr) -> Endpoint {
        Endpoint {
            cid,
            local,
            dest: None,
            loc: Loc::ALL,
            ttl: 64,
            reflect: false,
        }
    }

    /// Binds the destination of [`packet`](Self::packet).
    pub const fn with_dest(mut self, dest: IpAddr) -> Endpoint {
        self.dest = Some(dest);
        self
    }

    /// Where routers run the instructions this endpoint sends.
    pub const fn with_loc(mut self, loc: Loc) -> Endpoint {
        self.loc = loc;
        self
    }

    /// The TTL or hop limit of packets it builds.
    pub const fn with_ttl(mut self, ttl: u8) -> Endpoint {
        self.ttl = ttl;
        self
    }

    /// Sets RB on packets it builds: they cross the network unprocessed, and the
    /// destination reflects them back, processed on the way back (§2.5).
    pub const fn with_reflect(mut self, reflect: bool) -> Endpoint {
        self.reflect = reflect;
        self
    }

    /// The computation ID.
    pub const fn cid(&self) -> u32 {
        self.cid
    }

    /// The local address.
    pub const fn local(&self) -> IpAddr {
        self.local
    }

    /// The ESP instruction bytes (header and operands) for `instr`.
    ///
    /// # Errors
    ///
    /// [`EndpointError::Instr`] if the operands cannot be encoded.
    pub fn instruction(&self, instr: &Instruction) -> Result<Vec<u8>, EndpointError> {
        let operand_len = instr.operand_len();
        let mut buf = self.header(
            instr.opcode(),
            u8::try_from(operand_len).map_err(|_| InstrError::Length {
                opcode: instr.opcode(),
                expected: operand_len,
                actual: 255,
            })?,
        )?;
        instr.emit(buf.get_mut(HEADER_LEN..).unwrap_or(&mut []))?;
        Ok(buf)
    }

    /// The ESP instruction bytes (header, then `operands` as they are) for `opcode`: for
    /// opcodes that are not built in, whose operand field only the sender and the routers
    /// running it understand. Nothing checks the field against the opcode.
    ///
    /// ```
    /// use core::net::Ipv4Addr;
    /// use esp_proto::endpoint::Endpoint;
    /// use esp_proto::wire::Header;
    ///
    /// let ep = Endpoint::new(7, Ipv4Addr::new(10, 0, 0, 1).into());
    /// let bytes = ep.raw_instruction(64, &[0, 0, 0, 0, 0, 0, 0, 9])?;
    /// let header = Header::new_checked(&bytes[..])?;
    /// assert_eq!((header.opcode(), header.cid()), (64, 7));
    /// assert_eq!(header.operands(), [0, 0, 0, 0, 0, 0, 0, 9]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`EndpointError::OperandsTooLong`] past 255 bytes.
    pub fn raw_instruction(&self, opcode: u8, operands: &[u8]) -> Result<Vec<u8>, EndpointError> {
        let len = u8::try_from(operands.len()).map_err(|_| EndpointError::OperandsTooLong {
            opcode,
            len: operands.len(),
        })?;
        let mut buf = self.header(opcode, len)?;
        if let Some(field) = buf.get_mut(HEADER_LEN..) {
            field.copy_from_slice(operands);
        }
        Ok(buf)
    }

    /// A header for `opcode` with `operand_len` zeroed operand bytes after it.
    fn header(&self, opcode: u8, operand_len: u8) -> Result<Vec<u8>, EndpointError> {
        let repr = HeaderRepr {
            loc: self.loc,
            err: false,
            rb: self.reflect,
            opcode,
            cid: self.cid,
            operand_len,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf)?;
        Ok(buf)
    }

    /// A dedicated packet carrying `instr` to the bound destination.
    ///
    /// # Errors
    ///
    /// [`EndpointError::NoDestination`], or as [`packet_to`](Self::packet_to).
    pub fn packet(&self, instr: &Instruction) -> Result<Vec<u8>, EndpointError> {
        let dest = self.dest.ok_or(EndpointError::NoDestination)?;
        self.packet_to(dest, instr, &[])
    }

    /// A dedicated packet carrying `instr` and then `payload` to `dest`.
    ///
    /// # Errors
    ///
    /// [`EndpointError`] if the addresses differ in version or the packet cannot be built.
    pub fn packet_to(
        &self,
        dest: IpAddr,
        instr: &Instruction,
        payload: &[u8],
    ) -> Result<Vec<u8>, EndpointError> {
        self.dedicated(dest, &self.instruction(instr)?, payload)
    }

    /// A dedicated packet carrying opcode `opcode` with the operand field `operands`
    /// ([`raw_instruction`](Self::raw_instruction)), then `payload`, to `dest`.
    ///
    /// ```
    /// use core::net::Ipv4Addr;
    /// use esp_proto::endpoint::Endpoint;
    ///
    /// let ep = Endpoint::new(7, Ipv4Addr::new(10, 0, 0, 1).into());
    /// let packet = ep.raw_packet_to(Ipv4Addr::new(10, 0, 0, 9).into(), 64, &[1; 16], b"")?;
    /// let got = ep.receive_raw(&packet)?;
    /// assert_eq!((got.opcode, got.operands), (64, vec![1; 16]));
    /// # Ok::<(), esp_proto::endpoint::EndpointError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`raw_instruction`](Self::raw_instruction) and [`packet_to`](Self::packet_to).
    pub fn raw_packet_to(
        &self,
        dest: IpAddr,
        opcode: u8,
        operands: &[u8],
        payload: &[u8],
    ) -> Result<Vec<u8>, EndpointError> {
        self.dedicated(dest, &self.raw_instruction(opcode, operands)?, payload)
    }

    /// A dedicated packet (protocol 253) carrying the instruction bytes `esp`, then
    /// `payload`, to `dest`.
    fn dedicated(
        &self,
        dest: IpAddr,
        esp: &[u8],
        payload: &[u8],
    ) -> Result<Vec<u8>, EndpointError> {
        match (self.local, dest) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let mut out = vec![0u8; dedicated_ipv4_len(esp.len(), payload.len())];
                emit_dedicated_ipv4(s.octets(), d.octets(), self.ttl, esp, payload, &mut out)?;
                Ok(out)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let mut out = vec![0u8; dedicated_ipv6_len(esp.len(), payload.len())];
                emit_dedicated_ipv6(s.octets(), d.octets(), self.ttl, esp, payload, &mut out)?;
                Ok(out)
            }
            _ => Err(EndpointError::AddressFamily),
        }
    }

    /// Attaches `instr` to an existing IP packet of the application's (an IPv4 option or an
    /// IPv6 hop-by-hop option).
    ///
    /// # Errors
    ///
    /// [`EndpointError::Ip`] with [`IpError::OptionSpace`](crate::wire::IpError) if it does
    /// not fit the IPv4 option space, or if the packet is malformed or already carries an
    /// instruction.
    pub fn piggyback(&self, packet: &[u8], instr: &Instruction) -> Result<Vec<u8>, EndpointError> {
        Ok(piggyback(packet, &self.instruction(instr)?)?)
    }

    /// Parses an ESP packet of this computation.
    ///
    /// # Errors
    ///
    /// [`EndpointError`] if it is malformed, not ESP, or of another computation.
    pub fn receive(&self, packet: &[u8]) -> Result<Received, EndpointError> {
        let (from, header) = self.header_of(packet)?;
        let instr = Instruction::parse(header.opcode(), header.operands())?;
        Ok(Received {
            from,
            instr,
            loc: header.loc(),
            err: header.err().then(|| header.err_code()),
        })
    }

    /// Parses an ESP packet of this computation whatever its opcode, the operand field as
    /// bytes (for opcodes that are not built in; see
    /// [`raw_packet_to`](Self::raw_packet_to) for an example).
    ///
    /// # Errors
    ///
    /// [`EndpointError`] if it is malformed, not ESP, or of another computation.
    pub fn receive_raw(&self, packet: &[u8]) -> Result<RawReceived, EndpointError> {
        let (from, header) = self.header_of(packet)?;
        Ok(RawReceived {
            from,
            opcode: header.opcode(),
            operands: header.operands().to_vec(),
            loc: header.loc(),
            err: header.err().then(|| header.err_code()),
        })
    }

    /// The source and the ESP header of a packet of this computation.
    fn header_of<'p>(&self, packet: &'p [u8]) -> Result<(IpAddr, Header<&'p [u8]>), EndpointError> {
        let located = locate(packet)?.ok_or(EndpointError::NotEsp)?;
        let bytes = packet.get(located.range).ok_or(EndpointError::NotEsp)?;
        let header = Header::new_checked(bytes)?;
        if header.cid() != self.cid {
            return Err(EndpointError::WrongCid { got: header.cid() });
        }
        let (from, _) = addresses(packet)?;
        Ok((from, header))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9));

    #[test]
    fn raw_instruction_bytes_are_header_then_field() {
        let ep = Endpoint::new(0x0102_0304, A)
            .with_loc(Loc::CENTRAL)
            .with_reflect(true);
        let bytes = ep
            .raw_instruction(32, &[0xAA, 0xBB, 0xCC])
            .unwrap_or_default();
        let header = Header::new_checked(&bytes[..]).ok();
        let repr = header.as_ref().map(HeaderRepr::parse);
        assert_eq!(
            repr,
            Some(HeaderRepr {
                loc: Loc::CENTRAL,
                err: false,
                rb: true,
                opcode: 32,
                cid: 0x0102_0304,
                operand_len: 3,
            })
        );
        assert_eq!(bytes.get(HEADER_LEN..), Some(&[0xAA, 0xBB, 0xCC][..]));
        // The same header a built-in gets: only the field differs.
        let mark = Instruction::Mark { tag: ess::Tag(5) };
        let built = ep.instruction(&mark).unwrap_or_default();
        let raw = ep
            .raw_instruction(mark.opcode(), built.get(HEADER_LEN..).unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(raw, built);
    }

    #[test]
    fn raw_fields_past_255_bytes_are_refused() {
        let ep = Endpoint::new(1, A);
        assert_eq!(
            ep.raw_instruction(64, &[0; 256]),
            Err(EndpointError::OperandsTooLong {
                opcode: 64,
                len: 256
            })
        );
        assert_eq!(
            ep.raw_instruction(64, &[0; 255]).map(|b| b.len()),
            Ok(HEADER_LEN + 255)
        );
        assert!(ep.raw_packet_to(B, 64, &[0; 300], b"").is_err());
    }

    #[test]
    fn raw_packets_round_trip_on_both_families() {
        let field: Vec<u8> = (0u8..24).collect();
        let v4 = Endpoint::new(9, A).with_reflect(true);
        let p = v4.raw_packet_to(B, 70, &field, b"tail").unwrap_or_default();
        assert_eq!(p.get(9), Some(&crate::consts::IP_PROTOCOL));
        let got = v4.receive_raw(&p);
        assert_eq!(
            got,
            Ok(RawReceived {
                from: A,
                opcode: 70,
                operands: field.clone(),
                loc: Loc::ALL,
                err: None,
            })
        );
        assert!(p.ends_with(b"tail"));
        // No Instruction for opcode 70: the typed receive refuses, the raw one does not.
        assert!(matches!(v4.receive(&p), Err(EndpointError::Instr(_))));
        let (s6, d6) = (
            Ipv6Addr::LOCALHOST.into(),
            Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).into(),
        );
        let v6 = Endpoint::new(9, s6);
        let p6 = v6.raw_packet_to(d6, 32, &field, b"").unwrap_or_default();
        assert_eq!(
            v6.receive_raw(&p6).map(|r| (r.from, r.opcode, r.operands)),
            Ok((s6, 32, field))
        );
        assert_eq!(
            v4.raw_packet_to(d6, 32, &[], b""),
            Err(EndpointError::AddressFamily)
        );
    }

    #[test]
    fn receive_raw_reports_err_and_refuses_other_computations() {
        let ep = Endpoint::new(9, A);
        let mut p = ep.raw_packet_to(B, 64, &[7; 8], b"").unwrap_or_default();
        assert_eq!(
            Endpoint::new(10, A).receive_raw(&p).map(|r| r.opcode),
            Err(EndpointError::WrongCid { got: 9 })
        );
        // As a router's abort leaves it: Err, its code, Loc cleared.
        if let Ok(Some(l)) = locate(&p)
            && let Ok(mut h) = l.header_mut(&mut p)
        {
            h.set_err(true);
            h.set_err_code(ErrCode::MissingState);
            h.set_loc(Loc::NONE);
        }
        let got = ep.receive_raw(&p);
        assert_eq!(
            got.map(|r| (r.err, r.loc)),
            Ok((Some(ErrCode::MissingState), Loc::NONE))
        );
        assert!(ep.receive_raw(&[0x45, 0, 0]).is_err());
    }
}
