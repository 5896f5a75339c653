//! The host side of microcode: building the instruction a packet carries — inline
//! microcode ([`OP_MICRO`]: a program and its operands) or an installed instruction (an
//! opcode in [`INSTALLED`] and its operands) — and reading back the operands the routers
//! returned.
//!
//! ```text
//!  Program / assembly ─┐                                       ┌─ RawReceived.operands
//!   + operands (u64s)  ├─► MicroInstruction { opcode, field } ─┤        │
//!  opcode 64..=127 ────┘   │ Endpoint::raw_packet_to           │  operands(opcode, field)
//!                          └─► packet ─► routers (Micro) ─► … ─┘        └─► Vec<u64>
//! ```
//!
//! An inline program is verified here as a router would ([`Microcode::new`]), so a sender
//! learns of a program every router refuses before it sends one.
//!
//! ```
//! use core::net::Ipv4Addr;
//! use esp_micro::endpoint::{MicroInstruction, operands};
//! use esp_proto::endpoint::Endpoint;
//!
//! let count = esp_micro::shipped::COUNT;
//! let instr = MicroInstruction::inline_assembly(count, &[7, 2])?; // counter 7, threshold 2
//! assert_eq!((instr.opcode(), instr.field().len()), (32, 87)); // 71 of program, 16 of operands
//!
//! let ep = Endpoint::new(1, Ipv4Addr::new(10, 1, 0, 1).into());
//! let packet = instr.packet_to(&ep, Ipv4Addr::new(10, 0, 0, 2).into(), b"")?;
//! // … routers run it; the answer comes back:
//! let got = ep.receive_raw(&packet)?;
//! assert_eq!(operands(got.opcode, &got.operands)?, [7, 2]);
//!
//! // The same instruction installed at the routers under opcode 64: operands only.
//! let installed = MicroInstruction::installed(64, &[7, 2])?;
//! assert_eq!(installed.field().len(), 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use esp_proto::endpoint::{Endpoint, EndpointError};
use snap_vm::asm::assemble;
use snap_vm::program::Program;

use crate::body::{Body, BodyError, encode};
use crate::{Error, INSTALLED, MAX_OPERANDS, Microcode, OP_MICRO};

/// Why a microcode instruction could not be built or read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MicroError {
    /// The program does not assemble or verify (or is too long to run).
    Program(Error),
    /// The inline field cannot be built or read (too large for ESP's 255-byte operand
    /// field, too many operands, lengths that do not add up).
    Body(BodyError),
    /// The opcode is neither inline microcode ([`OP_MICRO`]) nor installable
    /// ([`INSTALLED`]).
    Opcode {
        /// The opcode.
        opcode: u8,
    },
}

impl fmt::Display for MicroError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MicroError::Program(e) => write!(f, "microcode: {e}"),
            MicroError::Body(e) => write!(f, "{e}"),
            MicroError::Opcode { opcode } => write!(
                f,
                "opcode {opcode} is neither inline microcode ({OP_MICRO}) nor an installed \
                 instruction ({}..={})",
                INSTALLED.start(),
                INSTALLED.end()
            ),
        }
    }
}

impl core::error::Error for MicroError {}

impl From<Error> for MicroError {
    fn from(e: Error) -> Self {
        MicroError::Program(e)
    }
}

impl From<BodyError> for MicroError {
    fn from(e: BodyError) -> Self {
        MicroError::Body(e)
    }
}

/// A microcode instruction as a packet carries it: its opcode and operand field. See the
/// [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroInstruction {
    opcode: u8,
    field: Vec<u8>,
}

impl MicroInstruction {
    /// Inline microcode: `program` (verified as a router verifies it) with `operands`,
    /// under [`OP_MICRO`].
    ///
    /// # Errors
    ///
    /// [`MicroError::Program`] if the program does not verify; [`MicroError::Body`] with
    /// [`BodyError::TooLarge`] (naming the size) if it does not fit ESP's 255-byte operand
    /// field beside its operands — install it under an opcode 64–127 instead — or
    /// [`BodyError::TooManyOperands`] past [`MAX_OPERANDS`].
    pub fn inline(program: &Program, operands: &[u64]) -> Result<MicroInstruction, MicroError> {
        Microcode::new(program)?;
        Ok(MicroInstruction {
            opcode: OP_MICRO,
            field: encode(program, operands)?,
        })
    }

    /// Inline microcode from SNAP assembly text ([`snap_vm::asm`]).
    ///
    /// # Errors
    ///
    /// [`MicroError::Program`] with [`Error::Asm`] if it does not assemble, or as
    /// [`inline`](Self::inline).
    pub fn inline_assembly(text: &str, operands: &[u64]) -> Result<MicroInstruction, MicroError> {
        let program = assemble(text).map_err(Error::Asm)?;
        MicroInstruction::inline(&program, operands)
    }

