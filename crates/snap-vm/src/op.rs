//! The instruction set (paper §III, Table I): 97 opcodes in seven classes.
//!
//! Every opcode is described once, in the table inside the `ops!` macro below, which generates
//! [`Op`], its metadata ([`Op::info`]) and the documentation table. `s[i]` is the i-th stack
//! value from the top; `imm` the 25-bit immediate. Branch offsets are relative to the
//! branching instruction and must be positive: every branch goes forward, so each
//! instruction runs at most once. "Alloc" is the most heap words the instruction can
//! allocate (a one-word header plus payload); at most one small value is pushed per
//! instruction. Cost: `const` instructions take constant time; `net` ones (forw, forwto,
//! send, demux) time linear in the packet; `svc` depends on the service (SNAP-safe services
//! are constant-time too).
//!
//! | code | op | imm | pops | pushes | alloc | cost | effect |
//! |---:|---|---|---:|---:|---:|---|---|
#![doc = include_str!("op_table.md")]

/// What an immediate means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imm {
    /// None (must be 0).
    None,
    /// A signed integer.
    Int,
    /// A forward branch offset (> 0).
    Branch,
    /// A count (≥ 0): popi, pull, store, mktup, nth.
    Count,
    /// A heap offset (pushh, calls).
    Heap,
    /// A tag code (istag).
    Tag,
}

/// How many values an instruction pops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pops {
    /// A fixed number.
    N(u8),
    /// As many as the immediate (popi, mktup).
    Imm,
}

/// Most heap words one service call (`calls`) may allocate: the verifier's bound for
/// `calls`, which the VM enforces against every service.
pub const MAX_SERVICE_ALLOC: u32 = 3;

/// How many heap words an instruction can allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// A fixed number of words (header included).
    Words(u8),
    /// The immediate plus one (mktup n: header and n values).
    ImmPlus1,
    /// Whatever the service declares ([`MAX_SERVICE_ALLOC`] at most).
    Service,
}

/// Time an instruction takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Constant.
    Const,
    /// Linear in the packet's length (network operations).
    Net,
    /// Up to the service.
    Svc,
}

/// An opcode's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Assembler mnemonic.
    pub name: &'static str,
    /// Its immediate.
    pub imm: Imm,
    /// Values popped.
    pub pops: Pops,
    /// Values pushed (0 or 1; swap and rot rearrange two or three).
    pub pushes: u8,
    /// Heap words it may allocate.
    pub alloc: Alloc,
    /// Time class.
    pub cost: Cost,
}

macro_rules! ops {
    ($( $code:literal $var:ident $name:literal $imm:ident $pops:expr, $push:literal, $alloc:expr, $cost:ident; )*) => {
        /// A SNAP opcode. See the [module docs](self) for the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Op {
            $(
                #[doc = concat!("`", $name, "`")]
                $var = $code,
            )*
        }

        impl Op {
            /// Every opcode, in code order.
            pub const ALL: &'static [Op] = &[$(Op::$var),*];

            /// The opcode with code `b`, if any.
            pub const fn from_code(b: u8) -> Option<Op> {
                match b {
                    $($code => Some(Op::$var),)*
                    _ => None,
                }
            }

            /// The opcode named `name` in assembly, if any.
            pub fn from_name(name: &str) -> Option<Op> {
                match name {
                    $($name => Some(Op::$var),)*
                    "beq" => Some(Op::Bez),
                    _ => None,
                }
            }

            /// The metadata.
            pub const fn info(self) -> Info {
                match self {
                    $(Op::$var => Info {
                        name: $name,
                        imm: Imm::$imm,
                        pops: $pops,
                        pushes: $push,
                        alloc: $alloc,
                        cost: Cost::$cost,
                    },)*
                }
            }
        }
    };
}

use Alloc::{ImmPlus1, Service, Words};
use Pops::N;

