//! The instruction set the paper's applications speak: ESP's built-in instructions, or the
//! same instructions written in SNAP (ESP §8; `esp_micro`), so one application runs either
//! way and the two runs can be compared.
//!
//! An application describes its instructions as [`Instruction`]s and leaves their encoding
//! to an [`InstructionSet`]: [`packet_to`](InstructionSet::packet_to) builds the packet,
//! [`receive`](InstructionSet::receive) reads what arrives back into an [`Instruction`],
//! and [`microcode`](InstructionSet::microcode) is the routers' config that makes them
//! understand it ([`enable_esp_with`](super::enable_esp_with)).
//!
//! [`InstructionSet::Microcoded`] installs the shipped programs under opcodes 64..=68
//! ([`OP_COUNT`] … [`OP_LASTMARK`]) and sends COUNT, COMPARE, COLLECT, MARK and LASTMARK
//! as those opcodes with their operands as 64-bit words (an operator as its index in
//! [`CompareOp::ALL`] or [`CombineOp::ALL`]); with [`Microcoded::inline_count`], COUNT
//! travels as inline microcode instead (opcode 32, the program in the packet). Instructions
//! without a shipped program (RCHLD, RCOLLECT, SUBCAST, …) travel as built-ins.
//!
//! ```text
//!  Instruction ─► InstructionSet::packet_to ─► network (routers: microcode()) ─► receive ─► Instruction
//! ```

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::net::IpAddr;

use esp_micro::Microcode;
use esp_micro::endpoint::MicroInstruction;
use esp_proto::endpoint::{Endpoint, EndpointError, Received};
use esp_proto::instr::{CombineOp, CompareOp, InstrError, Instruction, OP_MICRO};
use esp_proto::wire::piggyback;
use ess::{Tag, Value};
use snap_vm::program::Program;

use crate::MicrocodeConfig;

/// The opcode microcoded COUNT is installed under (operands `[counter, thresh]`).
pub const OP_COUNT: u8 = 64;
/// The opcode microcoded COMPARE is installed under (`[value, current, op]`).
pub const OP_COMPARE: u8 = 65;
/// The opcode microcoded COLLECT is installed under (`[value, val, counter, op]`).
pub const OP_COLLECT: u8 = 66;
/// The opcode microcoded MARK is installed under (`[tag]`).
pub const OP_MARK: u8 = 67;
/// The opcode microcoded LASTMARK is installed under (`[tag, node]`).
pub const OP_LASTMARK: u8 = 68;

/// The SNAP assembly of the shipped microcode (`examples/esp-microcode/*.snap` in the
/// repository), one program per instruction.
#[derive(Clone, Copy, Debug)]
pub struct Sources<'a> {
    /// `count.snap`.
    pub count: &'a str,
    /// `compare.snap`.
    pub compare: &'a str,
    /// `collect.snap`.
    pub collect: &'a str,
    /// `mark.snap`.
    pub mark: &'a str,
    /// `lastmark.snap`.
    pub lastmark: &'a str,
}

impl Sources<'static> {
    /// The microcode shipped with `esp_micro` ([`esp_micro::shipped`]).
    pub const SHIPPED: Sources<'static> = Sources {
        count: esp_micro::shipped::COUNT,
        compare: esp_micro::shipped::COMPARE,
        collect: esp_micro::shipped::COLLECT,
        mark: esp_micro::shipped::MARK,
        lastmark: esp_micro::shipped::LASTMARK,
    };
}

/// The microcoded instruction set: the verified programs, and how COUNT travels.
#[derive(Clone, Debug)]
pub struct Microcoded {
    installed: Vec<(u8, String, Microcode)>,
    count: Program,
    /// COUNT travels as inline microcode (opcode 32) rather than under [`OP_COUNT`].
    pub inline_count: bool,
}

