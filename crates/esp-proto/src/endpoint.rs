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
        let repr = HeaderRepr {
            loc: self.loc,
            err: false,
            rb: self.reflect,
            opcode: instr.opcode(),
            cid: self.cid,
            operand_len: u8::try_from(operand_len).map_err(|_| InstrError::Length {
                opcode: instr.opcode(),
                expected: operand_len,
                actual: 255,
            })?,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf)?;
        instr.emit(buf.get_mut(HEADER_LEN..).unwrap_or(&mut []))?;
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
        let esp = self.instruction(instr)?;
        match (self.local, dest) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let mut out = vec![0u8; dedicated_ipv4_len(esp.len(), payload.len())];
                emit_dedicated_ipv4(s.octets(), d.octets(), self.ttl, &esp, payload, &mut out)?;
                Ok(out)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let mut out = vec![0u8; dedicated_ipv6_len(esp.len(), payload.len())];
                emit_dedicated_ipv6(s.octets(), d.octets(), self.ttl, &esp, payload, &mut out)?;
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
        let located = locate(packet)?.ok_or(EndpointError::NotEsp)?;
        let bytes = packet.get(located.range).ok_or(EndpointError::NotEsp)?;
        let header = Header::new_checked(bytes)?;
        if header.cid() != self.cid {
            return Err(EndpointError::WrongCid { got: header.cid() });
        }
        let instr = Instruction::parse(header.opcode(), header.operands())?;
        let (from, _) = addresses(packet)?;
        Ok(Received {
            from,
            instr,
            loc: header.loc(),
            err: header.err().then(|| header.err_code()),
        })
    }
}
