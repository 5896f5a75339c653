//! `waist esp send --microcode FILE.snap | --plan FILE.plan | --opcode N [--operand
//! VALUE]…`: an ESP query whose instruction is SNAP microcode — inline (the program rides
//! in the packet, opcode 32: SNAP assembly, or PLAN compiled by
//! `snap_vm::plan::compile_micro`) or installed at the routers under an opcode 64–127 (the
//! packet carries only the operands). The instruction is built, and the returned operands
//! read, by `esp_micro::endpoint`; this module reads files and prints.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;

use anyhow::{Context, anyhow};
use esp_micro::endpoint::{MicroInstruction, operands};
use esp_proto::endpoint::RawReceived;
use esp_proto::wire::{ErrCode, Loc};
use snap_vm::plan;

use super::args::MicroArgs;

impl MicroArgs {
    /// The microcode query the options describe, `None` if none was asked for.
    ///
    /// # Errors
    ///
    /// If `--operand` comes without `--microcode` or `--opcode`, or the file cannot be
    /// read, assembled, verified or carried (too large: install it instead).
    pub fn query(&self) -> anyhow::Result<Option<MicroQuery>> {
        if let Some(path) = &self.microcode {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            return MicroQuery::inline(path, &text, &self.operands).map(Some);
        }
        if let Some(path) = &self.plan {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            return MicroQuery::plan(path, &text, &self.operands).map(Some);
        }
        if let Some(opcode) = self.opcode {
            return MicroQuery::installed(opcode, &self.operands).map(Some);
        }
        if !self.operands.is_empty() {
            return Err(anyhow!(
                "--operand goes with --microcode, --plan or --opcode"
            ));
        }
        Ok(None)
    }
}

/// A microcode instruction to send, and what to call it in reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroQuery {
    /// The file it came from (inline), or `installed`.
    pub name: String,
    /// The opcode and operand field.
    pub instr: MicroInstruction,
}

impl MicroQuery {
    /// Inline microcode from assembly `text` (read from `path`) with `operands`.
    ///
    /// # Errors
    ///
    /// If it does not assemble, verify or fit the packet; the error names `path`.
    pub fn inline(path: &Path, text: &str, operands: &[u64]) -> anyhow::Result<MicroQuery> {
        let instr = MicroInstruction::inline_assembly(text, operands)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        Ok(MicroQuery { name, instr })
    }

    /// Inline microcode compiled from PLAN `text` (read from `path`): its last function,
    /// with `operands`.
    ///
    /// # Errors
    ///
    /// If it does not compile as microcode ([`plan::compile_micro`]), takes another number
    /// of operands, or does not fit the packet; the error names `path` (and the line and
    /// column of a compile error).
    pub fn plan(path: &Path, text: &str, operands: &[u64]) -> anyhow::Result<MicroQuery> {
        let at = path.display();
        let entry = plan::functions(text)
            .map_err(|e| anyhow!("{at}:{e}"))?
            .pop()
            .ok_or_else(|| anyhow!("{at}: no `fun` definition"))?;
        let opts = plan::Options {
            fold_bound: 4,
            services: plan::ServiceSig::esp_micro(),
            entry,
        };
        let compiled = plan::compile_micro(text, &opts).map_err(|e| anyhow!("{at}:{e}"))?;
        if compiled.entry_params.len() != operands.len() {
            return Err(anyhow!(
                "{at}: `{}` takes {} operands, given {}",
                opts.entry,
                compiled.entry_params.len(),
                operands.len()
            ));
        }
        let instr = MicroInstruction::inline(&compiled.program, operands)
            .map_err(|e| anyhow!("{at}: {e}"))?;
        let name = path
            .file_name()
            .map_or_else(|| at.to_string(), |n| n.to_string_lossy().into());
        Ok(MicroQuery { name, instr })
    }

    /// The instruction installed under `opcode`, with `operands`.
    ///
    /// # Errors
    ///
    /// If `opcode` is not installable or there are too many operands.
    pub fn installed(opcode: u8, operands: &[u64]) -> anyhow::Result<MicroQuery> {
        let instr = MicroInstruction::installed(opcode, operands).map_err(|e| anyhow!("{e}"))?;
        Ok(MicroQuery {
            name: String::from("installed"),
            instr,
        })
    }
}

impl MicroQuery {
    /// What it is, without its operands: `count.snap (inline microcode, opcode 32)`.
    pub fn label(&self) -> String {
        let op = self.instr.opcode();
        if op == esp_micro::OP_MICRO {
            format!("{} (inline microcode, opcode {op})", self.name)
        } else {
            format!("installed instruction (opcode {op})")
        }
    }
}

impl fmt::Display for MicroQuery {
    /// `count.snap (inline microcode, opcode 32) operands=[7, 1]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} operands={:?}", self.label(), self.instr.operands())
    }
}

/// A microcode query's answer: the operands as the last router left them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroAnswer {
    /// The IP source (the reflector).
    pub from: IpAddr,
    /// The opcode.
    pub opcode: u8,
    /// The returned operands.
    pub operands: Vec<u64>,
    /// The Loc bits (cleared by an abort).
    pub loc: Loc,
    /// Err's code, if a router aborted (a refused or failing program is `malformed`).
    pub err: Option<ErrCode>,
}

impl MicroAnswer {
    /// The answer in `got`, if it is one to a query of `opcode` (else `None`: not ours).
    pub fn read(opcode: u8, got: RawReceived) -> Option<MicroAnswer> {
        if got.opcode != opcode {
            return None;
        }
        let operands = operands(got.opcode, &got.operands).ok()?;
        Some(MicroAnswer {
            from: got.from,
            opcode: got.opcode,
            operands,
            loc: got.loc,
            err: got.err,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_program_too_large_says_to_install_it() {
        let long = "push 1\npop\n".repeat(40);
        let e = MicroQuery::inline(Path::new("big.snap"), &long, &[1]);
        let text = e.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("big.snap: microcode field of 331 bytes"),
            "{text}"
        );
        assert!(text.contains("opcode 64-127"), "{text}");
    }

    const COUNT_PLAN: &str = esp_micro::shipped::COUNT_PLAN;

    #[test]
    fn plan_compiles_to_inline_microcode_of_its_operands() {
        let q = MicroQuery::plan(Path::new("x/count.plan"), COUNT_PLAN, &[7, 2]);
        let q = q.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((q.name.as_str(), q.instr.opcode()), ("count.plan", 32));
        assert_eq!(q.instr.operands(), [7, 2]);
        let few = MicroQuery::plan(Path::new("count.plan"), COUNT_PLAN, &[7]);
        let e = few.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "count.plan: `count` takes 2 operands, given 1");
        let bad = MicroQuery::plan(Path::new("b.plan"), "fun f(a: int) = 0", &[1]);
        let e = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.starts_with("b.plan:1:1: type error: microcode operand `a` is int"),
            "{e}"
        );
    }

    #[test]
    fn answers_of_other_opcodes_are_not_ours() {
        let got = RawReceived {
            from: [10, 0, 0, 2].into(),
            opcode: 64,
            operands: [7u64, 1].iter().flat_map(|o| o.to_be_bytes()).collect(),
            loc: Loc::CENTRAL,
            err: None,
        };
        assert_eq!(MicroAnswer::read(65, got.clone()), None);
        let a = MicroAnswer::read(64, got);
        assert_eq!(
            a.map(|a| (a.operands, a.loc)),
            Some((vec![7, 1], Loc::CENTRAL))
        );
    }
}
