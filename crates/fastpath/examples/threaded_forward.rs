//! One forwarding case run N times over the `threaded` bench's workload, for instruction
//! counts with callgrind (a stable figure on a shared machine):
//!
//! ```text
//! cargo build --release -p fastpath --example threaded_forward
//! for c in loop threaded lpm lpm_compiled siphash fxhash source_hash; do
//!   for n in 100000 200000; do
//!     valgrind --tool=callgrind --callgrind-out-file=/tmp/tf.$c.$n \
//!         target/release/examples/threaded_forward $c $n
//!   done
//! done
//! ```
//!
//! Instructions per packet = (Ir(2N) − Ir(N)) / N: the setup (the same in both runs)
//! cancels. Cases: `threaded` (`ThreadedTable::forward` on the packet's label), `lpm`
//! (longest-prefix match on its destination, binary trie), `lpm_compiled` (the same table
//! compiled: `CompiledLpm`, a stride-8 multibit trie), `siphash` / `fxhash` (hashbrown
//! keyed by destination), `source_hash` (the destination cache hit: slot from the source
//! hash, flow-id compare), `loop` (read the packet's label and address only: the
//! harness's own cost, to subtract).

// An example binary: bad arguments should stop it loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;

#[path = "../benches/threaded_support/mod.rs"]
mod setup;

type Packet = (
    fastpath::threaded::Label,
    [u8; 4],
    fastpath::SourceHash,
    fastpath::FlowId,
);

/// Runs `case` over the pool `n` times; the case is chosen once, outside the loop.
fn run(w: &setup::Workload, n: usize, case: impl Fn(&Packet) -> u64) -> u64 {
    let mut acc = 0u64;
    for k in 0..n {
        acc = acc.wrapping_add(case(black_box(&w.packets[k % setup::POOL])));
    }
    acc
}

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args
        .next()
        .expect("case: threaded|lpm|lpm_compiled|siphash|fxhash|source_hash|loop");
    let n: usize = args.next().expect("N").parse().expect("N is a number");
    let w = setup::workload(7);
    let acc = match case.as_str() {
        "threaded" => run(&w, n, |&(label, ..)| match w.table.forward(label) {
            Ok(fastpath::threaded::Forward::Send { iface, out_label }) => {
                u64::from(iface) + u64::from(out_label.index)
            }
            _ => 0,
        }),
        "lpm" => run(&w, n, |&(_, addr, ..)| {
            w.lpm.lookup(addr).map_or(0, |(_, &v)| u64::from(v))
        }),
        "lpm_compiled" => run(&w, n, |&(_, addr, ..)| {
            w.compiled.lookup(addr).map_or(0, |(_, &v)| u64::from(v))
        }),
        "siphash" => run(&w, n, |(_, addr, ..)| {
            w.sip.get(addr).map_or(0, |&v| u64::from(v))
        }),
        "fxhash" => run(&w, n, |(_, addr, ..)| {
            w.fx.get(addr).map_or(0, |&v| u64::from(v))
        }),
        "source_hash" => run(&w, n, |&(_, _, h, ref fid)| {
            w.cache.get(h, fid).map_or(0, |&v| u64::from(v))
        }),
        "loop" => run(&w, n, |&(label, addr, ..)| {
            u64::from(label.index) + u64::from(addr[3])
        }),
        other => panic!("unknown case {other}"),
    };
    println!("{case} {n} {acc}");
}
