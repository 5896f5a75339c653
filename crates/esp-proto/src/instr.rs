//! The instruction set: opcodes, operands and what each instruction does (paper §2.4, §3,
//! §4.3).
//!
//! Every operand is fixed-size and big-endian. Tags and values are 64 bits. The robust
//! instructions carry an IDmap of `w` words (1 to [`MAX_WORDS`](crate::idmap::MAX_WORDS)),
//! announced by their `words` byte; their Bloom filters live under the tag sequence
//! `T, T+1, …, T+w−1` (one ESS value per word). Encodings are in [`codec`](crate::codec).
//!
//! # The instructions
//!
//! "nil" is an unbound tag. Every instruction is atomic on the store (it checks what can
//! make it abort before it writes) and touches at most `3w + 3` tags. An abort sets Err,
//! clears Loc and forwards the packet ([`process`](crate::exec::process)). Instructions
//! that create bindings abort with [`StoreFull`](crate::exec::Abort::StoreFull) when the
//! store cannot take them all.
//!
//! | op | name | operands (bytes) | store | packet | forwards when | aborts when |
//! |---:|---|---|---|---|---|---|
//! | 1 | COUNT | C, thresh (16) | `C ← C + 1` (nil = 0, saturating) | — | new `C ≤ thresh` | full |
//! | 2 | COMPARE | V, current, op (17) | `V ← current` if nil or `V op current` | — | V was nil or `V op current` | full |
//! | 3 | COLLECT | V, val, C, ∘ (25) | `V ← V ∘ val` (nil: val); `C ← C − 1` | `val ← V` when forwarded | new `C = 0` | C nil; full |
//! | 4 | RCHLD | T0, C, thresh, k, w, idmap (20 + 8w) | `T0 ← T0 ∣ idmap`; `C ← C + 1` | `idmap ← myIDmap` when forwarded | new `C ≤ thresh` | full |
//! | 5 | RCOLLECT | V, val, T1, T0, D, thresh, ∘, k, w, idmap (45 + 8w) | if `idmap ⊄ T1`: `T1 ← T1 ∣ idmap`, `V ← V ∘ val`; if `T1 = T0`: `D ← D + 1` | `idmap ← myIDmap`, `val ← V` when forwarded | `T1 = T0` and new `D ≤ thresh` | T0 nil; V nil on a duplicate; full |
//! | 6 | GET | tag, value (16) | — | `value ← tag` | always | tag nil |
//! | 7 | PUT | tag, value (16) | `tag ← value` | — | always | full |
//! | 8 | UPDATE | tag, value, ∘ (17) | `tag ← tag ∘ value` (nil: value) | `value ← tag` (new) | always | full |
//! | 9 | MARK | tag (8) | `tag ← node id` | — | always | full |
//! | 10 | LASTMARK | tag, node (16) | — | `node ← node id` if tag bound | always | — |
//! | 11 | SUBCAST | tag (8) | — | — | tag bound in the *input* context of the interface the packet leaves by (a NACK's mark) | — |
//! | 12 | PARAM | param, ∘, value (10) | — | `value ← value ∘ param` | always | — |
//! | 13 | PUTPARAM | tag, param (9) | `tag ← param` | — | always | full |
//! | 14 | TEST | tag, value, op (17) | — | — | tag bound and `tag op value` | — |
//! | 15 | EXISTS | tag (8) | — | — | tag bound | — |
//! | 16 | ABSENT | tag (8) | — | — | tag nil | — |
//! | 17 | CSWAP | tag, expect, new (24) | `tag ← new` if `tag = expect` (nil = 0) | `expect ← tag` (old) | swapped | full |
//!
//! `op` is a [`CompareOp`], `∘` a [`CombineOp`], `param` a [`Param`]: well-known node
//! parameters from the [`Env`](crate::exec::Env) of the context that runs the instruction
//! (node id, interface, interface load, queue length, coarse timestamp). `myIDmap` is the
//! node's IDmap for this computation ([`IdMap::for_node`](crate::idmap::IdMap::for_node)
//! over the node's secret, the CID, `k` and `w`).
//!
//! The paper's applications use them so: path intersection (Fig. 1) is MARK toward one
//! receiver, then LASTMARK toward the other; feedback thinning (§3.1.1) is COMPARE;
//! NACK suppression (§3.1.2) is COUNT run in the input and output contexts (the input-side
//! binding is the mark), and the subcast retransmission carries SUBCAST run on the output
//! side; aggregation (§3.2) is COUNT then COLLECT, and its robust form (§4.3.3) RCHLD then
//! RCOLLECT.
//!
//! Beyond the table, two opcode ranges run SNAP programs as instructions (§8: new
//! instructions without a new router release), through an
//! [`Extension`](crate::exec::Extension) (the `esp-micro` crate, whose docs give the ABI),
//! and are reported as the built-ins are:
//!
//! | op | name | operands (bytes) | runs |
//! |---:|---|---|---|
//! | 32 ([`OP_MICRO`]) | inline microcode | c, h, entry (1 each), code (4c), heap (4h), n operands (8n, n ≤ 8); 255 at most | the packet's own program, verified at the router |
//! | 64–127 ([`INSTALLED`]) | installed instruction | n operands (8n, n ≤ 8) | the program the router's operator installed under the opcode |
//!
//! Code and heap words are SNAP's 32-bit words, as in a SNAP packet; everything is
//! big-endian. A router without an extension, with inline microcode switched off (or not
//! allowed on the interface the packet came in by), with nothing installed under the
//! opcode, or whose verifier refuses the program aborts the instruction with
//! [`Malformed`](crate::exec::Abort::Malformed) (Err code 3), as for an unknown opcode; so
//! does a program that faults. A program's own aborts are MissingState and StoreFull.
//!
//! Which fit a piggybacked IPv4 option (26 operand bytes, see
//! [`MAX_IPV4_OPTION_OPERANDS`](crate::consts::MAX_IPV4_OPTION_OPERANDS)): every
//! instruction except RCHLD (28 bytes and up) and RCOLLECT (53 and up), which need a
//! dedicated packet or the IPv6 hop-by-hop option (up to 247 operand bytes).

