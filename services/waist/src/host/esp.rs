//! `waist esp send`: one ESP query through a router, the answer printed.
//!
//! The query is built by `esp_proto::endpoint::Endpoint` (a dedicated packet, protocol 253,
//! or `--option`: piggybacked in the IPv4 option / IPv6 hop-by-hop option of a small UDP
//! datagram made by `waist_ip::udp`), with RB set unless `--no-reflect`: it crosses the
//! routers untouched, its destination reflects it (a router addressed directly, or an end
//! host's ESP layer), and the routers run it on the way back (ESP §2.5). The answer is
//! read by the same endpoint; an abort is reported precisely (instruction and code).
//!
//! The instruction is a built-in (a subcommand) or SNAP microcode ([`micro`]: `--microcode
//! FILE.snap` or `--plan FILE.plan` inline, `--opcode N` installed at the routers, each
//! with `--operand`s); a microcode answer reports the operands the routers returned.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use esp_proto::endpoint::{Endpoint, EndpointError, Received};
use esp_proto::instr::{CombineOp, CompareOp, Instruction};
use esp_proto::wire::Loc;
use ess::{Tag, Value};
use tokio::time::Instant;

use super::link::{HostLink, buffer};
use super::{DEFAULT_SRC, EXIT_ABORT, EXIT_ANSWER, EXIT_TIMEOUT, Via};

pub mod micro;

pub use micro::{MicroAnswer, MicroArgs, MicroQuery};

/// UDP ports of the datagram a piggybacked query rides on (discard, both ways).
const PIGGYBACK_PORT: u16 = 9;
/// The datagram's data.
const PIGGYBACK_DATA: &[u8] = b"waist esp";

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
fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("`{s}`: {e}"))
}

/// `input,central,output` (any subset, any order) or `none`.
fn parse_loc(s: &str) -> Result<Loc, String> {
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

/// The instruction a query carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryInstr {
    /// A built-in instruction.
    Builtin(Instruction),
    /// Microcode, inline or installed.
    Micro(MicroQuery),
}

impl From<Instruction> for QueryInstr {
    fn from(i: Instruction) -> QueryInstr {
        QueryInstr::Builtin(i)
    }
}

impl From<MicroQuery> for QueryInstr {
    fn from(m: MicroQuery) -> QueryInstr {
        QueryInstr::Micro(m)
    }
}

impl std::fmt::Display for QueryInstr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryInstr::Builtin(i) => write!(f, "{i}"),
            QueryInstr::Micro(m) => write!(f, "{m}"),
        }
    }
}

/// One query, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Our address.
    pub src: IpAddr,
    /// The destination.
    pub dst: IpAddr,
    /// The computation ID.
    pub cid: u32,
    /// Where routers run it.
    pub loc: Loc,
    /// RB: reflected back to us.
    pub reflect: bool,
    /// Piggybacked on a UDP datagram rather than a dedicated packet.
    pub option: bool,
    /// The instruction.
    pub instr: QueryInstr,
    /// How long to wait for the answer.
    pub timeout: Duration,
}

impl Query {
    /// A reflected, dedicated query of `instr` (a built-in [`Instruction`] or a
    /// [`MicroQuery`]) from `src` to `dst` (CID 1, Loc all, 2 s).
    pub fn new(src: IpAddr, dst: IpAddr, instr: impl Into<QueryInstr>) -> Query {
        Query {
            src,
            dst,
            cid: 1,
            loc: Loc::ALL,
            reflect: true,
            option: false,
            instr: instr.into(),
            timeout: Duration::from_secs(2),
        }
    }

    /// The query the options describe.
    ///
    /// # Errors
    ///
    /// If there is no instruction or more than one (a subcommand and microcode), or the
    /// microcode cannot be read, verified or carried ([`MicroArgs::query`]).
    pub fn from_args(a: &SendArgs) -> anyhow::Result<Query> {
        let instr = match (a.instr, a.micro.query()?) {
            (Some(i), None) if !a.micro.given() => QueryInstr::Builtin(i.into()),
            (None, Some(m)) => QueryInstr::Micro(m),
            (Some(_), _) => {
                return Err(anyhow!(
                    "give either an instruction subcommand or --microcode/--plan/--opcode, not both"
                ));
            }
            (None, None) => {
                return Err(anyhow!(
                    "no instruction: give a subcommand (count, compare, collect, mark, \
                     lastmark, get, put), --microcode FILE.snap, --plan FILE.plan or --opcode N"
                ));
            }
        };
        Ok(Query {
            src: a.src,
            dst: a.dst,
            cid: a.cid,
            loc: a.loc,
            reflect: !a.no_reflect,
            option: a.option,
            instr,
            timeout: Duration::from_millis(a.timeout_ms),
        })
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::new(self.cid, self.src)
            .with_loc(self.loc)
            .with_reflect(self.reflect)
    }

