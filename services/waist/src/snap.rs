//! `waist snap …`: SNAP tools over files — assemble, disassemble, verify, run once — and
//! `ping` through real routers ([`crate::host::snap`]).
//!
//! Everything here reads a file, calls `snap-vm` and prints what it returns. A packet file
//! is either assembly text (see `snap_vm::asm`) or a binary packet (`Program::to_bytes`):
//! a file whose first byte carries version nibble 1 and that parses as a packet is binary,
//! anything else is read as text.

use std::fmt::Write as _;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use clap::Subcommand;
use snap_vm::asm::{assemble, disassemble, summary};
use snap_vm::program::Program;
use snap_vm::service::EssService;
use snap_vm::verify::verify;
use snap_vm::vm::{Delivered, End, NodeConfig, Vm};
use snap_vm::wire::VERSION;

/// The MTU of the node `run` and `verify` model (its buffer limit is 4 × MTU).
const MTU: usize = 1500;

/// The `snap` subcommands.
#[derive(Debug, Subcommand)]
pub enum SnapCommand {
    /// Assemble a program into packet bytes.
    Asm {
        /// The assembly file.
        file: PathBuf,
        /// Where to write the packet.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Print the disassembly of a packet (binary or text).
    Disasm {
        /// The packet file.
        file: PathBuf,
    },
    /// Verify a packet and print its bounds; fails if the verifier rejects it.
    Verify {
        /// The packet file (assembly or binary).
        file: PathBuf,
        /// Interfaces of the node (the most packets one packet may send there).
        #[arg(long, default_value_t = 2)]
        ifaces: u32,
    },
    /// Run a packet once on one node and print what it did.
    Run {
        /// The packet file (assembly or binary).
        file: PathBuf,
        /// The node's address, of the packet's family (default: the packet's destination).
        #[arg(long)]
        at: Option<IpAddr>,
        /// Interfaces of the node.
        #[arg(long, default_value_t = 2)]
        ifaces: u32,
        /// The interface the packet arrived on.
        #[arg(long, default_value_t = 0)]
        iface: u32,
        /// The time, in ticks, that services see.
        #[arg(long, default_value_t = 0)]
        now: u64,
    },
    /// Ping a SNAP node through real routers with the paper's Fig. 1 ping program (or a
    /// PLAN program compiled, `--plan`).
    ///
    /// Prints each reply (sequence number, node, round-trip time, resource bound left) and
    /// a summary. Exit code 0 if any reply came, 2 if none did.
    Ping(crate::host::snap::PingArgs),
}

/// Runs one `snap` subcommand, writing its report to `out`; returns the exit code (see
/// [`SnapCommand::Ping`]; 0 for the others).
///
/// # Errors
///
/// If a file cannot be read, written, assembled or parsed, if the verifier rejects the
/// program (`verify`), if `ping` cannot open its link, or if writing the report fails.
pub fn run(command: SnapCommand, out: &mut dyn Write) -> anyhow::Result<u8> {
    match command {
        SnapCommand::Ping(args) => return crate::host::snap::run(&args, out),
        SnapCommand::Asm { file, out: path } => {
            let program = load(&file)?;
            let bytes = program
                .to_bytes()
                .with_context(|| format!("{}", file.display()))?;
            std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
            writeln!(
                out,
                "{}: {} bytes ({} instructions, {} heap words, {} stack values)",
                path.display(),
                bytes.len(),
                program.code.len(),
                program.heap.len(),
                program.stack.len()
            )?;
        }
        SnapCommand::Disasm { file } => write!(out, "{}", disassemble(&load(&file)?))?,
        SnapCommand::Verify { file, ifaces } => {
            let program = load(&file)?;
            let node = node(program.dst, ifaces);
            let b = verify(&program, &node)
                .map_err(|e| anyhow!("{}: rejected: {e}", file.display()))?;
            writeln!(
                out,
                "{}: accepted on a node with {ifaces} interfaces\n  \
                 instructions ≤ {}\n  stack depth  ≤ {} values\n  heap         ≤ {} words allocated\n  \
                 sends        ≤ {}\n  delivers     {}\n  bandwidth    ≤ {} bytes ({} bytes × resource bound {})",
                file.display(),
                b.instructions,
                b.stack_depth,
                b.heap_words,
                b.sends,
                if b.delivers { "at most once" } else { "never" },
                b.bandwidth,
                program.packet_len(),
                program.rb
            )?;
        }
        SnapCommand::Run {
            file,
            at,
            ifaces,
            iface,
            now,
        } => {
            let program = load(&file)?;
            let address = at.unwrap_or_else(|| program.dst_addr());
            let bytes = program
                .to_bytes()
                .with_context(|| format!("{}", file.display()))?;
            out.write_all(run_once(&program, bytes, address, ifaces, (iface, now)).as_bytes())?;
        }
    }
    Ok(0)
}

fn node(address: [u8; 4], ifaces: u32) -> NodeConfig {
    NodeConfig {
        address,
        ifaces,
        mtu: MTU,
    }
}

/// Reads a packet file: binary if it starts with our version nibble and parses, else text.
///
/// # Errors
///
/// If the file cannot be read, or is neither a packet nor assembly that assembles.
pub fn load(path: &Path) -> anyhow::Result<Program> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.first().is_some_and(|b| b >> 4 == VERSION)
        && let Ok(p) = Program::from_bytes(&bytes)
    {
        return Ok(p);
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!(
            "{}: neither a SNAP packet nor UTF-8 assembly",
            path.display()
        )
    })?;
    assemble(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Runs `bytes` (the packet of `program`) once at the node at `address` with `ifaces`
/// interfaces (arriving on `iface` at `now`) and describes what it did.
fn run_once(
    program: &Program,
    bytes: Vec<u8>,
    address: IpAddr,
    ifaces: u32,
    (iface, now): (u32, u64),
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "node {address} ({ifaces} interfaces), packet of {} bytes: {}",
        bytes.len(),
        summary(program)
    );
    let mut vm = match address {
        IpAddr::V4(a) => Vm::new(node(a.octets(), ifaces)),
        IpAddr::V6(a) => {
            let mut vm = Vm::new(node([0; 4], ifaces));
            vm.set_address6(Some(a.octets()));
            vm
        }
    };
    // The node offers the ESS (`calls "ess.get"`, …): 1024 bindings living 10 000 ticks.
    if let Ok(ess) = ess::EssConfig::new(10, 10_000, 1, ess::HashKey::from_seed(1)) {
        for service in EssService::trio(ess, ess::HashKey::from_seed(2)) {
            vm.services.register(Box::new(service));
        }
    }
    let o = vm.run(now, iface, bytes);
    let end = match o.end {
        End::Exit => "exit".to_string(),
        End::Forwarded => "forwarded".to_string(),
        End::Delivered => "delivered".to_string(),
        End::Fault(f) => format!("fault: {f}"),
        End::NoResource => "dropped: no resource bound left".to_string(),
        End::Malformed(e) => format!("malformed: {e}"),
    };
    let _ = writeln!(s, "end: {end}");
    for (i, t) in o.transmits.iter().enumerate() {
        let what = Program::from_bytes(&t.packet).map_or_else(|e| e.to_string(), |p| summary(&p));
        let _ = writeln!(
            s,
            "transmit {}: to {}, {} bytes: {what}",
            i + 1,
            t.destination(),
            t.packet.len()
        );
    }
    if let Some(d) = &o.delivery {
        let _ = writeln!(
            s,
            "delivery: port {} from {}: {}",
            d.port,
            d.source(),
            delivered(&d.value)
        );
    }
    let st = o.stats;
    let _ = writeln!(
        s,
        "stats: arrived with resource bound {}, executed {} instructions, stack depth {}, {} heap words allocated, sends {}",
        o.rb_in, st.executed, st.max_depth, st.allocated, st.sends
    );
    s
}

/// A delivered value as text.
fn delivered(v: &Delivered) -> String {
    match v {
        Delivered::Int(i) => i.to_string(),
        Delivered::Addr(a) => Ipv4Addr::from(*a).to_string(),
        Delivered::Addr6(a) => std::net::Ipv6Addr::from(*a).to_string(),
        Delivered::Float(x) => format!("{x}"),
        Delivered::Wide(x) => format!("{x} (wide)"),
        Delivered::Bytes(b) if b.iter().all(|c| (0x20..0x7F).contains(c)) => {
            format!("{:?}", String::from_utf8_lossy(b))
        }
        Delivered::Bytes(b) => b.iter().fold("0x".to_string(), |mut s, c| {
            let _ = write!(s, "{c:02x}");
            s
        }),
        Delivered::Tuple(vs) => {
            let parts: Vec<String> = vs.iter().map(delivered).collect();
            format!("({})", parts.join(", "))
        }
    }
}
