//! The arguments of `waist esp send`: the subcommand, its options, the built-in
//! instructions as subcommands, and their parsers.

use clap::{Args, Subcommand, ValueEnum};
use esp_proto::instr::{CombineOp, CompareOp, INSTALLED, Instruction};
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use std::net::IpAddr;
use std::path::PathBuf;

use super::super::{DEFAULT_SRC, Via};

/// `waist esp …`.
#[derive(Debug, Subcommand)]
pub enum EspCommand {
    /// Send one ESP query through a router and print the answer.
    ///
    /// The instruction is a subcommand (a built-in), or SNAP microcode: `--microcode
    /// FILE.snap` or `--plan FILE.plan` (inline) or `--opcode N` (installed at the
    /// routers), with `--operand`s.
    ///
    /// Exit code 0 on an answer (or once sent, with --no-reflect), 1 if the computation
    /// aborted in the network, 2 if no answer came in time.
    Send(SendArgs),
}

/// `waist esp send` options.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// The link to the router: `udp:LOCAL=PEER` binds LOCAL (the router's link `peer`)
    /// and sends to PEER (the router's link `local`); `raw` uses the kernel's raw IPv4
    /// sockets (a host behind a TUN device; root). Default: the `WAIST_VIA` environment
    /// variable (a containerlab export's hosts set it).
    #[arg(long, env = "WAIST_VIA")]
    pub via: Via,
    /// Our IP address, the query's source (the router must route it back to us). Default:
    /// the `WAIST_SRC` environment variable, else 10.1.0.1.
    #[arg(long, env = "WAIST_SRC", default_value_t = IpAddr::V4(DEFAULT_SRC))]
    pub src: IpAddr,
    /// The query's destination: a router (it reflects the query) or a host behind one.
    #[arg(long)]
    pub dst: IpAddr,
    /// The computation ID.
    #[arg(long, default_value_t = 1)]
    pub cid: u32,
    /// Where routers run the instruction: a comma-separated subset of input, central,
    /// output (or `none`).
    #[arg(long, default_value = "input,central,output", value_parser = parse_loc)]
    pub loc: Loc,
    /// Set RB (the default): the destination reflects the query and the routers run it on
    /// the way back, so the answer comes back here.
    #[arg(long, overrides_with = "no_reflect")]
    pub reflect: bool,
    /// Clear RB: the routers run the query on the way out; nothing is awaited.
    #[arg(long, overrides_with = "reflect")]
    pub no_reflect: bool,
    /// Piggyback the instruction in an IPv4 option (IPv6 hop-by-hop option) of a small UDP
    /// datagram instead of a dedicated ESP packet.
    #[arg(long)]
    pub option: bool,
    /// How long to wait for the answer, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Print one JSON object per answer instead of a line of text.
    #[arg(long)]
    pub json: bool,
    /// Microcode instead of a built-in instruction.
    #[command(flatten)]
    pub micro: MicroArgs,
    /// The instruction (or give --microcode, --plan or --opcode).
    #[command(subcommand)]
    pub instr: Option<InstrArgs>,
}

/// The instruction to send, with its operands. Tags and values take decimal or 0x hex.
#[derive(Clone, Copy, Debug, Subcommand)]
pub enum InstrArgs {
    /// COUNT: count packets under TAG; pass while the count ≤ THRESH.
    Count {
        /// The counter's tag C.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
        /// Forwarding threshold.
        #[arg(long, value_parser = parse_u64)]
        thresh: u64,
    },
    /// COMPARE: pass and store VALUE when nothing is stored under TAG or `stored OP VALUE`.
    Compare {
        /// The stored value's tag V.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
        /// The packet's value.
        #[arg(long, value_parser = parse_u64)]
        value: u64,
        /// The relation.
        #[arg(long, value_enum)]
        op: CmpOp,
    },
    /// COLLECT: fold VALUE into TAG's value, count down COUNTER (set up by COUNT); pass the
    /// result on when it reaches 0. Aborts where COUNTER is not bound.
    Collect {
        /// The running result's tag V.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
        /// The packet's value.
        #[arg(long, value_parser = parse_u64)]
        value: u64,
        /// The child count's tag C.
        #[arg(long, value_parser = parse_u64)]
        counter: u64,
        /// The operator.
        #[arg(long, value_enum)]
        op: CombOp,
    },
    /// MARK: bind each router's id to TAG.
    Mark {
        /// The tag.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
    },
    /// LASTMARK: return the id of the last router passed where TAG is bound.
    Lastmark {
        /// The tag MARK bound.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
    },
    /// GET: return the value under TAG (aborts where it is not bound).
    Get {
        /// The tag.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
    },
    /// PUT: bind VALUE to TAG.
    Put {
        /// The tag.
        #[arg(long, value_parser = parse_u64)]
        tag: u64,
        /// The value.
        #[arg(long, value_parser = parse_u64)]
        value: u64,
    },
}

