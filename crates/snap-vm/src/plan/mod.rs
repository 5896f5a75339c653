//! PLAN to SNAP (paper §V): a compiler from a subset of PLAN, the packet language SNAP
//! succeeded, to SNAP assembly, assembled and verified.
//!
//! ```text
//!  PLAN text ─lex/parse─► funs ─types─► checked funs ─codegen─► assembly ─asm─► Program ─verify─► Bounds
//!                                  (no recursion, inlining,                       (forward branches,
//!                                   lists ≤ bound) unrolled folds                  linear bounds)
//! ```
//!
//! SNAP branches only forward, so PLAN functions are inlined (PLAN forbids recursion; a
//! cycle is an error naming it), `foldl` and `foldr` are unrolled to the caller's
//! [`fold_bound`](Options::fold_bound), and `OnRemote` sends a child packet that runs a
//! per-hop preamble until it arrives, then jumps to the function named in it: `forw; paj -1`
//! for `defaultRoute`, and for a routing function of the program's own a block that checks
//! `ishere` on the final destination (kept on the child's stack, since `forwto` rewrites
//! the header's) and otherwise `forwto`s the inlined routing function's next hop.
//!
//! # The subset
//!
//! * Definitions `fun name(x: ty, …) = expr`; types `int`, `bool`, `host`, `blob` (and
//!   `string`, the same), `unit`, `ty list`, tuples `ty * ty * …`, and `(ty)`.
//! * Expressions: integer (25-bit) and boolean literals, string literals (blobs),
//!   variables, `let val x = e … in e end`, `if e then e else e`, `+ - * div mod`
//!   (truncating, as SNAP's; by zero ends the packet), `= <>` (ints, bools, hosts),
//!   `< <= > >=`, `andalso`, `orelse`, `not`, `~`, calls `f(e, …)`, `(e; e)`, tuples
//!   `(e, e, …)` and `#i e` (field `i` from 1), `[e, …]`, `::`, `hd`, `tl`, `null`,
//!   `foldl(f, init, list)` with `f(acc, x)`, `foldr(f, init, list)` with `f(x, acc)`
//!   (from the last element), `OnRemote(|f|(args), dest, rb, route)`, host literals
//!   `10.0.0.3`, and the primitives `getSrc()`, `getDst()`, `getRB()`, `thisHost()`,
//!   `deliverUDP(v, port)` (`demux`).
//! * `OnNeighbor(|f|(args), neighbor, rb)`: a `send` of a child that enters `f` itself, one
//!   hop with no per-hop preamble (so `f` runs at the first node the child reaches:
//!   `neighbor` must be adjacent, as in PLAN; nothing checks it).
//! * `RetransOnRemote(|f|(args), dest, rb, route, k)`, where it maps: PLAN retransmits
//!   until acknowledged, which needs a timer and per-packet state at the sender; a SNAP
//!   node has neither. So the `k` tries (a literal, at most the fold bound) are sent at
//!   once, each with `rb div k`: delivery is at least once while fewer than `k` are lost,
//!   and `f` may run up to `k` times (suppress duplicates in `f` with `ess.count` if it
//!   matters). A node lets a packet send one packet per interface (paper §III.C), so `k`
//!   copies need `k` interfaces at the sender.
//! * `route` is `defaultRoute` (the node's table, `forw`) or a PLAN function
//!   `fun route(d: host) = …` returning the next hop toward `d`. It picks every hop, the
//!   first one at the sender too; at the destination the target runs; a next hop that is
//!   the node itself (not the destination) drops the packet.
//! * Any other call names a service ([`Options::services`], each with its
//!   [`ServiceSig`]): its arguments are checked against the signature and pushed, the
//!   service pops them all and pushes one result of the signature's type.
//! * ESP microcode ([`compile_micro`]): a type `word` (64-bit unsigned,
//!   a SNAP wide integer; `+ - *` wrap, comparisons unsigned, `toWord(int)`), and one
//!   function compiled to a bare program whose parameters are the instruction's operands
//!   and whose int or bool result is its verdict.
//! * Left out: exceptions, `real`, chunks as values, polymorphic functions, routing
//!   functions that (even indirectly) send with themselves (reported as recursion).
//!
//! # The packet
//!
//! The code starts with the routing preamble at index 0 (the program's entry point), then
//! one per-hop block per routing function the program defines and uses, then
//! one block per function that runs at a node: the entry function and every `OnRemote`
//! target. The stack the caller builds is the entry function's arguments, **first argument
//! at the bottom**, then [`Compiled::entry_index`] on top: the preamble's `paj` pops it and
//! jumps there. That is exactly the stack `OnRemote(|entry|(args), …)` would give a child.
//!
//! # Example: Fig. 2's ping
//!
//! ```
//! use snap_vm::plan::{compile, Options, ServiceSig};
//! use snap_vm::value::Value;
//! use snap_vm::vm::{Delivered, NodeConfig, Vm};
//!
//! let src = "
//!     fun r(w:blob, n:int) = deliverUDP(w, n)
//!     fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)";
//! let opts = Options { fold_bound: 4, services: ServiceSig::ess(), entry: "p".into() };
//! let c = compile(src, &opts)?;
//! assert!(c.assembly.contains("send"));
//!
//! // The packet: from A to B, stack [w :: n :: p] with p's index on top.
//! let mut ping = c.program.clone();
//! (ping.src, ping.dst, ping.rb) = ([10, 0, 0, 1], [10, 0, 0, 2], 8);
//! let w = ping.heap_bytes(b"hello");
//! ping.stack = vec![w, Value::int(7), Value::int(c.entry_index.into())];
//!
//! let mut b = Vm::new(NodeConfig { address: [10, 0, 0, 2], ifaces: 2, mtu: 1500 });
//! let out = b.run(0, 0, ping.to_bytes()?);
//! let mut a = Vm::new(NodeConfig { address: [10, 0, 0, 1], ifaces: 2, mtu: 1500 });
//! let back = a.run(1, 0, out.transmits[0].packet.clone());
//! let d = back.delivery.expect("delivered at A");
//! assert_eq!((d.port, d.value), (7, Delivered::Bytes(b"hello".to_vec())));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod ast;
mod codegen;
mod error;
mod lex;
mod micro;
mod parse;
mod types;