    /// The packet to send.
    ///
    /// # Errors
    ///
    /// If the endpoint cannot build it (mixed address families, an instruction too large
    /// for the IPv4 option space).
    pub fn packet(&self) -> Result<Vec<u8>, EndpointError> {
        let ep = self.endpoint();
        if !self.option {
            return match &self.instr {
                QueryInstr::Builtin(i) => ep.packet_to(self.dst, i, &[]),
                QueryInstr::Micro(m) => m.instr.packet_to(&ep, self.dst, &[]),
            };
        }
        let mut udp = vec![0u8; 40 + 8 + PIGGYBACK_DATA.len()];
        let n = waist_ip::udp::emit_datagram(
            self.src,
            self.dst,
            64,
            PIGGYBACK_PORT,
            PIGGYBACK_PORT,
            PIGGYBACK_DATA,
            &mut udp,
        )
        .map_err(|_| EndpointError::AddressFamily)?;
        udp.truncate(n);
        match &self.instr {
            QueryInstr::Builtin(i) => ep.piggyback(&udp, i),
            QueryInstr::Micro(m) => Ok(esp_proto::wire::piggyback(
                &udp,
                &m.instr.instruction(&ep)?,
            )?),
        }
    }

    /// The IP protocol the answer arrives with (for a raw link).
    pub fn answer_protocol(&self) -> u8 {
        if self.option {
            waist_ip::udp::PROTOCOL_UDP
        } else {
            esp_proto::consts::IP_PROTOCOL
        }
    }
}

/// What came of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Sent without RB: nothing to wait for.
    Sent,
    /// The answer, no router aborted.
    Answer(Received),
    /// The answer, with Err set: the computation aborted on the way.
    Abort(Received),
    /// The answer to microcode (an abort if its `err` is set).
    Micro(MicroAnswer),
    /// Nothing of ours came back in time.
    Timeout,
}

impl Outcome {
    /// The process exit code: 0 answer (or sent), 1 abort, 2 timeout.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Sent | Outcome::Answer(_) => EXIT_ANSWER,
            Outcome::Abort(_) => EXIT_ABORT,
            Outcome::Micro(a) if a.err.is_some() => EXIT_ABORT,
            Outcome::Micro(_) => EXIT_ANSWER,
            Outcome::Timeout => EXIT_TIMEOUT,
        }
    }
}

/// Sends `q` on `link` and, if it is reflected, waits for its answer. Packets that are not
/// ESP answers of this computation are skipped.
///
/// # Errors
///
/// If the packet cannot be built or the link fails.
pub async fn send(link: &mut HostLink, q: &Query) -> anyhow::Result<Outcome> {
    let packet = q.packet().map_err(|e| anyhow!("building the query: {e}"))?;
    link.send(&packet).await?;
    if !q.reflect {
        return Ok(Outcome::Sent);
    }
    let ep = q.endpoint();
    let deadline = Instant::now() + q.timeout;
    let mut buf = buffer();
    while let Some(r) = link.recv_until(&mut buf, deadline).await? {
        let Some(packet) = buf.get(r) else {
            continue;
        };
        if let QueryInstr::Micro(m) = &q.instr {
            let opcode = m.instr.opcode();
            match ep
                .receive_raw(packet)
                .ok()
                .and_then(|g| MicroAnswer::read(opcode, g))
            {
                Some(a) => return Ok(Outcome::Micro(a)),
                None => continue,
            }
        }
        let Ok(got) = ep.receive(packet) else {
            continue;
        };
        return Ok(match got.err {
            Some(_) => Outcome::Abort(got),
            None => Outcome::Answer(got),
        });
    }
    Ok(Outcome::Timeout)
}

/// The id LASTMARK returned, as the router's address (node ids are IPv4 addresses by
/// convention); `None` if no marked router was passed.
pub fn last_mark(instr: &Instruction) -> Option<Ipv4Addr> {
    match instr {
        Instruction::LastMark { node, .. } if node.0 != 0 => {
            u32::try_from(node.0).ok().map(Ipv4Addr::from)
        }
        _ => None,
    }
}

