//! `waist esp send`: one ESP query through a router, the answer printed.
//!
//! The query is built by `esp_proto::endpoint::Endpoint` (a dedicated packet, protocol 253,
//! or `--option`: piggybacked in the IPv4 option / IPv6 hop-by-hop option of a small UDP
//! datagram made by `waist_ip::udp`), with RB set unless `--no-reflect`: it crosses the
//! routers untouched, its destination reflects it (a router addressed directly, or an end
//! host's ESP layer), and the routers run it on the way back (ESP §2.5). The answer is
//! read by the same endpoint; an abort is reported precisely (instruction and code).

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

/// UDP ports of the datagram a piggybacked query rides on (discard, both ways).
const PIGGYBACK_PORT: u16 = 9;
/// The datagram's data.
const PIGGYBACK_DATA: &[u8] = b"waist esp";

/// `waist esp …`.
#[derive(Debug, Subcommand)]
pub enum EspCommand {
    /// Send one ESP query through a router and print the answer.
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
    /// The instruction.
    #[command(subcommand)]
    pub instr: InstrArgs,
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

/// One query, ready to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    pub instr: Instruction,
    /// How long to wait for the answer.
    pub timeout: Duration,
}

impl Query {
    /// A reflected, dedicated query of `instr` from `src` to `dst` (CID 1, Loc all, 2 s).
    pub fn new(src: IpAddr, dst: IpAddr, instr: Instruction) -> Query {
        Query {
            src,
            dst,
            cid: 1,
            loc: Loc::ALL,
            reflect: true,
            option: false,
            instr,
            timeout: Duration::from_secs(2),
        }
    }

    /// The query the options describe.
    pub fn from_args(a: &SendArgs) -> Query {
        Query {
            src: a.src,
            dst: a.dst,
            cid: a.cid,
            loc: a.loc,
            reflect: !a.no_reflect,
            option: a.option,
            instr: a.instr.into(),
            timeout: Duration::from_millis(a.timeout_ms),
        }
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
            return ep.packet_to(self.dst, &self.instr, &[]);
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
        ep.piggyback(&udp, &self.instr)
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Sent without RB: nothing to wait for.
    Sent,
    /// The answer, no router aborted.
    Answer(Received),
    /// The answer, with Err set: the computation aborted on the way.
    Abort(Received),
    /// Nothing of ours came back in time.
    Timeout,
}

impl Outcome {
    /// The process exit code: 0 answer (or sent), 1 abort, 2 timeout.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Sent | Outcome::Answer(_) => EXIT_ANSWER,
            Outcome::Abort(_) => EXIT_ABORT,
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
        let Some(Ok(got)) = buf.get(r).map(|p| ep.receive(p)) else {
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
            Outcome::Timeout => serde_json::json!({
                "status": "timeout", "dst": q.dst.to_string(),
                "timeout_ms": q.timeout.as_millis() as u64,
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
        Outcome::Timeout => writeln!(
            out,
            "no answer from {} within {} ms",
            q.dst,
            q.timeout.as_millis()
        )?,
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

/// `waist esp send`: opens the link, sends, prints; returns the exit code.
///
/// # Errors
///
/// If the link cannot be opened, the query built or the report written.
pub fn run(command: EspCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    let EspCommand::Send(args) = command;
    let q = Query::from_args(&args);
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
                }) => Some(Query::from_args(&a)),
                _ => None,
            }
        };
        let base = q(&[]).map(|q| (q.reflect, q.instr, q.src));
        assert_eq!(
            base,
            Some((
                true,
                Instruction::Mark { tag: Tag(16) },
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
        assert_eq!(got.map(|r| r.instr), Ok(q.instr));
        assert_eq!(q.answer_protocol(), 17);
    }
}
