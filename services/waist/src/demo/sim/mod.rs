//! `waist demo --sim`: the cores at work, on a virtual clock.
//!
//! It demonstrates the ephemeral state store (bindings created and expiring on schedule,
//! writes that do not extend a lifetime, a full store refusing without evicting, a store
//! sized for a creation rate keeping up with it indefinitely), then ESP on simulated
//! networks: a path-intersection query and plain against robust aggregation under loss;
//! then Trickles (a stateless server on a lossy link), the fast path (a source-hash route
//! cache, threaded indices computed by distance-vector routing, rerouted around a failed
//! link) and the IXP1200 model (customised multicast on real bytes, admission by headroom,
//! ESS `find` on the StrongARM core and a microengine).
//!
//! The store's part is here; the others are [`esp`], [`trickles`], [`fastpath`] and
//! [`ixp`], run in that order.

pub mod esp;
pub mod fastpath;
pub mod ixp;
pub mod trickles;

use std::io::Write;

use ess::{Ess, EssConfig, Full, HashKey, Instant, Tag, Value};

use repro::common::SplitMix;

/// Ticks are milliseconds throughout the demo.
const MS: u64 = 1;
const SECOND: u64 = 1_000 * MS;

fn secs(t: Instant) -> f64 {
    t.ticks() as f64 / SECOND as f64
}

/// Runs the demo, printing to `out`.
///
/// # Errors
///
/// If writing fails or a core refuses a valid config.
pub fn run(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "waist demo: ephemeral state (ESP, SIGCOMM'02): the store, then ESP on simulated networks; then Trickles, the fast path and the IXP1200 model"
    )?;
    writeln!(out, "virtual clock, ticks are milliseconds\n")?;
    lifetimes(out)?;
    full_store(out)?;
    sized_for_rate(out)?;
    esp::run(out)?;
    trickles::run(out)?;
    fastpath::run(out)?;
    ixp::run(out)?;
    Ok(())
}

/// Bindings appear, are updated and vanish exactly one lifetime after creation.
fn lifetimes(out: &mut dyn Write) -> anyhow::Result<()> {
    let config = EssConfig::new(4, 10 * SECOND, 100 * MS, HashKey::from_seed(0xE55))?;
    let mut ess = Ess::new(config);
    writeln!(
        out,
        "1. Lifetimes: a store of {} bindings, τ = 10 s, clock resolution 100 ms",
        ess.capacity()
    )?;
    let tags = [(Tag(0xA11CE), 0), (Tag(0xB0B), 2_500), (Tag(0xCAFE), 5_000)];
    for (tag, at) in tags {
        ess.put(Instant::from_ticks(at), tag, Value(at))?;
        writeln!(
            out,
            "   t = {:>5.1} s  put {:#x} = {at}",
            secs(Instant::from_ticks(at)),
            tag.0
        )?;
    }
    // 0xB0B is written every second: its lifetime does not move.
    for s in 3..=12 {
        let now = Instant::from_ticks(s * SECOND);
        if let Some(h) = ess.find(now, Tag(0xB0B)) {
            let v = ess.read(h);
            ess.write(h, Value(v.0 + 1));
        }
    }
    writeln!(
        out,
        "   0xb0b is written once a second from t = 3 s: writes never extend a binding"
    )?;
    let mut now = Instant::from_ticks(9_900);
    while let Some(deadline) = ess.poll_timeout() {
        let before: Vec<Option<Value>> = tags.iter().map(|(t, _)| ess.get(now, *t)).collect();
        let shown: Vec<String> = tags
            .iter()
            .zip(&before)
            .map(|((t, _), v)| format!("{:#x}={}", t.0, show(*v)))
            .collect();
        writeln!(
            out,
            "   t = {:>5.1} s  {}  next expiry at {:.1} s",
            secs(now),
            shown.join(" "),
            secs(deadline)
        )?;
        // Just before the deadline the binding is still there; at the deadline it is gone.
        now = deadline;
        let gone: Vec<String> = tags
            .iter()
            .zip(&before)
            .filter(|((t, _), was)| was.is_some() && ess.get(now, *t).is_none())
            .map(|((t, _), _)| format!("{:#x}", t.0))
            .collect();
        let reclaimed = ess.clean(now, 16);
        writeln!(
            out,
            "   t = {:>5.1} s  expired: {}  (cleaner reclaimed {reclaimed})",
            secs(now),
            gone.join(", ")
        )?;
        now = Instant::from_ticks(now.ticks() + 100 * MS - 1);
    }
    writeln!(
        out,
        "   store empty: occupied = {}, counters {:?}\n",
        ess.occupied(),
        ess.counters()
    )?;
    Ok(())
}

