//! The stream handlers' per-fragment work, for instruction counts under callgrind:
//!
//! ```text
//! cargo build --release -p waist-node --example stream_per_fragment
//! valgrind --tool=callgrind target/release/examples/stream_per_fragment <case> <n>
//! ```
//!
//! Runs `n` messages of `<case>` (`forward`, `mirror1`, `multicast2`, `delta_whole`; the
//! cases of `benches/streams.rs`); the per-fragment count is `(Ir(2n) − Ir(n)) / (n ×
//! fragments per message)`, which cancels set-up. Prints the fragments per message.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // measurement driver

#[path = "../benches/support/streams.rs"]
mod streams;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "mirror1".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let (_, _, mut case, _) = streams::cases()
        .into_iter()
        .find(|c| c.1 == name)
        .unwrap_or_else(|| panic!("no case {name}: forward, mirror1, multicast2, delta_whole"));
    let mut sent = 0;
    for _ in 0..n {
        sent += case.run();
    }
    println!(
        "{name}: {} fragments per message, {sent} sent",
        case.frames.len()
    );
}
