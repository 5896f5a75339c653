//! Runs one ESS call of our real store (`ess::Ess`) `N` times, for instruction counts under
//! callgrind: the source of [`ixp_model::strongarm::CoreCode`]'s per-call instruction counts,
//! which the StrongARM core model charges at its CPI.
//!
//! ```text
//! cargo build --release -p ixp-model --example ess_calls
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/ess_calls find 20000
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/ess_calls find 40000
//! ```
//!
//! Instructions per call = (Ir(2N) − Ir(N)) / N − that of `none` (the loop and the tag
//! computation alone). `hash` is the tag hash alone (which the paper's microengines did in
//! hardware). Cases, all on a store of 2^20 bindings with h = 2 that stays
//! "essentially empty" (Table 1: chain length 1): `none`; `find` (a hit on a bound tag);
//! `find_create` (a new binding each time: the Table 1 row, 5 + 5·cl accesses); `read` and
//! `write` (through a handle found beforehand).

// Example harness: bad arguments or a failed setup should abort loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use ess::{Ess, EssConfig, HashKey, Instant, Tag, Value};

/// Bindings the store holds at most: large enough that `find_create` N times stays near
/// empty (N = 40,000 fills 4%).
const LOG2: u8 = 20;

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn usage() -> ! {
    eprintln!("usage: ess_calls <none|hash|find|find_create|read|write> <N>");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [which, n] = args.as_slice() else { usage() };
    let n: u64 = n.parse().unwrap_or_else(|_| usage());
    let config = EssConfig::new(LOG2, 1 << 20, 1, HashKey::from_seed(0x5EED)).expect("config");
    let mut ess = Ess::new(config);
    let now = Instant::from_ticks(1);
    let bound = Tag(mix(u64::MAX));
    let handle = ess.find_create(now, bound).expect("room");
    let mut acc = 0u64;
    match which.as_str() {
        "none" => {
            for i in 0..n {
                acc ^= black_box(mix(i));
            }
        }
        "hash" => {
            let key = *ess.config().key();
            for i in 0..n {
                acc ^= key.hash(black_box(mix(i)));
            }
        }
        "find" => {
            for i in 0..n {
                acc ^= black_box(mix(i));
                acc ^= u64::from(ess.find(now, black_box(bound)).is_some());
            }
        }
        "find_create" => {
            for i in 0..n {
                let h = ess.find_create(now, black_box(Tag(mix(i)))).expect("room");
                acc ^= u64::from(h.is_new());
            }
        }
        "read" => {
            for i in 0..n {
                acc ^= black_box(mix(i));
                acc ^= ess.read(black_box(handle)).0;
            }
        }
        "write" => {
            for i in 0..n {
                ess.write(black_box(handle), Value(black_box(mix(i))));
            }
        }
        _ => usage(),
    }
    println!(
        "{which}: {n} calls, {} bindings, acc {acc:x}",
        ess.occupied()
    );
}