use alloc::string::String;
use alloc::vec::Vec;

pub use error::PlanError;
pub use micro::{MICRO_OPERANDS, compile_micro};

use crate::asm;
use crate::program::Program;
use crate::verify::{self, Bounds};
use crate::vm::NodeConfig;

/// What the compiler needs beyond the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// How many times a fold over a list of unknown length is unrolled; also the longest
    /// list literal allowed. 0 is no bound: a fold must then be over a list literal (it is
    /// unrolled exactly), and any other is rejected as unbounded.
    pub fold_bound: u32,
    /// The services nodes offer (called by name, compiled to `calls "name"`), with the
    /// types the checker holds calls to.
    pub services: Vec<ServiceSig>,
    /// The function the packet runs first.
    pub entry: String,
}

/// A node-resident service's signature: a call pushes the arguments in order and `calls`
/// it, which pops them all and pushes one result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceSig {
    /// The name packets call it by (`ess.get`).
    pub name: String,
    /// Its parameter types, in push order.
    pub params: Vec<ast::Ty>,
    /// The type of what it pushes.
    pub result: ast::Ty,
}

impl ServiceSig {
    /// Reads a signature written `name(ty, …): ty`, as `"ess.put(int, int): int"`.
    ///
    /// # Errors
    ///
    /// [`PlanError::Syntax`] with the column of the problem.
    pub fn parse(text: &str) -> Result<ServiceSig, PlanError> {
        let (name, params, result) = parse::service(text)?;
        Ok(ServiceSig {
            name,
            params,
            result,
        })
    }

    /// The ESS trio every SNAP router registers (`crate::service::EssService`): `ess.get`
    /// and `ess.count` take a tag, `ess.put` a tag and a value; all push an int (`ess.get`
    /// pushes 0 for a tag with no value).
    pub fn ess() -> Vec<ServiceSig> {
        use ast::Ty::Int;
        let sig = |name: &str, params: Vec<ast::Ty>| ServiceSig {
            name: name.into(),
            params,
            result: Int,
        };
        alloc::vec![
            sig("ess.get", alloc::vec![Int]),
            sig("ess.put", alloc::vec![Int, Int]),
            sig("ess.count", alloc::vec![Int]),
        ]
    }
}

/// A compiled PLAN program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    /// The generated SNAP assembly (accepted by [`asm::assemble`]).
    pub assembly: String,
    /// The assembled program: code and heap filled, header fields and stack left for the
    /// caller (see the [module docs](self) for the stack).
    pub program: Program,
    /// The verifier's bounds for one execution (on a node of two interfaces), of the code
    /// with an empty stack: the stack depth is above the values the caller puts there.
    pub bounds: Bounds,
    /// The entry function's instruction index, to push on top of its arguments.
    pub entry_index: u16,
    /// The entry function's parameter types, in order (the stack the caller builds under
    /// [`entry_index`](Compiled::entry_index), first at the bottom).
    pub entry_params: Vec<ast::Ty>,
}

/// Compiles PLAN `source` to SNAP, entering at `opts.entry`.
///
/// # Errors
///
/// [`PlanError`] for the first problem found: syntax, types, recursion, unknown names, list
/// literals longer than the bound, or a program too large for a packet.
pub fn compile(source: &str, opts: &Options) -> Result<Compiled, PlanError> {
    let mut funs = parse::parse(source)?;
    types::check(&mut funs, opts)?;
    let g = codegen::generate(&funs, opts, false)?;
    let entry_params = funs
        .iter()
        .find(|f| f.name == opts.entry)
        .map(|f| f.params.iter().map(|p| p.1.clone()).collect())
        .unwrap_or_default();
    let program = asm::assemble(&g.assembly)?;
    let node = NodeConfig {
        address: [0; 4],
        ifaces: 2,
        mtu: 1500,
    };
    let bounds = verify::verify(&program, &node)?;
    Ok(Compiled {
        assembly: g.assembly,
        program,
        bounds,
        entry_index: g.entry_index,
        entry_params,
    })
}

/// The names of the functions `source` defines, in order (PLAN's convention puts the one a
/// packet runs first last, after the functions it uses).
///
/// # Errors
///
/// [`PlanError::Syntax`] (with line and column) if `source` does not parse.
pub fn functions(source: &str) -> Result<Vec<String>, PlanError> {
    Ok(parse::parse(source)?.into_iter().map(|f| f.name).collect())
}

#[cfg(test)]
mod tests;