use core::fmt;

use ess::{Tag, Value};

use crate::idmap::IdMap;

/// Opcode of COUNT.
pub const OP_COUNT: u8 = 1;
/// Opcode of COMPARE.
pub const OP_COMPARE: u8 = 2;
/// Opcode of COLLECT.
pub const OP_COLLECT: u8 = 3;
/// Opcode of RCHLD.
pub const OP_RCHLD: u8 = 4;
/// Opcode of RCOLLECT.
pub const OP_RCOLLECT: u8 = 5;
/// Opcode of GET.
pub const OP_GET: u8 = 6;
/// Opcode of PUT.
pub const OP_PUT: u8 = 7;
/// Opcode of UPDATE.
pub const OP_UPDATE: u8 = 8;
/// Opcode of MARK.
pub const OP_MARK: u8 = 9;
/// Opcode of LASTMARK.
pub const OP_LASTMARK: u8 = 10;
/// Opcode of SUBCAST.
pub const OP_SUBCAST: u8 = 11;
/// Opcode of PARAM.
pub const OP_PARAM: u8 = 12;
/// Opcode of PUTPARAM.
pub const OP_PUTPARAM: u8 = 13;
/// Opcode of TEST.
pub const OP_TEST: u8 = 14;
/// Opcode of EXISTS.
pub const OP_EXISTS: u8 = 15;
/// Opcode of ABSENT.
pub const OP_ABSENT: u8 = 16;
/// Opcode of CSWAP.
pub const OP_CSWAP: u8 = 17;

/// Opcode of inline microcode (§8): the operand field carries a SNAP program and its
/// operands, run by an [`Extension`](crate::exec::Extension) (the `esp-micro` crate) where
/// the router offers one.
pub const OP_MICRO: u8 = 32;
/// Opcodes a router maps to instructions its operator installed (§8: the instruction set
/// extended without a new router release). Packets naming one carry operands only.
pub const INSTALLED: core::ops::RangeInclusive<u8> = 64..=127;

/// Whether `opcode` is one of the built-in instructions ([`OPCODES`]); anything else goes to
/// the router's [`Extension`](crate::exec::Extension), if it has one.
#[inline]
pub const fn is_builtin(opcode: u8) -> bool {
    opcode >= OP_COUNT && opcode <= OP_CSWAP
}

/// Every built-in opcode, in order.
pub const OPCODES: [u8; 17] = [
    OP_COUNT,
    OP_COMPARE,
    OP_COLLECT,
    OP_RCHLD,
    OP_RCOLLECT,
    OP_GET,
    OP_PUT,
    OP_UPDATE,
    OP_MARK,
    OP_LASTMARK,
    OP_SUBCAST,
    OP_PARAM,
    OP_PUTPARAM,
    OP_TEST,
    OP_EXISTS,
    OP_ABSENT,
    OP_CSWAP,
];

