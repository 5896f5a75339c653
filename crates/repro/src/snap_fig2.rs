//! SNAP paper Fig. 2 and §VII.B: ping written in PLAN and compiled to SNAP, beside the
//! paper's compiled listing and the hand-written Fig. 1 ping.
//!
//! The paper's compiler turned Fig. 2's two-line PLAN ping into 16 instructions, 112 bytes
//! of packet overhead against 68 for Fig. 1 by hand and 178 for the PLAN packet (4-byte
//! payloads). Ours compiles the same source with `snap_vm::plan`, prints the listing next
//! to the paper's (as transcribed in `snap_vm::paper::plan_ping_source`), counts
//! instructions and packet bytes the same way (the packet less its payload), and runs all
//! three SNAP programs on the VM from A to B and back: each must deliver the payload to the
//! port at A.

use std::io::Write;

use snap_vm::paper;
use snap_vm::plan::{self, Options as PlanOptions};
use snap_vm::program::Program;
use snap_vm::value::Value;
use snap_vm::vm::{Delivered, End, NodeConfig, Vm};

/// The PLAN source of Fig. 2.
pub const SOURCE: &str = "fun r(w:blob, n:int) = deliverUDP(w, n)\n\
                          fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)\n";

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const PORT: u16 = 7;
const PAYLOAD: &[u8] = b"ping";

/// One program's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Which program.
    pub name: &'static str,
    /// Instructions.
    pub instructions: usize,
    /// Packet bytes less the payload.
    pub overhead: usize,
    /// Whether it delivered the payload at A after a round trip through B.
    pub delivered: bool,
}

/// Runs `program` at A (it leaves), at B (it turns around) and at A (it delivers).
fn round_trip(program: &Program) -> anyhow::Result<bool> {
    let node = |address| NodeConfig {
        address,
        ifaces: 2,
        mtu: 1500,
    };
    let mut packet = program.to_bytes()?;
    for (at, iface) in [(A, 0), (B, 0), (A, 1)] {
        let out = Vm::new(node(at)).run(0, iface, packet);
        if let Some(d) = out.delivery {
            return Ok(at == A
                && d.port == i32::from(PORT)
                && d.value == Delivered::Bytes(PAYLOAD.to_vec()));
        }
        // It left (forw / forwto) or sent its child (send, then exit): follow the packet.
        match out.transmits.into_iter().next() {
            Some(t) if !matches!(out.end, End::Fault(_)) => packet = t.packet,
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// Compiles Fig. 2, measures the three programs and prints the comparison.
///
/// # Errors
///
/// If the compiler rejects Fig. 2 or a program does not encode, or writing fails.
pub fn run(out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let opts = PlanOptions {
        fold_bound: 1,
        services: snap_vm::plan::ServiceSig::ess(),
        entry: "p".into(),
    };
    let compiled = plan::compile(SOURCE, &opts).map_err(|e| anyhow::anyhow!("Fig. 2: {e}"))?;
    let mut ours = Program {
        src: A,
        dst: B,
        rb: 8,
        code: compiled.program.code.clone(),
        entry: compiled.program.entry,
        ..Program::default()
    };
    let w = ours.heap_bytes(PAYLOAD);
    ours.stack = vec![
        w,
        Value::int(i32::from(PORT)),
        Value::int(i32::from(compiled.entry_index)),
    ];
    let paper = paper::plan_ping(A, B, PORT, PAYLOAD, 8);
    let hand = paper::ping(A, B, PORT, PAYLOAD, 8);
    let mut rows = Vec::new();
    for (name, p) in [
        ("Fig. 1 ping, by hand", &hand),
        ("Fig. 2 as the paper lists it", &paper),
        ("Fig. 2 compiled by snap_vm::plan", &ours),
    ] {
        rows.push(Row {
            name,
            instructions: p.code.len(),
            overhead: p.packet_len() - PAYLOAD.len(),
            delivered: round_trip(p)?,
        });
    }
    writeln!(out, "SNAP paper Fig. 2: ping in PLAN, compiled to SNAP\n")?;
    writeln!(out, "PLAN source:\n{SOURCE}")?;
    writeln!(
        out,
        "ours (snap_vm::plan):\n{}\n",
        compiled.assembly.trim_end()
    )?;
    writeln!(
        out,
        "the paper's listing (transcribed):\n{}\n",
        paper::plan_ping_source(A, B, PORT, PAYLOAD, 8).trim_end()
    )?;
    writeln!(
        out,
        "{:<34} {:>12} {:>22} {:>16}",
        "program", "instructions", "overhead, B (paper)", "round trip A→B→A"
    )?;
    let paper_overhead = [Some(68), Some(112), Some(112)];
    for (r, p) in rows.iter().zip(paper_overhead) {
        let paper = p.map_or("—".to_string(), |b: u32| b.to_string());
        writeln!(
            out,
            "{:<34} {:>12} {:>15} ({:>4}) {:>16}",
            r.name,
            r.instructions,
            r.overhead,
            paper,
            if r.delivered {
                "delivered"
            } else {
                "NOT delivered"
            }
        )?;
    }
    writeln!(
        out,
        "\nThe paper: compiled ping 16 instructions, 112 B overhead; by hand 7, 68 B; PLAN 178 B.\n\
         Overhead here is our packet format's (header, code, heap, stack, less the payload)."
    )?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_deliver_and_ours_stays_near_the_papers_size() {
        let rows = run(&mut Vec::new()).unwrap();
        assert!(rows.iter().all(|r| r.delivered), "{rows:?}");
        assert_eq!(rows[0].instructions, 7);
        assert!(rows[2].instructions <= 2 * rows[1].instructions, "{rows:?}");
        assert!(rows[2].overhead > rows[0].overhead);
    }
}
