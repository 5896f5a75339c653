//! The README's smallest use: COUNT (Fig. 3) on a 16-binding store, bindings vanishing
//! after τ, and a full store refusing new bindings.
use ess::{Ess, EssConfig, Full, HashKey, Instant, Tag, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Ticks are milliseconds; τ = 10 s on a 100 ms clock; 2^4 bindings.
    let config = EssConfig::new(4, 10_000, 100, HashKey::from_seed(0x5eed))?;
    let mut ess = Ess::new(config);
    let at = Instant::from_ticks;

    // COUNT (Fig. 3): one lookup, then read and write through the handle.
    let h = ess.find_create(at(0), Tag(0xC0FFEE))?;
    let count = if h.is_new() { 0 } else { ess.read(h).0 };
    ess.write(h, Value(count + 1));

    assert_eq!(ess.get(at(9_999), Tag(0xC0FFEE)), Some(Value(1)));
    assert_eq!(ess.get(at(10_000), Tag(0xC0FFEE)), None); // gone after τ

    // Full: live bindings are never evicted.
    for tag in 1..=16 {
        ess.put(at(10_000), Tag(tag), Value(tag))?;
    }
    assert_eq!(ess.put(at(10_000), Tag(99), Value(0)), Err(Full));
    println!("count = 1 until t = 9999, gone at t = 10000; 16 bindings fill the store");
    Ok(())
}