/// A relation between a stored value α and the packet's value (Fig. 3: `α <op> current`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// α < current (keeps the maximum: the packet passes only with a new maximum).
    Lt,
    /// α ≤ current.
    Le,
    /// α > current (keeps the minimum).
    Gt,
    /// α ≥ current.
    Ge,
    /// α = current.
    Eq,
    /// α ≠ current.
    Ne,
}

impl CompareOp {
    /// Every operator, in encoding order.
    pub const ALL: [CompareOp; 6] = [
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
        CompareOp::Eq,
        CompareOp::Ne,
    ];

    /// Whether `stored <op> current` holds.
    pub const fn holds(self, stored: u64, current: u64) -> bool {
        match self {
            CompareOp::Lt => stored < current,
            CompareOp::Le => stored <= current,
            CompareOp::Gt => stored > current,
            CompareOp::Ge => stored >= current,
            CompareOp::Eq => stored == current,
            CompareOp::Ne => stored != current,
        }
    }
}

/// COLLECT's (and UPDATE's, PARAM's) associative, commutative operator ∘ (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CombineOp {
    /// Wrapping addition.
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
}

impl CombineOp {
    /// Every operator, in encoding order.
    pub const ALL: [CombineOp; 6] = [
        CombineOp::Add,
        CombineOp::Min,
        CombineOp::Max,
        CombineOp::And,
        CombineOp::Or,
        CombineOp::Xor,
    ];

    /// `a ∘ b`.
    pub const fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            CombineOp::Add => a.wrapping_add(b),
            CombineOp::Min => {
                if a < b {
                    a
                } else {
                    b
                }
            }
            CombineOp::Max => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            CombineOp::And => a & b,
            CombineOp::Or => a | b,
            CombineOp::Xor => a ^ b,
        }
    }
}

/// A well-known node parameter an instruction can use as an operand (§2.4: "the value of a
/// MIB variable").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// The node's 64-bit identifier (its IPv4 address, zero-extended, by convention).
    NodeId,
    /// The interface the context serves (input or output; `u32::MAX` for the central one).
    Iface,
    /// That interface's load, in the node's unit (bytes per second by convention).
    IfaceLoad,
    /// That interface's queue length, in packets.
    QueueLen,
    /// A coarse timestamp (milliseconds by convention).
    Timestamp,
}

impl Param {
    /// Every parameter, in encoding order.
    pub const ALL: [Param; 5] = [
        Param::NodeId,
        Param::Iface,
        Param::IfaceLoad,
        Param::QueueLen,
        Param::Timestamp,
    ];
}

/// Encodes an operator enum as one byte: its index in `ALL`.
macro_rules! byte_codec {
    ($t:ty) => {
        impl TryFrom<u8> for $t {
            type Error = InstrError;
            fn try_from(b: u8) -> Result<Self, InstrError> {
                <$t>::ALL
                    .get(usize::from(b))
                    .copied()
                    .ok_or(InstrError::Operator { byte: b })
            }
        }

        impl From<$t> for u8 {
            fn from(op: $t) -> u8 {
                // `ALL` lists every variant, so the search always succeeds.
                <$t>::ALL.iter().position(|x| *x == op).unwrap_or(0) as u8
            }
        }
    };
}

byte_codec!(CompareOp);
byte_codec!(CombineOp);
byte_codec!(Param);

/// The IDmap and duplicate-control operands the robust instructions share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Robust {
    /// The forwarding limit: at most this many packets are forwarded per node.
    pub thresh: u16,
    /// Bits each node sets in its IDmap (its `k`).
    pub k: u8,
    /// The sender's IDmap (replaced by the forwarding node's own); its word count is `w`.
    pub idmap: IdMap,
}

