//! The demo's IXP part: stream handlers on real bytes, admission by headroom, and ESS on
//! the IXP1200 model.

use std::io::Write;

use anyhow::Context;
use ixp_model::Params;
use ixp_model::admission::Admission;
use ixp_model::esp::latency_cycles;
use ixp_model::ess_model::{EssCall, EssPlacement};
use ixp_model::strongarm::{Core, CoreCode, call_steps};
use stream_handlers::handlers::{CustomMulticast, naive_multicast};
use stream_handlers::{Field, Message, Predicate};

use repro::ixp_fig5::{HANDLERS, ixp_deployment};

/// Small messages for admission: a 64-byte body, one RUDP packet.
const SMALL: u64 = 64;

/// Customised multicast of a few messages, admission of each handler at four ports' line
/// rate of small packets, and one ESS call timed on both IXP executors.
///
/// # Errors
///
/// If writing fails, a destination receives other than its filtered copy, or the model
/// refuses a program.
pub fn run(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nIXP1200 model (stream handlers, ESS on a network processor): handlers on real bytes, admission, ESS"
    )?;
    multicast(out)?;
    admission(out)?;
    ess_find(out)?;
    writeln!(
        out,
        " (reproductions: waist repro ixp-fig4 | ixp-fig5 | ixp-esp-table1 | ixp-esp-table2 | ixp-esp-table3 | ixp-esp-fig11)"
    )?;
    Ok(())
}

fn multicast(out: &mut dyn Write) -> anyhow::Result<()> {
    // A reading: region (1 byte), value (2 bytes big-endian), then opaque bytes.
    let (region, value) = (Field::new(0, 1), Field::new(1, 2));
    let dests = vec![1, 2, 3, 4];
    let filters = vec![
        (1, Predicate::Eq(region, 3)),
        (2, Predicate::Ge(value, 500)),
        (3, Predicate::All),
        (4, Predicate::Range(value, 100, 200)),
    ];
    let mc = CustomMulticast::new(dests.clone(), filters.clone());
    let mut dep = mc.deployment();
    writeln!(
        out,
        " 1. Customised multicast (Rx mirror + Tx filters): 1 wants region 3, 2 value ≥ 500, 3 all, 4 value in 100..=200"
    )?;
    let mut got = [0usize; 4];
    for (r, v) in [(3u8, 150u16), (1, 700), (3, 20), (2, 180)] {
        let [hi, lo] = v.to_be_bytes();
        let msg = Message::new(0, vec![r, hi, lo, 0xde, 0xad, 0xbe, 0xef]);
        let copies = dep.run(msg.clone());
        anyhow::ensure!(
            copies == naive_multicast(&dests, &filters, &msg),
            "multicast differs from each destination's filter"
        );
        anyhow::ensure!(copies.iter().all(|c| c.payload == msg.payload));
        let to: Vec<String> = copies.iter().map(|c| c.dest.to_string()).collect();
        for c in &copies {
            *got.get_mut(usize::from(c.dest) - 1)
                .context("destination")? += 1;
        }
        writeln!(
            out,
            "    {:02x?} (region {r}, value {v:>3}) → to {}",
            msg.payload,
            to.join(", ")
        )?;
    }
    writeln!(
        out,
        "    received: 1 got {}, 2 got {}, 3 got {}, 4 got {}: each exactly its filtered copies, bytes unchanged",
        got[0], got[1], got[2], got[3]
    )?;
    Ok(())
}

/// Admission of every handler at all ports' line rate of `len`-byte messages, on a
/// runtime of `engines` microengines: one line, NP first, then host.
fn admit_all(out: &mut dyn Write, engines: u64, len: u64) -> anyhow::Result<usize> {
    let probe = Admission::new(1);
    let p = probe.costs.params;
    let frame = probe.path.frame(len);
    let pps = p.line_rate_pps(u32::try_from(frame)?) * u64::from(p.ports);
    let mut adm = Admission::new(pps);
    adm.engines = engines;
    let (mut np, mut host) = (Vec::new(), Vec::new());
    for name in HANDLERS {
        let d = adm.decide(&ixp_deployment(name).context("handler")?, len);
        let shown = format!("{name} {}/{}", d.cost, d.headroom);
        if d.on_np {
            np.push(shown)
        } else {
            host.push(shown)
        }
    }
    let none = || "none".to_string();
    writeln!(
        out,
        "    {engines} microengine{}, {len}-byte messages ({frame}-byte frames, {pps} packets/s): on the IXP: {}; to the host: {}",
        if engines == 1 { "" } else { "s" },
        if np.is_empty() { none() } else { np.join(", ") },
        if host.is_empty() {
            none()
        } else {
            host.join(", ")
        }
    )?;
    Ok(host.len())
}

fn admission(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        " 2. Admission by headroom at all {} ports' line rate (handler cycles/headroom cycles per packet):",
        Params::IXP1200.ports
    )?;
    let all = admit_all(out, u64::from(Params::IXP1200.microengines), SMALL)?;
    let one = admit_all(out, 1, 4 * SMALL)?;
    anyhow::ensure!(one >= all, "fewer engines admitted more handlers");
    Ok(())
}

fn ess_find(out: &mut dyn Write) -> anyhow::Result<()> {
    let p = Params::IXP1200;
    let call = EssCall::Find { examined: 1 };
    let engine = p.cycles_to_us(latency_cycles(&p, &call.program(&p, &EssPlacement::SRAM))? as f64);
    let steps = call_steps(&CoreCode::MEASURED, &call, &EssPlacement::SRAM);
    let core = Core::new(p).run(&steps).micros(&p);
    anyhow::ensure!(
        core < 3.0 && engine < core,
        "find: core {core} µs, µengine {engine} µs"
    );
    writeln!(
        out,
        " 3. ESS find() at chain length 1, store in SRAM: {core:.2} µs on the StrongARM core (the paper measured there), {engine:.2} µs on one microengine thread"
    )?;
    Ok(())
}