    /// The instruction a router's operator installed under `opcode`, with `operands` (the
    /// field is the operands alone, 8 bytes each, big-endian).
    ///
    /// # Errors
    ///
    /// [`MicroError::Opcode`] outside [`INSTALLED`], [`MicroError::Body`] with
    /// [`BodyError::TooManyOperands`] past [`MAX_OPERANDS`].
    pub fn installed(opcode: u8, operands: &[u64]) -> Result<MicroInstruction, MicroError> {
        if !INSTALLED.contains(&opcode) {
            return Err(MicroError::Opcode { opcode });
        }
        if operands.len() > MAX_OPERANDS {
            return Err(BodyError::TooManyOperands {
                operands: operands.len(),
            }
            .into());
        }
        Ok(MicroInstruction {
            opcode,
            field: operands.iter().flat_map(|o| o.to_be_bytes()).collect(),
        })
    }

    /// The opcode: [`OP_MICRO`] or one in [`INSTALLED`].
    pub fn opcode(&self) -> u8 {
        self.opcode
    }

    /// The operand field.
    pub fn field(&self) -> &[u8] {
        &self.field
    }

    /// The operands it carries ([`operands`]).
    pub fn operands(&self) -> Vec<u64> {
        operands(self.opcode, &self.field).unwrap_or_default()
    }

    /// The ESP instruction bytes (header and field) from `ep`
    /// ([`Endpoint::raw_instruction`]), e.g. to piggyback.
    ///
    /// # Errors
    ///
    /// As [`Endpoint::raw_instruction`].
    pub fn instruction(&self, ep: &Endpoint) -> Result<Vec<u8>, EndpointError> {
        ep.raw_instruction(self.opcode, &self.field)
    }

    /// A dedicated packet from `ep` carrying it, then `payload`, to `dest`
    /// ([`Endpoint::raw_packet_to`]).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::raw_packet_to`].
    pub fn packet_to(
        &self,
        ep: &Endpoint,
        dest: IpAddr,
        payload: &[u8],
    ) -> Result<Vec<u8>, EndpointError> {
        ep.raw_packet_to(dest, self.opcode, &self.field, payload)
    }
}