impl Microcoded {
    /// Assembles and verifies the programs in `sources`.
    ///
    /// # Errors
    ///
    /// [`esp_micro::Error`] for the first program refused.
    pub fn assemble(sources: &Sources<'_>) -> Result<Microcoded, esp_micro::Error> {
        let named = [
            (OP_COUNT, "count", sources.count),
            (OP_COMPARE, "compare", sources.compare),
            (OP_COLLECT, "collect", sources.collect),
            (OP_MARK, "mark", sources.mark),
            (OP_LASTMARK, "lastmark", sources.lastmark),
        ];
        let mut installed = Vec::new();
        for (op, name, text) in named {
            installed.push((op, name.into(), Microcode::assemble(text)?));
        }
        let count = snap_vm::asm::assemble(sources.count).map_err(esp_micro::Error::Asm)?;
        Ok(Microcoded {
            installed,
            count,
            inline_count: false,
        })
    }

    /// The same, with COUNT inline (`true`) or installed.
    pub fn with_inline_count(mut self, inline: bool) -> Microcoded {
        self.inline_count = inline;
        self
    }

    /// `instr` as microcode (installed, or COUNT inline), if it has a shipped program.
    fn micro(&self, instr: &Instruction) -> Option<Result<MicroInstruction, EndpointError>> {
        let (opcode, words) = words(instr)?;
        let micro = if opcode == OP_COUNT && self.inline_count {
            MicroInstruction::inline(&self.count, &words)
        } else {
            MicroInstruction::installed(opcode, &words)
        };
        Some(micro.map_err(|_| InstrError::Opcode { opcode }.into()))
    }
}

/// How an application's instructions are encoded. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub enum InstructionSet {
    /// ESP's built-in instructions.
    #[default]
    BuiltIn,
    /// The same instructions as SNAP microcode.
    Microcoded(Microcoded),
}

impl InstructionSet {
    /// The routers' microcode config: nothing installed for the built-ins, the programs
    /// under their opcodes for microcode (inline microcode admitted from anywhere).
    pub fn microcode(&self) -> MicrocodeConfig {
        match self {
            InstructionSet::BuiltIn => MicrocodeConfig::default(),
            InstructionSet::Microcoded(m) => MicrocodeConfig {
                inline: esp_micro::InlinePolicy::On,
                installed: m.installed.clone(),
            },
        }
    }

    /// `instr` as this set's microcode, if it is microcoded here.
    fn micro(&self, instr: &Instruction) -> Option<Result<MicroInstruction, EndpointError>> {
        match self {
            InstructionSet::BuiltIn => None,
            InstructionSet::Microcoded(m) => m.micro(instr),
        }
    }

    /// The ESP bytes (header and operands) `ep` sends for `instr`.
    ///
    /// # Errors
    ///
    /// As [`Endpoint::instruction`], or [`EndpointError::Instr`] if inline microcode does
    /// not fit the operand field.
    pub fn instruction(
        &self,
        ep: &Endpoint,
        instr: &Instruction,
    ) -> Result<Vec<u8>, EndpointError> {
        match self.micro(instr) {
            Some(micro) => micro?.instruction(ep),
            None => ep.instruction(instr),
        }
    }

    /// A dedicated packet carrying `instr` from `ep` to `dest` (as
    /// [`Endpoint::packet_to`], with no payload).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::packet_to`] and [`instruction`](Self::instruction).
    pub fn packet_to(
        &self,
        ep: &Endpoint,
        dest: IpAddr,
        instr: &Instruction,
    ) -> Result<Vec<u8>, EndpointError> {
        match self.micro(instr) {
            Some(micro) => micro?.packet_to(ep, dest, &[]),
            None => ep.packet_to(dest, instr, &[]),
        }
    }

    /// `packet` with `instr` attached (as [`Endpoint::piggyback`]).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::piggyback`] and [`instruction`](Self::instruction).
    pub fn piggyback(
        &self,
        ep: &Endpoint,
        packet: &[u8],
        instr: &Instruction,
    ) -> Result<Vec<u8>, EndpointError> {
        Ok(piggyback(packet, &self.instruction(ep, instr)?)?)
    }