/// Prints `o` for query `q`: one line of text, or one JSON object.
///
/// # Errors
///
/// If writing fails.
pub fn report(q: &Query, o: &Outcome, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    if json {
        let v = match o {
            Outcome::Sent => serde_json::json!({
                "status": "sent", "dst": q.dst.to_string(), "instruction": q.instr.to_string(),
            }),
            Outcome::Timeout => {
                let mut v = serde_json::json!({
                    "status": "timeout", "dst": q.dst.to_string(),
                    "timeout_ms": q.timeout.as_millis() as u64,
                });
                if matches!(q.instr, QueryInstr::Micro(_)) {
                    v["verdict"] = "dropped".into();
                }
                v
            }
            Outcome::Micro(a) => serde_json::json!({
                "status": if a.err.is_some() { "abort" } else { "answer" },
                "verdict": if a.err.is_some() { "aborted" } else { "delivered" },
                "from": a.from.to_string(),
                "instruction": micro_label(q),
                "opcode": a.opcode,
                "operands": a.operands,
                "loc": a.loc.to_string(),
                "error": a.err.map(|c| c.to_string()),
            }),
            Outcome::Answer(r) | Outcome::Abort(r) => {
                let mut v = serde_json::json!({
                    "status": if r.err.is_some() { "abort" } else { "answer" },
                    "from": r.from.to_string(),
                    "instruction": r.instr.to_string(),
                    "opcode": r.instr.opcode(),
                    "loc": r.loc.to_string(),
                });
                if let Some(code) = r.err {
                    v["error"] = code.to_string().into();
                }
                if matches!(r.instr, Instruction::LastMark { .. }) {
                    v["last_mark"] = last_mark(&r.instr).map(|a| a.to_string()).into();
                }
                v
            }
        };
        writeln!(out, "{v}").context("writing the report")?;
        return Ok(());
    }
    match o {
        Outcome::Sent => writeln!(out, "sent {} to {} (no reflection)", q.instr, q.dst)?,
        Outcome::Timeout => {
            write!(
                out,
                "no answer from {} within {} ms",
                q.dst,
                q.timeout.as_millis()
            )?;
            if matches!(q.instr, QueryInstr::Micro(_)) {
                write!(out, ": dropped (or lost)")?;
            }
            writeln!(out)?;
        }
        Outcome::Micro(a) => {
            let name = micro_label(q);
            match a.err {
                None => writeln!(
                    out,
                    "answer from {}: {name} delivered operands={:?} loc={}",
                    a.from, a.operands, a.loc
                )?,
                Some(code) => writeln!(
                    out,
                    "abort from {}: {name} operands={:?} error={code}",
                    a.from, a.operands
                )?,
            }
        }
        Outcome::Answer(r) => {
            write!(out, "answer from {}: {} loc={}", r.from, r.instr, r.loc)?;
            if matches!(r.instr, Instruction::LastMark { .. }) {
                match last_mark(&r.instr) {
                    Some(a) => write!(out, " last-mark={a}")?,
                    None => write!(out, " last-mark=none")?,
                }
            }
            writeln!(out)?;
        }
        Outcome::Abort(r) => {
            let code = r.err.unwrap_or(esp_proto::wire::ErrCode::None);
            let why = r.error().map(|e| e.to_string()).unwrap_or_default();
            writeln!(
                out,
                "abort from {}: {} error={code} ({why})",
                r.from, r.instr
            )?;
        }
    }
    Ok(())
}

/// What a microcode query's report calls it (without the operands sent: the answer
/// prints those returned).
fn micro_label(q: &Query) -> String {
    match &q.instr {
        QueryInstr::Micro(m) => m.label(),
        QueryInstr::Builtin(i) => i.to_string(),
    }
}

