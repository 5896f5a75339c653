//! The README's example: caller time and seeded draws, the same on every run.

use sansio::{Instant, Rng, SplitMix64};

fn main() {
    // A core is told the time; here a tick is a microsecond.
    let start = Instant::from_ticks(0);
    let deadline = start.saturating_add(250_000);

    // Stretch one seed into a key, and draw simulated losses from another.
    let mut keygen = SplitMix64::new(42);
    let key = [keygen.next_u64(), keygen.next_u64()];
    let mut rng = Rng::new(7);
    let lost = (0..1_000).filter(|_| rng.chance(10_000)).count();

    println!(
        "deadline {deadline}, key {:016x}{:016x}, {lost} of 1000 lost",
        key[0], key[1]
    );
}