    /// Parses an ESP packet of `ep`'s computation, reading microcode opcodes back into the
    /// instructions they stand for (as [`Endpoint::receive`]).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::receive`]; [`EndpointError::Instr`] if a microcode operand field is
    /// not one of this set's.
    pub fn receive(&self, ep: &Endpoint, packet: &[u8]) -> Result<Received, EndpointError> {
        let InstructionSet::Microcoded(_) = self else {
            return ep.receive(packet);
        };
        let raw = ep.receive_raw(packet)?;
        let instr = if esp_proto::instr::is_builtin(raw.opcode) {
            Instruction::parse(raw.opcode, &raw.operands)?
        } else {
            let words = esp_micro::endpoint::operands(raw.opcode, &raw.operands)
                .map_err(|_| InstrError::Opcode { opcode: raw.opcode })?;
            decode(raw.opcode, &words)?
        };
        Ok(Received {
            from: raw.from,
            instr,
            loc: raw.loc,
            err: raw.err,
        })
    }
}

/// `instr`'s microcode opcode and operand words, if it has shipped microcode.
fn words(instr: &Instruction) -> Option<(u8, Vec<u64>)> {
    let index = |i: Option<usize>| i.unwrap_or(usize::MAX) as u64;
    Some(match *instr {
        Instruction::Count { counter, thresh } => (OP_COUNT, vec![counter.0, thresh]),
        Instruction::Compare { value, current, op } => {
            let op = index(CompareOp::ALL.iter().position(|&o| o == op));
            (OP_COMPARE, vec![value.0, current.0, op])
        }
        Instruction::Collect {
            value,
            val,
            counter,
            op,
        } => {
            let op = index(CombineOp::ALL.iter().position(|&o| o == op));
            (OP_COLLECT, vec![value.0, val.0, counter.0, op])
        }
        Instruction::Mark { tag } => (OP_MARK, vec![tag.0]),
        Instruction::LastMark { tag, node } => (OP_LASTMARK, vec![tag.0, node.0]),
        _ => return None,
    })
}

/// The instruction the microcode `opcode` with operand `words` stands for (installed, or
/// inline COUNT).
fn decode(opcode: u8, words: &[u64]) -> Result<Instruction, InstrError> {
    let op_byte = |i: u64| u8::try_from(i).unwrap_or(u8::MAX);
    let length = |expected: usize| InstrError::Length {
        opcode,
        expected: 8 * expected,
        actual: 8 * words.len(),
    };
    Ok(match (opcode, words) {
        (OP_COUNT | OP_MICRO, &[counter, thresh]) => Instruction::Count {
            counter: Tag(counter),
            thresh,
        },
        (OP_COMPARE, &[value, current, op]) => Instruction::Compare {
            value: Tag(value),
            current: Value(current),
            op: *CompareOp::ALL
                .get(op as usize)
                .ok_or(InstrError::Operator { byte: op_byte(op) })?,
        },
        (OP_COLLECT, &[value, val, counter, op]) => Instruction::Collect {
            value: Tag(value),
            val: Value(val),
            counter: Tag(counter),
            op: *CombineOp::ALL
                .get(op as usize)
                .ok_or(InstrError::Operator { byte: op_byte(op) })?,
        },
        (OP_MARK, &[tag]) => Instruction::Mark { tag: Tag(tag) },
        (OP_LASTMARK, &[tag, node]) => Instruction::LastMark {
            tag: Tag(tag),
            node: Value(node),
        },
        (OP_COUNT | OP_MICRO | OP_LASTMARK, _) => return Err(length(2)),
        (OP_COMPARE, _) => return Err(length(3)),
        (OP_COLLECT, _) => return Err(length(4)),
        (OP_MARK, _) => return Err(length(1)),
        _ => return Err(InstrError::Opcode { opcode }),
    })
}

#[cfg(test)]
mod tests {
    // Test harness: panics are the failure reports.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use core::net::Ipv4Addr;

    use esp_proto::idmap::IdMap;
    use esp_proto::instr::Robust;
    use esp_proto::wire::Loc;

    use super::*;

    const SOURCES: Sources<'static> = Sources::SHIPPED;

    fn instructions() -> [Instruction; 6] {
        let robust = Robust {
            thresh: 2,
            k: 3,
            idmap: IdMap::empty(1),
        };
        [
            Instruction::Count {
                counter: Tag(7),
                thresh: u64::MAX,
            },
            Instruction::Compare {
                value: Tag(1 << 63),
                current: Value(5),
                op: CompareOp::Ne,
            },
            Instruction::Collect {
                value: Tag(2),
                val: Value(u64::MAX),
                counter: Tag(3),
                op: CombineOp::Xor,
            },
            Instruction::Mark { tag: Tag(9) },
            Instruction::LastMark {
                tag: Tag(9),
                node: Value(0x0A00_0001),
            },
            Instruction::Rchld {
                children: Tag(4),
                counter: Tag(5),
                robust,
            },
        ]
    }

