//! `waist stream deploy|set|terminate`: one control envelope to a stream node's control
//! port (7401), its reply printed.
//!
//! The request goes from our address and a port of our own (so replies find us beside a
//! subscriber on 7400); it is sent again, with the same request id, when no reply comes
//! within `--timeout-ms`, `--retries` times. A reply counts when it comes from the node's
//! control address to our port and carries our request id.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::anyhow;
use clap::{ArgGroup, Args};
use stream_handlers::control::ControlMessage;
use stream_handlers::endpoint::parse_predicate;
use stream_handlers::envelope::{Envelope, Request, Status};
use stream_handlers::node::CONTROL_PORT;
use stream_handlers::spec::{Fields, Spec};
use tokio::time::Instant;

use super::{EXIT_FAILED, FieldsArg, LinkArgs, datagram, parse_addr};
use crate::host::link::{HostLink, buffer};
use crate::host::{EXIT_ANSWER, EXIT_TIMEOUT};

fn parse_control_addr(s: &str) -> Result<SocketAddr, String> {
    parse_addr(s, CONTROL_PORT)
}

/// What every control tool takes: the link, the node and the stream.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// The link and our address.
    #[command(flatten)]
    pub link: LinkArgs,
    /// The stream node: its address (control port 7401 unless given).
    #[arg(long, value_parser = parse_control_addr)]
    pub router: SocketAddr,
    /// The stream id.
    #[arg(long)]
    pub stream: u16,
    /// Milliseconds to wait for the reply to each try.
    #[arg(long, default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Tries after the first when no reply comes.
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
}

/// `waist stream deploy` options.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The node and the stream.
    #[command(flatten)]
    pub control: ControlArgs,
    /// The spec, e.g. "to 10.1.0.2:7400 10.1.0.3:7400 | fields flight | multicast
    /// 0=status==2 1=all" (grammar: `stream_handlers::spec`).
    pub spec: String,
}

/// `waist stream set` options: exactly one change.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("change").required(true).args(["predicate", "fan_out", "route", "rate"])))]
pub struct SetArgs {
    /// The node and the stream.
    #[command(flatten)]
    pub control: ControlArgs,
    /// The handler's index (its position among the spec's handler clauses, from 0).
    #[arg(long, required_unless_present = "rate")]
    pub handler: Option<u16>,
    /// Field names the predicate uses (else it writes u8@/u16@/u32@OFFSET).
    #[arg(long, value_enum)]
    pub fields: Option<FieldsArg>,
    /// The handler's new predicate, as a spec writes it (`status==2`, `u16@12 in 0..99`);
    /// with --dest, that destination's only.
    #[arg(long)]
    pub predicate: Option<String>,
    /// With --predicate: the destination (an index of the spec's `to` list) it is for.
    #[arg(long, requires = "predicate")]
    pub dest: Option<u16>,
    /// A mirror's fan-out: destinations 0..N.
    #[arg(long)]
    pub fan_out: Option<u16>,
    /// A content route: VALUE=DEST.
    #[arg(long)]
    pub route: Option<String>,
    /// The stream's offered rate, packets per second (admission's headroom).
    #[arg(long)]
    pub rate: Option<u32>,
}

/// `waist stream terminate` options.
#[derive(Debug, Args)]
pub struct TerminateArgs {
    /// The node and the stream.
    #[command(flatten)]
    pub control: ControlArgs,
}

impl SetArgs {
    /// The control message the options describe.
    ///
    /// # Errors
    ///
    /// If the predicate does not parse, the route is not VALUE=DEST, or a handler is
    /// missing.
    pub fn message(&self) -> anyhow::Result<ControlMessage> {
        if let Some(rate) = self.rate {
            return Ok(ControlMessage::SetRate { rate });
        }
        if self.dest.is_some() && self.predicate.is_none() {
            return Err(anyhow!("--dest names whose --predicate changes: give one"));
        }
        let handler = self
            .handler
            .ok_or_else(|| anyhow!("--handler is needed to change a handler"))?;
        if let Some(text) = &self.predicate {
            let predicate = parse_predicate(self.fields.map(Fields::from), text)
                .map_err(|e| anyhow!("--predicate: {e}"))?;
            return Ok(match self.dest {
                Some(dest) => ControlMessage::SetDestPredicate {
                    handler,
                    dest,
                    predicate,
                },
                None => ControlMessage::SetPredicate { handler, predicate },
            });
        }
        if let Some(n) = self.fan_out {
            return Ok(ControlMessage::SetFanOut { handler, n });
        }
        let route = self.route.as_deref().unwrap_or_default();
        let (value, dest) = route
            .split_once('=')
            .and_then(|(v, d)| Some((v.parse().ok()?, d.parse().ok()?)))
            .ok_or_else(|| anyhow!("--route `{route}`: not VALUE=DEST (u32=u16)"))?;
        Ok(ControlMessage::SetRoute {
            handler,
            value,
            dest,
        })
    }
}

/// A request id: different for every run (the pid and the clock), the same for its tries.
fn request_id() -> u32 {
    (std::process::id() << 16) ^ (super::wall_ns() as u32)
}

/// Our UDP port for the exchange: an ephemeral one of the pid.
fn our_port() -> u16 {
    49_152 + (std::process::id() % 16_384) as u16
}