fn show(v: Option<Value>) -> String {
    v.map_or_else(|| "nil".to_string(), |v| v.0.to_string())
}

/// A full store refuses new bindings and keeps every live one.
fn full_store(out: &mut dyn Write) -> anyhow::Result<()> {
    let config = EssConfig::new(3, 10 * SECOND, 100 * MS, HashKey::from_seed(0xF011))?;
    let mut ess = Ess::new(config);
    writeln!(
        out,
        "2. Full: a store of {} bindings, one created every 500 ms",
        ess.capacity()
    )?;
    for i in 0..8u64 {
        ess.put(Instant::from_ticks(i * 500), Tag(100 + i), Value(i))?;
    }
    let t = Instant::from_ticks(4 * SECOND);
    match ess.put(t, Tag(999), Value(0)) {
        Err(Full) => writeln!(out, "   t = {:>5.1} s  put 999 → refused: {Full}", secs(t))?,
        Ok(()) => writeln!(
            out,
            "   t = {:>5.1} s  put 999 → accepted (unexpected)",
            secs(t)
        )?,
    }
    let live = (0..8u64)
        .filter(|i| ess.get(t, Tag(100 + i)) == Some(Value(*i)))
        .count();
    writeln!(
        out,
        "   t = {:>5.1} s  all {live} of 8 earlier bindings still readable: nothing evicted",
        secs(t)
    )?;
    let oldest = ess.poll_timeout().unwrap_or(t);
    ess.put(oldest, Tag(999), Value(42))?;
    writeln!(
        out,
        "   t = {:>5.1} s  the oldest expires; put 999 → accepted, get 999 = {}",
        secs(oldest),
        show(ess.get(oldest, Tag(999)))
    )?;
    writeln!(out, "   counters {:?}\n", ess.counters())?;
    Ok(())
}

/// A store sized by `for_rate` never refuses at that rate, and refuses (never evicts) above.
fn sized_for_rate(out: &mut dyn Write) -> anyhow::Result<()> {
    let rate = 100_000;
    let config = EssConfig::for_rate(
        rate,
        SECOND,
        10 * SECOND,
        100 * MS,
        HashKey::from_seed(0x5a7e),
    )?;
    writeln!(
        out,
        "3. Sized for a rate: for_rate({rate} creations/s, τ = 10 s) → 2^{} bindings",
        config.capacity_log2()
    )?;
    for (label, per_second) in [("at the rate", rate), ("at twice the rate", 2 * rate)] {
        let mut ess = Ess::new(config);
        let mut rng = SplitMix(per_second);
        let step = SECOND as f64 / per_second as f64;
        let total = 30 * per_second;
        let mut first_refusal = None;
        for i in 0..total {
            let now = Instant::from_ticks((i as f64 * step) as u64);
            if i % per_second == 0 {
                ess.clean(now, usize::MAX); // the periodic cleaner, once a virtual second
            }
            if ess.put(now, Tag(rng.next_u64()), Value(i)).is_err() && first_refusal.is_none() {
                first_refusal = Some(now);
            }
        }
        let end = Instant::from_ticks(30 * SECOND);
        let stats = ess.chain_stats(end);
        let c = ess.counters();
        writeln!(
            out,
            "   {label}: {total} creations over 30 s → created {}, refused {}, reclaimed {}{}",
            c.created,
            c.refused,
            c.reclaimed,
            first_refusal.map_or(String::new(), |t| format!(
                ", first refusal at {:.1} s",
                secs(t)
            ))
        )?;
        writeln!(
            out,
            "      live at 30 s: {} ({:.0}% full), longest chain {}, mean entries per find {:.3}",
            stats.visible,
            100.0 * stats.visible as f64 / ess.capacity() as f64,
            stats.max_chain,
            stats.mean_hit_probes()
        )?;
    }
    let ess = Ess::new(config);
    writeln!(
        out,
        "   memory: {} MiB, {:.1} bytes per binding (paper: 128 + (h+1)n + z bits)",
        ess.memory_bytes() >> 20,
        ess.memory_bytes() as f64 / ess.capacity() as f64
    )?;
    Ok(())
}