    /// The opcode `packet` carries.
    fn opcode(packet: &[u8]) -> u8 {
        let at = esp_proto::wire::locate(packet).unwrap().unwrap().range;
        esp_proto::wire::Header::new_checked(&packet[at])
            .unwrap()
            .opcode()
    }

    /// Every instruction goes out under its set's opcode and comes back as itself, with
    /// the endpoint's Loc and the addresses.
    #[test]
    fn instructions_round_trip_under_each_set() {
        let micro = Microcoded::assemble(&SOURCES).unwrap();
        let sets = [
            (InstructionSet::BuiltIn, [1, 2, 3, 9, 10, 4]),
            (
                InstructionSet::Microcoded(micro.clone()),
                [OP_COUNT, OP_COMPARE, OP_COLLECT, OP_MARK, OP_LASTMARK, 4],
            ),
            (
                InstructionSet::Microcoded(micro.with_inline_count(true)),
                [OP_MICRO, OP_COMPARE, OP_COLLECT, OP_MARK, OP_LASTMARK, 4],
            ),
        ];
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let ep = Endpoint::new(77, src.into()).with_loc(Loc::OUTPUT);
        for (isa, opcodes) in sets {
            for (instr, op) in instructions().iter().zip(opcodes) {
                let p = isa.packet_to(&ep, dst.into(), instr).unwrap();
                assert_eq!(opcode(&p), op, "{instr:?}");
                let got = isa.receive(&Endpoint::new(77, dst.into()), &p).unwrap();
                assert_eq!(got.instr, *instr);
                assert_eq!(
                    (got.from, got.loc, got.err),
                    (src.into(), Loc::OUTPUT, None)
                );
                assert_eq!(p[8], 64, "the endpoint's TTL");
            }
        }
    }

    /// The installed operand field is the operands as big-endian words, the operator as
    /// its index; a field of another length or operator is refused on the way back.
    #[test]
    fn installed_fields_are_words() {
        let micro = Microcoded::assemble(&SOURCES).unwrap();
        let compare = Instruction::Compare {
            value: Tag(0x0102),
            current: Value(3),
            op: CompareOp::Ge,
        };
        let m = micro.micro(&compare).unwrap().unwrap();
        let mut want = Vec::new();
        for w in [0x0102u64, 3, 3] {
            want.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!((m.opcode(), m.field()), (OP_COMPARE, want.as_slice()));
        assert_eq!(decode(OP_COMPARE, &[0x0102, 3, 3]), Ok(compare));
        assert!(matches!(
            decode(OP_COMPARE, &[0x0102, 3]),
            Err(InstrError::Length { .. })
        ));
        // A field that is not whole words is refused on the way back.
        let ep = Endpoint::new(77, Ipv4Addr::new(10, 0, 0, 2).into());
        let p = ep
            .raw_packet_to(
                Ipv4Addr::new(10, 0, 0, 2).into(),
                OP_COMPARE,
                &want[..23],
                &[],
            )
            .unwrap();
        assert!(
            InstructionSet::Microcoded(micro.clone())
                .receive(&ep, &p)
                .is_err()
        );
        assert_eq!(
            decode(OP_COMPARE, &[0x0102, 3, 6]),
            Err(InstrError::Operator { byte: 6 })
        );
        assert_eq!(decode(100, &[]), Err(InstrError::Opcode { opcode: 100 }));
        // The routers get every program under its opcode.
        let config = InstructionSet::Microcoded(micro).microcode();
        let ops: Vec<u8> = config.installed.iter().map(|(op, _, _)| *op).collect();
        assert_eq!(
            ops,
            [OP_COUNT, OP_COMPARE, OP_COLLECT, OP_MARK, OP_LASTMARK]
        );
        assert!(InstructionSet::BuiltIn.microcode().installed.is_empty());
    }
}