/// The operands in a received operand `field` of `opcode`, as the last router left them:
/// after the program for inline microcode ([`OP_MICRO`]), the whole field for an
/// installed instruction.
///
/// # Errors
///
/// [`MicroError::Opcode`] for any other opcode; [`MicroError::Body`] if the field's
/// lengths do not add up, or it holds a part of a 64-bit operand or more than
/// [`MAX_OPERANDS`].
pub fn operands(opcode: u8, field: &[u8]) -> Result<Vec<u64>, MicroError> {
    if opcode == OP_MICRO {
        return Ok(Body::parse(field)?.operand_words().collect());
    }
    if !INSTALLED.contains(&opcode) {
        return Err(MicroError::Opcode { opcode });
    }
    if !field.len().is_multiple_of(8) {
        return Err(BodyError::Operands { bytes: field.len() }.into());
    }
    if field.len() / 8 > MAX_OPERANDS {
        return Err(BodyError::TooManyOperands {
            operands: field.len() / 8,
        }
        .into());
    }
    Ok(Body {
        program: &[],
        operands: field,
    }
    .operand_words()
    .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InlinePolicy, Micro};
    use alloc::string::ToString;
    use alloc::vec;
    use core::net::Ipv4Addr;
    use esp_proto::node::{EspNode, Found, NodeConfig};
    use esp_proto::wire::ErrCode;
    use esp_proto::{EssConfig, HashKey, Instant};

    const COUNT: &str = include_str!("../microcode/count.snap");

    #[test]
    fn inline_field_is_the_body_and_reads_back() {
        let program = assemble(COUNT).unwrap_or_default();
        let instr = MicroInstruction::inline(&program, &[7, u64::MAX]);
        let field = encode(&program, &[7, u64::MAX]).unwrap_or_default();
        assert_eq!(
            instr.as_ref().map(|i| (i.opcode(), i.field())),
            Ok((32, &field[..]))
        );
        assert_eq!(instr.map(|i| i.operands()), Ok(vec![7, u64::MAX]));
    }

    #[test]
    fn installed_field_is_the_operands_big_endian() {
        let instr = MicroInstruction::installed(64, &[0x0102_0304_0506_0708, 9]);
        let mut want = vec![1, 2, 3, 4, 5, 6, 7, 8];
        want.extend_from_slice(&9u64.to_be_bytes());
        assert_eq!(
            instr.as_ref().map(|i| (i.opcode(), i.field())),
            Ok((64, &want[..]))
        );
        assert_eq!(operands(127, &want), Ok(vec![0x0102_0304_0506_0708, 9]));
        assert_eq!(
            MicroInstruction::installed(128, &[]),
            Err(MicroError::Opcode { opcode: 128 })
        );
        assert_eq!(
            MicroInstruction::installed(63, &[]),
            Err(MicroError::Opcode { opcode: 63 })
        );
        assert_eq!(
            MicroInstruction::installed(64, &[0; 9]),
            Err(MicroError::Body(BodyError::TooManyOperands { operands: 9 }))
        );
    }

    #[test]
    fn a_program_too_large_to_carry_names_its_size_and_the_way_out() {
        let long = "push 1\npop\n".repeat(40); // 80 words: 323 bytes of field
        let e = MicroInstruction::inline_assembly(&long, &[]);
        assert_eq!(e, Err(MicroError::Body(BodyError::TooLarge { bytes: 323 })));
        let text = e.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("323 bytes"), "{text}");
        assert!(text.contains("install"), "{text}");
        assert!(text.contains("64-127"), "{text}");
    }

    #[test]
    fn programs_a_router_refuses_are_refused_here() {
        // A network instruction; text that does not assemble.
        for bad in ["forw\npush 0", "bogus 1"] {
            assert!(
                matches!(
                    MicroInstruction::inline_assembly(bad, &[]),
                    Err(MicroError::Program(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn operands_of_bad_fields_are_errors() {
        assert_eq!(operands(1, &[]), Err(MicroError::Opcode { opcode: 1 }));
        assert_eq!(
            operands(64, &[0; 12]),
            Err(MicroError::Body(BodyError::Operands { bytes: 12 }))
        );
        assert_eq!(
            operands(64, &[0; 72]),
            Err(MicroError::Body(BodyError::TooManyOperands { operands: 9 }))
        );
        assert!(matches!(
            operands(32, &[5, 0, 0]),
            Err(MicroError::Body(BodyError::Truncated { .. }))
        ));
        assert_eq!(operands(64, &[]), Ok(vec![]));
    }

    const HOST: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn node() -> EspNode {
        let store = EssConfig::new(6, 1_000, 1, HashKey::from_seed(1));
        EspNode::new(NodeConfig {
            ifaces: 2,
            store: store.unwrap_or_else(|e| panic!("{e}")),
            shards: 1,
            node_id: 1,
            idmap_key: HashKey::from_seed(2),
            timestamp_shift: 0,
        })
    }

    /// Sends `instr` from a host through `node` (in on 0, out on 1) as a router does;
    /// whether it went on, and the operands the receiver reads back with its Err code.
    fn through(
        node: &mut EspNode,
        micro: &mut Micro,
        instr: &MicroInstruction,
    ) -> (bool, Result<Vec<u64>, MicroError>, Option<ErrCode>) {
        let ep = Endpoint::new(5, HOST.into()).with_loc(esp_proto::wire::Loc::CENTRAL);
        let mut packet = instr.packet_to(&ep, DST.into(), b"").unwrap_or_default();
        let found = Found::in_packet(&packet);
        let now = Instant::from_ticks(1);
        let on = node.ingress_found_with(now, 0, &mut packet, &found, &mut micro.gate(Some(0)))
            && node.egress_found_with(now, 1, &mut packet, &found, &mut micro.gate(Some(0)));
        let got = ep.receive_raw(&packet);
        let err = got.as_ref().ok().and_then(|r| r.err);
        let back = got
            .map_err(|_| MicroError::Opcode { opcode: 0 })
            .and_then(|r| operands(r.opcode, &r.operands));
        (on, back, err)
    }

    #[test]
    fn inline_count_through_a_router_forwards_then_drops() {
        let (mut node, mut micro) = (node(), Micro::new(InlinePolicy::On));
        let count =
            MicroInstruction::inline_assembly(COUNT, &[7, 1]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            through(&mut node, &mut micro, &count),
            (true, Ok(vec![7, 1]), None)
        );
        // Over the threshold at the second packet: dropped.
        assert!(!through(&mut node, &mut micro, &count).0);
        assert_eq!(micro.stats().inline_runs, 2);
        assert_eq!(node.stats().dropped, 1);
    }

    #[test]
    fn returned_operands_are_the_routers_and_aborts_carry_err() {
        // [tag, _] -> [tag, count(tag)]: operand 1 comes back as the router's count.
        let counter = "pull 1\ncalls \"ess.count\"\nstore 1\npush 0";
        let (mut node, mut micro) = (node(), Micro::new(InlinePolicy::On));
        let i =
            MicroInstruction::inline_assembly(counter, &[9, 0]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            through(&mut node, &mut micro, &i),
            (true, Ok(vec![9, 1]), None)
        );
        assert_eq!(
            through(&mut node, &mut micro, &i),
            (true, Ok(vec![9, 2]), None)
        );
        // Installed under 64: the same answer from operands alone.
        let code = Microcode::assemble(counter).unwrap_or_else(|e| panic!("{e}"));
        assert!(micro.install(64, "counter", code).is_ok());
        let i = MicroInstruction::installed(64, &[9, 0]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            through(&mut node, &mut micro, &i),
            (true, Ok(vec![9, 3]), None)
        );
        // Refused where inline microcode is off: Err Malformed, forwarded, operands as sent.
        micro.set_policy(InlinePolicy::Off);
        let i =
            MicroInstruction::inline_assembly(counter, &[9, 0]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            through(&mut node, &mut micro, &i),
            (true, Ok(vec![9, 0]), Some(ErrCode::Malformed))
        );
    }
}
