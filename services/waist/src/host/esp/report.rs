//! Printing an answer of `waist esp send`: one line of text, or one JSON object.

use std::io::Write;
use std::net::Ipv4Addr;

use anyhow::Context;
use esp_proto::instr::Instruction;

use super::{Outcome, Query, QueryInstr};

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
