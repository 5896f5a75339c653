//! ESP paper Table 2: COMPARE and COUNT latency with the ESS in SRAM, SDRAM, or split
//! (hash table in SRAM, tag and value tables in SDRAM), beside ours from the `ixp-model`
//! machine: one microengine thread running the instruction's ESS calls, tag bound, chain
//! length 1.
//!
//! We run both readings of the instructions (see `ixp_model::esp`): one lookup per
//! instruction (`find_create`, `read`, `write`; §5.2) and Fig. 3 literally (`get` then
//! `put`: two lookups). Nothing is fitted per row: the same `Params::IXP1200` everywhere.

use std::io::Write;

use anyhow::Context;
use ixp_model::Params;
use ixp_model::esp::{EspCase, EspInstruction, LookupStyle, latency_cycles};
use ixp_model::ess_model::EssPlacement;

use super::Options;
use super::ixp_esp_table1::deviation_pct;

/// Table 2's latencies in µs: `[instruction][placement]`, rows COMPARE, COUNT; columns
/// SRAM, SDRAM, SRAM & SDRAM.
pub const PAPER_US: [[f64; 3]; 2] = [[3.98, 6.49, 4.99], [2.62, 3.54, 3.47]];

/// One cell of Table 2.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The instruction.
    pub instruction: EspInstruction,
    /// The column's name.
    pub placement: &'static str,
    /// The paper's latency in µs.
    pub paper_us: f64,
    /// Ours with one lookup, µs.
    pub once_us: f64,
    /// Ours with `get` + `put`, µs.
    pub get_put_us: f64,
}

/// Our latency in µs for `instruction` with `placement` and lookup `style`.
///
/// # Errors
///
/// If the program does not load (it always does with `Params::IXP1200`).
pub fn latency_us(
    p: &Params,
    instruction: EspInstruction,
    placement: &EssPlacement,
    style: LookupStyle,
) -> anyhow::Result<f64> {
    let prog = instruction.program(p, placement, &EspCase::bound(style));
    Ok(p.cycles_to_us(latency_cycles(p, &prog)? as f64))
}

/// Computes every cell.
///
/// # Errors
///
/// As [`latency_us`].
pub fn cells(p: &Params) -> anyhow::Result<Vec<Cell>> {
    let mut v = Vec::new();
    for (instruction, paper_row) in EspInstruction::ALL.iter().zip(PAPER_US) {
        for ((name, placement), paper_us) in EssPlacement::TABLE2.iter().zip(paper_row) {
            v.push(Cell {
                instruction: *instruction,
                placement: name,
                paper_us,
                once_us: latency_us(p, *instruction, placement, LookupStyle::Once)?,
                get_put_us: latency_us(p, *instruction, placement, LookupStyle::GetPut)?,
            });
        }
    }
    Ok(v)
}

/// Prints Table 2 beside ours and writes `ixp-esp-table2.csv`.
///
/// # Errors
///
/// If the output or the CSV cannot be written.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Cell>> {
    let p = Params::IXP1200;
    let cells = cells(&p)?;
    writeln!(
        out,
        "ixp-esp-table2: ESP instruction latency with the ESS in SRAM, SDRAM or both (ESP paper Table 2)"
    )?;
    writeln!(
        out,
        "ours: one microengine thread, tag bound, cl = 1; SRAM {} cycles latency (32-bit, core clock), SDRAM {} (64-bit, half clock)",
        p.sram_read_latency_cycles, p.sdram_read_latency_cycles
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<8} {:<13} | {:>8} | {:>10} {:>6} | {:>10} {:>6}",
        "instr", "ESS in", "paper µs", "one lookup", "dev %", "get + put", "dev %"
    )?;
    for c in &cells {
        writeln!(
            out,
            "{:<8} {:<13} | {:>8.2} | {:>10.2} {:>+6.0} | {:>10.2} {:>+6.0}",
            c.instruction.to_string(),
            c.placement,
            c.paper_us,
            c.once_us,
            deviation_pct(c.once_us, c.paper_us),
            c.get_put_us,
            deviation_pct(c.get_put_us, c.paper_us),
        )?;
    }
    writeln!(out)?;
    writeln!(out, "shape (paper → ours, one lookup):")?;
    for instr in EspInstruction::ALL {
        let row: Vec<&Cell> = cells.iter().filter(|c| c.instruction == instr).collect();
        if let [sram, sdram, split] = row.as_slice() {
            writeln!(
                out,
                "  {instr}: SDRAM/SRAM {:.2} → {:.2}; split/SRAM {:.2} → {:.2}",
                sdram.paper_us / sram.paper_us,
                sdram.once_us / sram.once_us,
                split.paper_us / sram.paper_us,
                split.once_us / sram.once_us,
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "deviations above 10% (every cell), and why:")?;
    writeln!(
        out,
        "  * The paper's own Table 1 cannot add up to its Table 2. In SRAM, COUNT with one lookup \
         is at most find_create + read + write = 1.4 + 0.1 + 0.1 = 1.6 µs, and COMPARE (find + \
         read + write) 0.7 µs; Table 2 says 2.62 and 3.98 µs. Table 2 was timed on the StrongARM \
         (\"taken on the StrongARM processor\") and so includes instruction code around the ESS \
         calls (decoding the ESP header, dispatch, the forwarding decision) that the paper does \
         not itemise. Our model contains only the ESS calls and a few cycles for the operation, \
         so it is 45-75% under; we add no free parameter to absorb the gap."
    )?;
    let gaps: Vec<f64> = cells
        .iter()
        .map(|c| (c.paper_us - c.once_us) * f64::from(p.core_mhz))
        .collect();
    writeln!(
        out,
        "  * The gap is not one constant either: paper − ours (one lookup) is {} cycles per \
         cell, so no single per-instruction overhead parameter would close it.",
        gaps.iter()
            .map(|g| format!("{g:.0}"))
            .collect::<Vec<_>>()
            .join(" / ")
    )?;
    writeln!(
        out,
        "  * COUNT and COMPARE make the same ESS calls in Fig. 3 (a lookup, a read, a write), so \
         ours are equal; the paper's COMPARE is 1.52x its COUNT in SRAM. If its COMPARE did two \
         lookups (get + put) and COUNT one, ours would be {:.2} / {:.2} = {:.2}x.",
        cells.first().map_or(0.0, |c| c.get_put_us),
        cells.get(3).map_or(0.0, |c| c.once_us),
        cells.first().map_or(0.0, |c| c.get_put_us) / cells.get(3).map_or(1.0, |c| c.once_us),
    )?;
    writeln!(
        out,
        "  * What does reproduce: the order SRAM < split < SDRAM for both instructions, and the \
         split recovering part of SDRAM's penalty."
    )?;

    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("creating {}", opts.dir.display()))?;
    let csv = opts.dir.join("ixp-esp-table2.csv");
    let mut f =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(
        f,
        "instruction,placement,paper_us,once_us,once_dev_pct,get_put_us,get_put_dev_pct"
    )?;
    for c in &cells {
        writeln!(
            f,
            "{},{},{},{:.4},{:.1},{:.4},{:.1}",
            c.instruction,
            c.placement,
            c.paper_us,
            c.once_us,
            deviation_pct(c.once_us, c.paper_us),
            c.get_put_us,
            deviation_pct(c.get_put_us, c.paper_us)
        )?;
    }
    writeln!(out, "\nwrote {}", csv.display())?;
    Ok(cells)
}
