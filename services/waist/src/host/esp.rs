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
use std::net::IpAddr;
use std::time::Duration;

use anyhow::anyhow;
use esp_proto::endpoint::{Endpoint, EndpointError, Received};
use esp_proto::instr::Instruction;
use esp_proto::wire::Loc;
use tokio::time::Instant;

use super::link::{HostLink, buffer};
use super::{EXIT_ABORT, EXIT_ANSWER, EXIT_TIMEOUT};

mod args;
pub mod micro;
mod report;
#[cfg(test)]
mod tests;

pub use args::{CmpOp, CombOp, EspCommand, InstrArgs, MicroArgs, SendArgs};
pub use micro::{MicroAnswer, MicroQuery};
pub use report::{last_mark, report};

/// UDP ports of the datagram a piggybacked query rides on (discard, both ways).
const PIGGYBACK_PORT: u16 = 9;
/// The datagram's data.
const PIGGYBACK_DATA: &[u8] = b"waist esp";

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
