//! `waist plan compile`: the SNAP paper's §V compiler from a file ([`snap_vm::plan`]).
//!
//! Reads a PLAN program, compiles it to SNAP assembly, verifies it, and writes the
//! assembly (to a file or standard output) with the verifier's bounds on standard error.
//! The assembly carries the code; the packet's initial stack (the entry function's
//! arguments, then the entry index) is the sender's business, as `snap_vm::plan` says.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use snap_vm::plan::{self, Compiled, Options, ServiceSig};

/// The `plan` subcommands.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Compile a PLAN program to SNAP assembly and verify it.
    Compile {
        /// The PLAN source.
        file: PathBuf,
        /// Where to write the SNAP assembly (default: standard output).
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// How far a fold over a list of unknown length is unrolled (also the longest list
        /// literal); 0: no bound, only folds over list literals compile.
        #[arg(long, default_value_t = 4)]
        fold_bound: u32,
        /// The function the packet runs first (default: the last one defined).
        #[arg(long)]
        entry: Option<String>,
        /// A service the program may call, with its signature, e.g. `--service
        /// "lookup(host, int): host"` (repeatable; default: the ESS trio every router
        /// offers, `ess.get(int): int`, `ess.put(int, int): int`, `ess.count(int): int`).
        #[arg(long = "service", value_parser = parse_service)]
        services: Vec<ServiceSig>,
    },
}

/// Reads and compiles the PLAN program in `file`: entering at `entry` (default: the last
/// function defined, PLAN's convention), with `services` (default: the ESS trio,
/// [`ServiceSig::ess`]) and folds unrolled `fold_bound` times. Returns the program and the options used.
///
/// # Errors
///
/// If the file cannot be read or does not compile; the error names `file:line:col`.
pub fn compile_file(
    file: &Path,
    fold_bound: u32,
    entry: Option<String>,
    services: Vec<ServiceSig>,
) -> anyhow::Result<(Compiled, Options)> {
    let source =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let entry = match entry {
        Some(e) => e,
        None => plan::functions(&source)
            .map_err(|e| anyhow::anyhow!("{}:{e}", file.display()))?
            .pop()
            .with_context(|| format!("{}: no `fun` definition", file.display()))?,
    };
    let services = if services.is_empty() {
        ServiceSig::ess()
    } else {
        services
    };
    let opts = Options {
        fold_bound,
        services,
        entry,
    };
    let compiled =
        plan::compile(&source, &opts).map_err(|e| anyhow::anyhow!("{}:{e}", file.display()))?;
    Ok((compiled, opts))
}

/// Runs one `plan` subcommand; returns the exit code (0).
///
/// # Errors
///
/// If the file cannot be read or written, or does not compile (the error names line and
/// column).
pub fn run(command: PlanCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    let PlanCommand::Compile {
        file,
        out: path,
        fold_bound,
        entry,
        services,
    } = command;
    let (compiled, opts) = compile_file(&file, fold_bound, entry, services)?;
    match &path {
        Some(p) => std::fs::write(p, &compiled.assembly)
            .with_context(|| format!("writing {}", p.display()))?,
        None => out.write_all(compiled.assembly.as_bytes())?,
    }
    let b = compiled.bounds;
    let summary = format!(
        "{}: {} instructions ({} bytes of code), entry `{}` at {}; verified: instructions ≤ {}, \
         stack ≤ {}, heap ≤ {} words, sends ≤ {}",
        file.display(),
        compiled.program.code.len(),
        compiled.program.code.len() * 4,
        opts.entry,
        compiled.entry_index,
        b.instructions,
        b.stack_depth,
        b.heap_words,
        b.sends,
    );
    if path.is_some() {
        writeln!(out, "{summary}")?;
    } else {
        eprintln!("{summary}");
    }
    Ok(0)
}

/// `--service` values: a signature `name(ty, …): ty`.
fn parse_service(text: &str) -> Result<ServiceSig, String> {
    ServiceSig::parse(text).map_err(|e| format!("{e} (write `name(ty, …): ty`)"))
}