ops! {
    // control flow
    1 Exit "exit" None N(0), 0, Words(0), Const;
    2 Nop "nop" None N(0), 0, Words(0), Const;
    3 Ji "ji" Branch N(0), 0, Words(0), Const;
    4 Bez "bez" Branch N(1), 0, Words(0), Const;
    5 Bne "bne" Branch N(1), 0, Words(0), Const;
    6 Paj "paj" Int N(1), 0, Words(0), Const;
    7 Tpaj "tpaj" Int N(2), 0, Words(0), Const;
    // network control
    8 Forw "forw" None N(0), 0, Words(0), Net;
    9 Forwto "forwto" None N(1), 0, Words(0), Net;
    10 Send "send" None N(4), 1, Words(0), Net;
    11 Demux "demux" None N(2), 0, Words(0), Net;
    // stack manipulation
    12 Push "push" Int N(0), 1, Words(0), Const;
    13 Pushh "pushh" Heap N(0), 1, Words(0), Const;
    14 Pop "pop" None N(1), 0, Words(0), Const;
    15 Popi "popi" Count Pops::Imm, 0, Words(0), Const;
    16 Pull "pull" Count N(0), 1, Words(0), Const;
    17 Store "store" Count N(1), 0, Words(0), Const;
    18 Swap "swap" None N(2), 2, Words(0), Const;
    19 Rot "rot" None N(3), 3, Words(0), Const;
    20 Depth "depth" None N(0), 1, Words(0), Const;
    97 Dup "dup" None N(0), 1, Words(0), Const;
    // environment queries
    21 Getsrc "getsrc" None N(0), 1, Words(2), Const;
    22 Getdst "getdst" None N(0), 1, Words(2), Const;
    23 Getrb "getrb" None N(0), 1, Words(0), Const;
    24 Getep "getep" None N(0), 1, Words(0), Const;
    25 Getport "getport" None N(0), 1, Words(0), Const;
    26 Here "here" None N(0), 1, Words(2), Const;
    27 Ishere "ishere" None N(1), 1, Words(0), Const;
    28 Getifc "getifc" None N(0), 1, Words(0), Const;
    29 Nifc "nifc" None N(0), 1, Words(0), Const;
    30 Getlen "getlen" None N(0), 1, Words(0), Const;
    // integer arithmetic
    31 Add "add" None N(2), 1, Words(0), Const;
    32 Addi "addi" Int N(1), 1, Words(0), Const;
    33 Sub "sub" None N(2), 1, Words(0), Const;
    34 Subi "subi" Int N(1), 1, Words(0), Const;
    35 Mul "mul" None N(2), 1, Words(0), Const;
    36 Muli "muli" Int N(1), 1, Words(0), Const;
    37 Div "div" None N(2), 1, Words(0), Const;
    38 Divi "divi" Int N(1), 1, Words(0), Const;
    39 Mod "mod" None N(2), 1, Words(0), Const;
    40 Modi "modi" Int N(1), 1, Words(0), Const;
    41 Neg "neg" None N(1), 1, Words(0), Const;
    94 Min "min" None N(2), 1, Words(0), Const;
    95 Max "max" None N(2), 1, Words(0), Const;
    96 Abs "abs" None N(1), 1, Words(0), Const;
    // logic
    42 And "and" None N(2), 1, Words(0), Const;
    43 Andi "andi" Int N(1), 1, Words(0), Const;
    44 Or "or" None N(2), 1, Words(0), Const;
    45 Ori "ori" Int N(1), 1, Words(0), Const;
    46 Xor "xor" None N(2), 1, Words(0), Const;
    47 Xori "xori" Int N(1), 1, Words(0), Const;
    48 Not "not" None N(1), 1, Words(0), Const;
    49 Lnot "lnot" None N(1), 1, Words(0), Const;
    // shifts
    50 Lsl "lsl" None N(2), 1, Words(0), Const;
    51 Lsli "lsli" Int N(1), 1, Words(0), Const;
    52 Lsr "lsr" None N(2), 1, Words(0), Const;
    53 Lsri "lsri" Int N(1), 1, Words(0), Const;
    54 Asr "asr" None N(2), 1, Words(0), Const;
    55 Asri "asri" Int N(1), 1, Words(0), Const;
    // comparisons
    56 Eq "eq" None N(2), 1, Words(0), Const;
    57 Eqi "eqi" Int N(1), 1, Words(0), Const;
    58 Neq "neq" None N(2), 1, Words(0), Const;
    59 Neqi "neqi" Int N(1), 1, Words(0), Const;
    60 Lt "lt" None N(2), 1, Words(0), Const;
    61 Lti "lti" Int N(1), 1, Words(0), Const;
    62 Le "le" None N(2), 1, Words(0), Const;
    63 Lei "lei" Int N(1), 1, Words(0), Const;
    64 Gt "gt" None N(2), 1, Words(0), Const;
    65 Gti "gti" Int N(1), 1, Words(0), Const;
    66 Ge "ge" None N(2), 1, Words(0), Const;
    67 Gei "gei" Int N(1), 1, Words(0), Const;
    // floating point
    68 Fadd "fadd" None N(2), 1, Words(2), Const;
    69 Fsub "fsub" None N(2), 1, Words(2), Const;
    70 Fmul "fmul" None N(2), 1, Words(2), Const;
    71 Fdiv "fdiv" None N(2), 1, Words(2), Const;
    72 Flt "flt" None N(2), 1, Words(0), Const;
    73 Feq "feq" None N(2), 1, Words(0), Const;
    74 Itof "itof" None N(1), 1, Words(2), Const;
    75 Ftoi "ftoi" None N(1), 1, Words(0), Const;
    // addresses
    76 Mkaddr "mkaddr" None N(2), 1, Words(2), Const;
    77 Aeq "aeq" None N(2), 1, Words(0), Const;
    78 Snet "snet" None N(2), 1, Words(2), Const;
    79 Insnet "insnet" None N(3), 1, Words(0), Const;
    // wide integers
    80 Towide "towide" None N(1), 1, Words(3), Const;
    81 Wadd "wadd" None N(2), 1, Words(3), Const;
    82 Wsub "wsub" None N(2), 1, Words(3), Const;
    83 Wmul "wmul" None N(2), 1, Words(3), Const;
    84 Wlt "wlt" None N(2), 1, Words(0), Const;
    85 Weq "weq" None N(2), 1, Words(0), Const;
    86 Narrow "narrow" None N(1), 1, Words(0), Const;
    // tuples and byte arrays
    87 Mktup "mktup" Count Pops::Imm, 1, ImmPlus1, Const;
    88 Nth "nth" Count N(1), 1, Words(0), Const;
    89 Length "length" None N(1), 1, Words(0), Const;
    90 Bget "bget" None N(2), 1, Words(0), Const;
    91 Istag "istag" Tag N(1), 1, Words(0), Const;
    92 Gettag "gettag" None N(1), 1, Words(0), Const;
    // service access
    93 Calls "calls" Heap N(0), 1, Service, Svc;
}