/// `waist esp send`: opens the link, sends, prints; returns the exit code.
///
/// # Errors
///
/// If the link cannot be opened, the query built or the report written.
pub fn run(command: EspCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    let EspCommand::Send(args) = command;
    let q = Query::from_args(&args)?;
    let o = super::block_on(async {
        let mut link = HostLink::open(args.via, q.answer_protocol()).await?;
        send(&mut link, &q).await
    })?;
    report(&q, &o, args.json, out)?;
    Ok(o.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_parse() {
        assert_eq!(parse_u64("0x1F"), Ok(31));
        assert_eq!(parse_u64("31"), Ok(31));
        assert!(parse_u64("x").is_err());
        assert_eq!(parse_loc("central"), Ok(Loc::CENTRAL));
        assert_eq!(parse_loc("output,input"), Ok(Loc::INPUT | Loc::OUTPUT));
        assert_eq!(parse_loc("none"), Ok(Loc::NONE));
        assert!(parse_loc("middle").is_err());
    }

    #[test]
    fn reflect_is_on_unless_turned_off_last_flag_wins() {
        use clap::Parser;
        let q = |extra: &[&str]| {
            let mut args = vec!["waist", "esp", "send", "--via", "raw", "--dst", "10.0.0.2"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["mark", "--tag", "0x10"]);
            match crate::Cli::try_parse_from(args).map(|c| c.command) {
                Ok(crate::Command::Esp {
                    command: EspCommand::Send(a),
                }) => Query::from_args(&a).ok(),
                _ => None,
            }
        };
        let base = q(&[]).map(|q| (q.reflect, q.instr, q.src));
        assert_eq!(
            base,
            Some((
                true,
                QueryInstr::Builtin(Instruction::Mark { tag: Tag(16) }),
                IpAddr::V4(DEFAULT_SRC)
            ))
        );
        assert_eq!(q(&["--no-reflect"]).map(|q| q.reflect), Some(false));
        assert_eq!(
            q(&["--no-reflect", "--reflect"]).map(|q| q.reflect),
            Some(true)
        );
        assert_eq!(
            q(&["--loc", "central", "--cid", "9"]).map(|q| (q.loc, q.cid)),
            Some((Loc::CENTRAL, 9))
        );
    }

    #[test]
    fn option_queries_ride_on_udp_and_parse_back() {
        let mut q = Query::new(
            Ipv4Addr::new(10, 1, 0, 1).into(),
            Ipv4Addr::new(10, 0, 0, 2).into(),
            Instruction::Mark { tag: Tag(3) },
        );
        q.option = true;
        let p = q.packet().unwrap_or_default();
        assert_eq!(p.get(9), Some(&17));
        let got = q.endpoint().receive(&p);
        assert_eq!(
            got.map(|r| QueryInstr::Builtin(r.instr)),
            Ok(q.instr.clone())
        );
        assert_eq!(q.answer_protocol(), 17);
    }

    const COUNT_SNAP: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esp-microcode/count.snap"
    );

    /// `waist esp send --via raw --dst 10.0.0.2 ARGS…` parsed, and the query built.
    fn micro_query(extra: &[&str]) -> Result<Query, String> {
        use clap::Parser;
        let mut args = vec!["waist", "esp", "send", "--via", "raw", "--dst", "10.0.0.2"];
        args.extend_from_slice(extra);
        match crate::Cli::try_parse_from(args)
            .map_err(|e| e.to_string())?
            .command
        {
            crate::Command::Esp {
                command: EspCommand::Send(a),
            } => Query::from_args(&a).map_err(|e| e.to_string()),
            _ => Err(String::from("not esp send")),
        }
    }

    #[test]
    fn microcode_file_and_operands_build_an_inline_packet() {
        let q = micro_query(&[
            "--microcode",
            COUNT_SNAP,
            "--operand",
            "7",
            "--operand",
            "0x10",
        ]);
        let q = q.unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(COUNT_SNAP).unwrap_or_default();
        let want = esp_micro::endpoint::MicroInstruction::inline_assembly(&text, &[7, 16]);
        assert_eq!(
            q.instr,
            QueryInstr::Micro(MicroQuery {
                name: "count.snap".into(),
                instr: want.unwrap_or_else(|e| panic!("{e}")),
            })
        );
        // The packet: opcode 32, the body (program, then the operands) in the field.
        let p = q.packet().unwrap_or_default();
        let got = q
            .endpoint()
            .receive_raw(&p)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((got.opcode, got.operands.len()), (32, 87));
        assert_eq!(got.operands.get(71..79), Some(&7u64.to_be_bytes()[..]));
        assert_eq!(got.operands.get(79..), Some(&16u64.to_be_bytes()[..]));
        assert!(q.reflect);
    }

    const COUNT_PLAN: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/esp-microcode/count.plan"
    );

    #[test]
    fn plan_file_and_operands_build_an_inline_packet() {
        let q = micro_query(&["--plan", COUNT_PLAN, "--operand", "7", "--operand", "2"]);
        let q = q.unwrap_or_else(|e| panic!("{e}"));
        let p = q.packet().unwrap_or_default();
        let got = q
            .endpoint()
            .receive_raw(&p)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.opcode, 32);
        let body = esp_micro::body::Body::parse(&got.operands).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(body.operand_words().collect::<Vec<_>>(), [7, 2]);
        // The program is the compiled PLAN, verified as a router verifies it.
        assert!(esp_micro::Microcode::new(&body.to_program()).is_ok());
    }

    #[test]
    fn opcode_and_operands_build_an_installed_packet() {
        let q = micro_query(&[
            "--opcode",
            "64",
            "--operand",
            "5",
            "--operand",
            "10",
            "--loc",
            "central",
        ]);
        let q = q.unwrap_or_else(|e| panic!("{e}"));
        let p = q.packet().unwrap_or_default();
        let mut field = 5u64.to_be_bytes().to_vec();
        field.extend_from_slice(&10u64.to_be_bytes());
        // IPv4 (20) + the ESP header: version 1 and Loc central, RB, opcode 64, 16 operand bytes, CID 1; then the field.
        assert_eq!(p.get(20..28), Some(&[0x12u8, 0x80, 64, 16, 0, 0, 0, 1][..]));
        assert_eq!(p.get(28..), Some(&field[..]));
        // Piggybacked: an installed instruction fits the IPv4 option space.
        let mut q = q;
        q.option = true;
        let p = q.packet().unwrap_or_default();
        assert_eq!(q.endpoint().receive_raw(&p).map(|r| r.operands), Ok(field));
    }

    #[test]
    fn instructions_must_be_exactly_one() {
        let both = micro_query(&["--opcode", "64", "mark", "--tag", "1"]);
        assert!(both.is_err_and(|e| e.contains("not both")));
        let none = micro_query(&[]);
        assert!(none.is_err_and(|e| e.contains("no instruction")));
        let stray = micro_query(&["--operand", "1", "mark", "--tag", "1"]);
        assert!(stray.is_err_and(|e| e.contains("--operand goes with")));
        assert!(micro_query(&["--opcode", "32"]).is_err());
        assert!(micro_query(&["--opcode", "64", "--microcode", COUNT_SNAP]).is_err());
        assert!(micro_query(&["--plan", COUNT_PLAN, "--microcode", COUNT_SNAP]).is_err());
        assert!(micro_query(&["--plan", COUNT_PLAN, "--opcode", "64"]).is_err());
        let nine = ["--operand", "1"].repeat(9);
        assert!(micro_query(&[&["--opcode", "64"][..], &nine].concat()).is_err());
        let missing = micro_query(&["--microcode", "/nonexistent/x.snap"]);
        assert!(missing.is_err_and(|e| e.contains("reading /nonexistent/x.snap")));
    }

    #[test]
    fn microcode_answers_report_the_returned_operands() {
        let q = micro_query(&[
            "--microcode",
            COUNT_SNAP,
            "--operand",
            "7",
            "--operand",
            "1",
        ]);
        let q = q.unwrap_or_else(|e| panic!("{e}"));
        let text = |o: &Outcome, json| {
            let mut out = Vec::new();
            report(&q, o, json, &mut out).map(|()| String::from_utf8_lossy(&out).into_owned())
        };
        let answer = Outcome::Micro(MicroAnswer {
            from: Ipv4Addr::new(10, 0, 0, 2).into(),
            opcode: 32,
            operands: vec![7, 9],
            loc: Loc::ALL,
            err: None,
        });
        assert_eq!(answer.exit_code(), EXIT_ANSWER);
        assert_eq!(
            text(&answer, false).ok().as_deref(),
            Some(
                "answer from 10.0.0.2: count.snap (inline microcode, opcode 32) delivered \
                 operands=[7, 9] loc=input,central,output\n"
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&text(&answer, true).unwrap_or_default()).unwrap_or_default();
        assert_eq!(json["operands"], serde_json::json!([7, 9]));
        assert_eq!(
            (&json["status"], &json["verdict"]),
            (&"answer".into(), &"delivered".into())
        );
        assert_eq!(json["opcode"], 32);
        let abort = Outcome::Micro(MicroAnswer {
            err: Some(esp_proto::wire::ErrCode::Malformed),
            loc: Loc::NONE,
            ..match answer {
                Outcome::Micro(a) => a,
                _ => unreachable!(),
            }
        });
        assert_eq!(abort.exit_code(), EXIT_ABORT);
        assert_eq!(
            text(&abort, false).ok().as_deref(),
            Some(
                "abort from 10.0.0.2: count.snap (inline microcode, opcode 32) \
                 operands=[7, 9] error=malformed\n"
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&text(&abort, true).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            (&json["status"], &json["error"]),
            (&"abort".into(), &"malformed".into())
        );
        assert_eq!(
            text(&Outcome::Timeout, false).ok().as_deref(),
            Some("no answer from 10.0.0.2 within 2000 ms: dropped (or lost)\n")
        );
        assert_eq!(Outcome::Timeout.exit_code(), EXIT_TIMEOUT);
    }
}