/// One ESP instruction with its operands. See the [module docs](self) for the table.
///
/// ```
/// use esp_proto::instr::{CompareOp, Instruction};
/// use esp_proto::{Tag, Value};
/// let i = Instruction::Compare { value: Tag(0xF00D), current: Value(42), op: CompareOp::Lt };
/// let mut buf = [0u8; 17];
/// i.emit(&mut buf)?;
/// assert_eq!(Instruction::parse(i.opcode(), &buf)?, i);
/// # Ok::<(), esp_proto::instr::InstrError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// COUNT (Fig. 3): count packets under tag `counter`; pass while the count ≤ `thresh`.
    Count {
        /// Tag C of the counter.
        counter: Tag,
        /// Forwarding threshold.
        thresh: u64,
    },
    /// COMPARE (Fig. 3): pass, and store `current`, when there is no stored value or
    /// `stored <op> current`.
    Compare {
        /// Tag V of the stored value.
        value: Tag,
        /// The packet's value.
        current: Value,
        /// The relation.
        op: CompareOp,
    },
    /// COLLECT (Fig. 6): fold `val` into the value under `value`, count down the children
    /// under `counter`, and pass the result on when the last child has reported.
    Collect {
        /// Tag V of the running result.
        value: Tag,
        /// The packet's value (replaced by the result when forwarded).
        val: Value,
        /// Tag C of the child count set up by COUNT.
        counter: Tag,
        /// The operator ∘.
        op: CombineOp,
    },
    /// RCHLD (Fig. 9): record the sender's IDmap in the Bloom filter under `children`, count
    /// the packet under `counter`, pass it on (carrying this node's IDmap) while the count is
    /// within the limit.
    Rchld {
        /// Tag T0 (first of `w`) of the filter of children.
        children: Tag,
        /// Tag C of the count of packets received.
        counter: Tag,
        /// Limit, k and IDmap.
        robust: Robust,
    },
    /// RCOLLECT (Fig. 9): COLLECT with duplicate detection; forwards when the filter of
    /// children heard from in this phase equals the one RCHLD built.
    Rcollect {
        /// Tag V of the running result.
        value: Tag,
        /// The packet's value (replaced by the result when forwarded).
        val: Value,
        /// Tag T1 (first of `w`) of the filter of children heard from.
        heard: Tag,
        /// Tag T0 (first of `w`) of RCHLD's filter of children.
        children: Tag,
        /// Tag D of the count of packets forwarded.
        forwarded: Tag,
        /// The operator ∘.
        op: CombineOp,
        /// Limit, k and IDmap.
        robust: Robust,
    },
    /// GET: copy the value under `tag` into the packet.
    Get {
        /// The tag.
        tag: Tag,
        /// Receives the stored value.
        value: Value,
    },
    /// PUT: bind `value` to `tag`.
    Put {
        /// The tag.
        tag: Tag,
        /// The value.
        value: Value,
    },
    /// UPDATE: fold `value` into the value under `tag` and return the result.
    Update {
        /// The tag.
        tag: Tag,
        /// The operand; receives the new stored value.
        value: Value,
        /// The operator ∘.
        op: CombineOp,
    },
    /// MARK (Fig. 1): bind this node's id to `tag`.
    Mark {
        /// The tag.
        tag: Tag,
    },
    /// LASTMARK (Fig. 1): if `tag` is bound here, record this node's id in the packet; the
    /// destination receives the last marked node on the path.
    LastMark {
        /// The tag MARK bound.
        tag: Tag,
        /// Receives the id of the last marked node passed (0 if none yet).
        node: Value,
    },
    /// SUBCAST (Fig. 5): pass only out of interfaces whose input side holds `tag` (left
    /// there by a NACK for this sequence number).
    Subcast {
        /// The tag the NACKs created.
        tag: Tag,
    },
    /// PARAM: fold a node parameter into the packet's value (e.g. the largest queue on the
    /// path: ∘ = max).
    Param {
        /// Which parameter.
        param: Param,
        /// The operator ∘.
        op: CombineOp,
        /// The running value.
        value: Value,
    },
    /// PUTPARAM: bind a node parameter to `tag`.
    PutParam {
        /// The tag.
        tag: Tag,
        /// Which parameter.
        param: Param,
    },
    /// TEST: pass only if `tag` is bound and `stored <op> value`.
    Test {
        /// The tag.
        tag: Tag,
        /// The packet's value.
        value: Value,
        /// The relation.
        op: CompareOp,
    },
    /// EXISTS: pass only if `tag` is bound.
    Exists {
        /// The tag.
        tag: Tag,
    },
    /// ABSENT: pass only if `tag` is nil.
    Absent {
        /// The tag.
        tag: Tag,
    },
    /// CSWAP: compare and swap; pass only if the swap happened.
    Cswap {
        /// The tag.
        tag: Tag,
        /// The value expected (nil counts as 0); receives the value found.
        expect: Value,
        /// The value to store.
        new: Value,
    },
}

