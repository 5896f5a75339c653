//! The README's example: the shipped microcoded COUNT on a store.

use esp_micro::Microcode;
use esp_proto::exec::{Context, Env, Verdict};
use esp_proto::{Ess, EssConfig, HashKey, Instant, Tag};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // COUNT (Fig. 3) with the full unsigned range: examples/esp-microcode/count.snap.
    let count = Microcode::assemble(esp_micro::shipped::COUNT)?;
    let mut store = Ess::new(EssConfig::new(6, 1000, 1, HashKey::from_seed(7))?);
    let env = Env::new(1, HashKey::from_seed(9));
    let now = Instant::from_ticks(0);
    let mut ctx = Context::new(&mut store, &env, 42);
    let mut operands = [7, 1]; // counter tag 7, threshold 1
    assert_eq!(count.run(&mut ctx, now, &mut operands)?, Verdict::Forward);
    assert_eq!(count.run(&mut ctx, now, &mut operands)?, Verdict::Drop);
    assert_eq!(store.get(now, Tag(7)).map(|v| v.0), Some(2));
    println!("microcoded COUNT: forward, then drop; counter 7 = 2");
    Ok(())
}