/// Sends `request` for `c.stream` to the node and waits for the reply (trying again
/// `c.retries` times); the reply's status and detail, or `None` if none came.
///
/// # Errors
///
/// If the link cannot be opened or fails, or the packet cannot be built.
pub async fn exchange(
    c: &ControlArgs,
    request: Request,
) -> anyhow::Result<Option<(Status, String)>> {
    let mut link = HostLink::open(c.link.via, waist_ip::udp::PROTOCOL_UDP).await?;
    let id = request_id();
    let port = our_port();
    let mut payload = Vec::new();
    Envelope {
        stream: c.stream,
        id,
        request,
    }
    .emit(&mut payload);
    let packet = datagram(c.link.src, port, c.router, &payload)?;
    let mut buf = buffer();
    for _ in 0..=c.retries {
        link.send(&packet).await?;
        let deadline = Instant::now() + Duration::from_millis(c.timeout_ms);
        while let Some(r) = link.recv_until(&mut buf, deadline).await? {
            let Some(d) = buf.get(r).and_then(waist_ip::udp::parse_datagram) else {
                continue;
            };
            if SocketAddr::new(d.src, d.sport) != c.router || d.dport != port {
                continue;
            }
            if let Ok(Envelope {
                id: got,
                request: Request::Reply(status, detail),
                ..
            }) = Envelope::parse(d.data)
                && got == id
            {
                return Ok(Some((status, detail)));
            }
        }
    }
    Ok(None)
}

/// Prints the reply (`stream 7: on-node (cost 812 ns per packet, headroom 5000 ns)`) or
/// its absence; the exit code: 0 done, 1 refused, 2 no reply.
fn report(
    c: &ControlArgs,
    reply: Option<(Status, String)>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let Some((status, detail)) = reply else {
        writeln!(
            out,
            "no reply from {} within {} ms ({} tries)",
            c.router,
            c.timeout_ms,
            c.retries + 1
        )?;
        return Ok(EXIT_TIMEOUT);
    };
    write!(out, "stream {}: {}", c.stream, status.name())?;
    if !detail.is_empty() {
        write!(out, " ({detail})")?;
    }
    writeln!(out)?;
    Ok(if status == Status::Refused {
        EXIT_FAILED
    } else {
        EXIT_ANSWER
    })
}

/// `waist stream deploy`: the spec is checked here first, then sent as it was written.
///
/// # Errors
///
/// If the spec does not parse, or as [`exchange`].
pub fn deploy(a: &DeployArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    a.spec.parse::<Spec>()?;
    let reply = crate::host::block_on(exchange(&a.control, Request::Deploy(a.spec.clone())))?;
    report(&a.control, reply, out)
}

/// `waist stream set`.
///
/// # Errors
///
/// If the options do not make a control message ([`SetArgs::message`]), or as
/// [`exchange`].
pub fn set(a: &SetArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let m = a.message()?;
    let reply = crate::host::block_on(exchange(&a.control, Request::Control(m)))?;
    report(&a.control, reply, out)
}

/// `waist stream terminate`.
///
/// # Errors
///
/// As [`exchange`].
pub fn terminate(a: &TerminateArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let m = ControlMessage::Terminate {
        stream: a.control.stream,
    };
    let reply = crate::host::block_on(exchange(&a.control, Request::Control(m)))?;
    report(&a.control, reply, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use stream_handlers::{Field, Predicate};

    fn set(extra: &[&str]) -> anyhow::Result<ControlMessage> {
        let mut args = vec![
            "waist", "stream", "set", "--via", "raw", "--router", "10.0.0.1", "--stream", "7",
        ];
        args.extend_from_slice(extra);
        let cli = crate::Cli::try_parse_from(args)?;
        let crate::Command::Stream {
            command: super::super::StreamCommand::Set(a),
        } = cli.command
        else {
            return Err(anyhow!("not a set"));
        };
        assert_eq!(a.control.router, SocketAddr::from(([10, 0, 0, 1], 7401)));
        a.message()
    }

    #[test]
    fn each_option_makes_its_control_message() {
        let f = Field::new(0, 4);
        assert_eq!(
            set(&["--handler", "1", "--predicate", "u32@0<5"]).unwrap(),
            ControlMessage::SetPredicate {
                handler: 1,
                predicate: Predicate::Lt(f, 5)
            }
        );
        let status = Fields::Flight.format().field("status").unwrap();
        assert_eq!(
            set(&[
                "--handler",
                "0",
                "--fields",
                "flight",
                "--dest",
                "2",
                "--predicate",
                "status==3"
            ])
            .unwrap(),
            ControlMessage::SetDestPredicate {
                handler: 0,
                dest: 2,
                predicate: Predicate::Eq(status, 3)
            }
        );
        assert_eq!(
            set(&["--handler", "2", "--fan-out", "3"]).unwrap(),
            ControlMessage::SetFanOut { handler: 2, n: 3 }
        );
        assert_eq!(
            set(&["--handler", "0", "--route", "17=1"]).unwrap(),
            ControlMessage::SetRoute {
                handler: 0,
                value: 17,
                dest: 1
            }
        );
        assert_eq!(
            set(&["--rate", "5000"]).unwrap(),
            ControlMessage::SetRate { rate: 5000 }
        );
    }

    #[test]
    fn bad_options_are_refused_with_reasons() {
        // None, or two changes; a handler change without --handler; --dest alone.
        assert!(set(&["--handler", "1"]).is_err());
        assert!(set(&["--handler", "1", "--fan-out", "2", "--rate", "3"]).is_err());
        assert!(set(&["--fan-out", "2"]).is_err());
        let e = set(&["--handler", "1", "--dest", "2", "--fan-out", "2"]).unwrap_err();
        assert!(e.to_string().contains("--dest"), "{e}");
        let e = set(&["--handler", "1", "--route", "x=1"]).unwrap_err();
        assert!(e.to_string().contains("VALUE=DEST"), "{e}");
        let e = set(&["--handler", "1", "--predicate", "status==3"]).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }
}