/// COMPARE's relation (`stored OP value`).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CmpOp {
    /// <
    Lt,
    /// ≤
    Le,
    /// =
    Eq,
    /// ≥
    Ge,
    /// >
    Gt,
    /// ≠
    Ne,
}

/// COLLECT's operator.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CombOp {
    /// Wrapping sum.
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

impl From<CmpOp> for CompareOp {
    fn from(o: CmpOp) -> CompareOp {
        match o {
            CmpOp::Lt => CompareOp::Lt,
            CmpOp::Le => CompareOp::Le,
            CmpOp::Eq => CompareOp::Eq,
            CmpOp::Ge => CompareOp::Ge,
            CmpOp::Gt => CompareOp::Gt,
            CmpOp::Ne => CompareOp::Ne,
        }
    }
}

impl From<CombOp> for CombineOp {
    fn from(o: CombOp) -> CombineOp {
        match o {
            CombOp::Add => CombineOp::Add,
            CombOp::Min => CombineOp::Min,
            CombOp::Max => CombineOp::Max,
            CombOp::And => CombineOp::And,
            CombOp::Or => CombineOp::Or,
            CombOp::Xor => CombineOp::Xor,
        }
    }
}

impl From<InstrArgs> for Instruction {
    fn from(a: InstrArgs) -> Instruction {
        match a {
            InstrArgs::Count { tag, thresh } => Instruction::Count {
                counter: Tag(tag),
                thresh,
            },
            InstrArgs::Compare { tag, value, op } => Instruction::Compare {
                value: Tag(tag),
                current: Value(value),
                op: op.into(),
            },
            InstrArgs::Collect {
                tag,
                value,
                counter,
                op,
            } => Instruction::Collect {
                value: Tag(tag),
                val: Value(value),
                counter: Tag(counter),
                op: op.into(),
            },
            InstrArgs::Mark { tag } => Instruction::Mark { tag: Tag(tag) },
            InstrArgs::Lastmark { tag } => Instruction::LastMark {
                tag: Tag(tag),
                node: Value(0),
            },
            InstrArgs::Get { tag } => Instruction::Get {
                tag: Tag(tag),
                value: Value(0),
            },
            InstrArgs::Put { tag, value } => Instruction::Put {
                tag: Tag(tag),
                value: Value(value),
            },
        }
    }
}

/// A number in decimal or `0x` hex.
pub(super) fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("`{s}`: {e}"))
}

/// `input,central,output` (any subset, any order) or `none`.
pub(super) fn parse_loc(s: &str) -> Result<Loc, String> {
    let mut loc = Loc::NONE;
    for part in s.split(',').map(str::trim) {
        loc = loc
            | match part {
                "input" => Loc::INPUT,
                "central" => Loc::CENTRAL,
                "output" => Loc::OUTPUT,
                "all" => Loc::ALL,
                "none" => Loc::NONE,
                other => return Err(format!("`{other}`: not input, central, output or none")),
            };
    }
    Ok(loc)
}

/// The microcode options of `waist esp send` (instead of an instruction subcommand).
#[derive(Clone, Debug, Default, Args)]
pub struct MicroArgs {
    /// Inline microcode: run this SNAP assembly file as the instruction (opcode 32; the
    /// program rides in the packet, so it must fit ESP's 255-byte operand field beside
    /// its operands). Instead of an instruction subcommand.
    #[arg(long, value_name = "FILE.snap", conflicts_with_all = ["opcode", "plan"])]
    pub microcode: Option<PathBuf>,
    /// Inline microcode written in PLAN: compile this file's last function (its `word`
    /// parameters are the operands, its int or bool result the verdict) and send it as
    /// --microcode does. Instead of an instruction subcommand.
    #[arg(long, value_name = "FILE.plan", conflicts_with = "opcode")]
    pub plan: Option<PathBuf>,
    /// An instruction the routers' operator installed under opcode N (64–127): the packet
    /// carries only its operands. Instead of an instruction subcommand.
    #[arg(long, value_name = "N", value_parser = parse_opcode)]
    pub opcode: Option<u8>,
    /// An operand of the microcode (repeat, operand 0 first; at most 8): a 64-bit tag or
    /// value, decimal or 0x hex.
    #[arg(long = "operand", value_name = "VALUE", value_parser = parse_u64)]
    pub operands: Vec<u64>,
}

/// An opcode an operator may install under (64–127).
pub(super) fn parse_opcode(s: &str) -> Result<u8, String> {
    let n = parse_u64(s)?;
    u8::try_from(n)
        .ok()
        .filter(|o| INSTALLED.contains(o))
        .ok_or_else(|| {
            format!(
                "`{s}`: installed instructions take opcodes {}..={}",
                INSTALLED.start(),
                INSTALLED.end()
            )
        })
}

impl MicroArgs {
    /// Whether any microcode option was given.
    pub fn given(&self) -> bool {
        self.microcode.is_some()
            || self.plan.is_some()
            || self.opcode.is_some()
            || !self.operands.is_empty()
    }
}