/// Why an operand field is not a valid instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstrError {
    /// No instruction has this opcode.
    Opcode {
        /// The opcode.
        opcode: u8,
    },
    /// The operand field has the wrong length for the opcode.
    Length {
        /// The opcode.
        opcode: u8,
        /// Bytes the opcode needs.
        expected: usize,
        /// Bytes present.
        actual: usize,
    },
    /// An operator or parameter byte names none.
    Operator {
        /// The byte.
        byte: u8,
    },
    /// An IDmap word count outside 1..=[`MAX_WORDS`](crate::idmap::MAX_WORDS), or a `k`
    /// above [`MAX_K`](crate::idmap::MAX_K).
    IdMap {
        /// The word count.
        words: u8,
        /// The `k`.
        k: u8,
    },
}

impl fmt::Display for InstrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstrError::Opcode { opcode } => write!(f, "unknown ESP opcode {opcode}"),
            InstrError::Length {
                opcode,
                expected,
                actual,
            } => write!(
                f,
                "ESP opcode {opcode} takes {expected} operand bytes, got {actual}"
            ),
            InstrError::Operator { byte } => write!(f, "unknown ESP operator {byte}"),
            InstrError::IdMap { words, k } => write!(
                f,
                "IDmap of {words} words with k = {k} is out of range (1..=8 words, k ≤ 64)"
            ),
        }
    }
}

impl core::error::Error for InstrError {}

impl Instruction {
    /// The opcode.
    pub const fn opcode(&self) -> u8 {
        match self {
            Instruction::Count { .. } => OP_COUNT,
            Instruction::Compare { .. } => OP_COMPARE,
            Instruction::Collect { .. } => OP_COLLECT,
            Instruction::Rchld { .. } => OP_RCHLD,
            Instruction::Rcollect { .. } => OP_RCOLLECT,
            Instruction::Get { .. } => OP_GET,
            Instruction::Put { .. } => OP_PUT,
            Instruction::Update { .. } => OP_UPDATE,
            Instruction::Mark { .. } => OP_MARK,
            Instruction::LastMark { .. } => OP_LASTMARK,
            Instruction::Subcast { .. } => OP_SUBCAST,
            Instruction::Param { .. } => OP_PARAM,
            Instruction::PutParam { .. } => OP_PUTPARAM,
            Instruction::Test { .. } => OP_TEST,
            Instruction::Exists { .. } => OP_EXISTS,
            Instruction::Absent { .. } => OP_ABSENT,
            Instruction::Cswap { .. } => OP_CSWAP,
        }
    }

    /// The paper's name of the instruction (upper case).
    pub const fn name(&self) -> &'static str {
        match self.opcode() {
            OP_COUNT => "COUNT",
            OP_COMPARE => "COMPARE",
            OP_COLLECT => "COLLECT",
            OP_RCHLD => "RCHLD",
            OP_RCOLLECT => "RCOLLECT",
            OP_GET => "GET",
            OP_PUT => "PUT",
            OP_UPDATE => "UPDATE",
            OP_MARK => "MARK",
            OP_LASTMARK => "LASTMARK",
            OP_SUBCAST => "SUBCAST",
            OP_PARAM => "PARAM",
            OP_PUTPARAM => "PUTPARAM",
            OP_TEST => "TEST",
            OP_EXISTS => "EXISTS",
            OP_ABSENT => "ABSENT",
            _ => "CSWAP",
        }
    }

    /// Whether executing it can change the packet's operands (otherwise a router need not
    /// write them back).
    #[inline]
    pub const fn rewrites_operands(&self) -> bool {
        matches!(
            self,
            Instruction::Collect { .. }
                | Instruction::Rchld { .. }
                | Instruction::Rcollect { .. }
                | Instruction::Get { .. }
                | Instruction::Update { .. }
                | Instruction::LastMark { .. }
                | Instruction::Param { .. }
                | Instruction::Cswap { .. }
        )
    }

    /// Whether it fits a piggybacked IPv4 option (see
    /// [`MAX_IPV4_OPTION_OPERANDS`](crate::consts::MAX_IPV4_OPTION_OPERANDS)).
    pub fn fits_ipv4_option(&self) -> bool {
        self.operand_len() <= crate::consts::MAX_IPV4_OPTION_OPERANDS
    }
}