impl Op {
    /// Whether it sends or delivers (counted against the node's limit).
    pub const fn is_network(self) -> bool {
        matches!(self, Op::Forw | Op::Forwto | Op::Send | Op::Demux)
    }

    /// Most heap words it can allocate with immediate `imm` in an IPv4 packet (the table's
    /// figure).
    pub const fn alloc_words(self, imm: u32) -> u32 {
        match self.info().alloc {
            Words(n) => n as u32,
            ImmPlus1 => imm + 1,
            Service => MAX_SERVICE_ALLOC,
        }
    }

    /// Most heap words it can allocate with immediate `imm` in a packet whose addresses
    /// are IPv6 (`ipv6`) or IPv4: the instructions that box an address of the packet's
    /// family (`getsrc`, `getdst`, `here`, `snet`) box four payload words instead of one
    /// in IPv6. Still a constant per instruction, so the paper's linear bound holds.
    pub const fn alloc_words_in(self, imm: u32, ipv6: bool) -> u32 {
        match self {
            Op::Getsrc | Op::Getdst | Op::Here | Op::Snet if ipv6 => 1 + crate::value::ADDR6_WORDS,
            _ => self.alloc_words(imm),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_round_trip() {
        assert_eq!(Op::ALL.len(), 97);
        for &op in Op::ALL {
            assert_eq!(Op::from_code(op as u8), Some(op));
            assert_eq!(Op::from_name(op.info().name), Some(op));
            assert!(op.info().pushes <= 3);
        }
        let mut codes: std::vec::Vec<u8> = Op::ALL.iter().map(|&o| o as u8).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), 97);
        assert_eq!(Op::from_code(0), None);
        assert_eq!(Op::from_name("beq"), Some(Op::Bez));
    }

    #[test]
    fn the_doc_table_lists_every_opcode() {
        let table = include_str!("op_table.md");
        for &op in Op::ALL {
            let row = std::format!("| {} | `{}` |", op as u8, op.info().name);
            assert!(table.contains(&row), "missing row for {}", op.info().name);
        }
    }
}
