//! # ess — the ephemeral state store
//!
//! The associative memory at the heart of *ephemeral state processing* (ESP; Calvert,
//! Griffioen and Wen, SIGCOMM 2002, §2.3 and §5). Packets bind 64-bit [`Tag`]s to 64-bit
//! [`Value`]s at a router; every binding lives exactly one lifetime τ from its creation and
//! then vanishes. Writes never extend it, so storage is reclaimed at the rate it is
//! allocated, and the size that guarantees every creation succeeds at a given rate is fixed
//! in advance ([`EssConfig::for_rate`]).
//!
//! What it does not do: no I/O, no clock, no threads, no randomness. Time comes in as an
//! [`Instant`] on every call, the secret tag-hash key through [`EssConfig`]. `#![no_std]`;
//! the `alloc` feature (default) allocates the tables once, without it the caller lends them
//! ([`BorrowedTables`]); the optional `bytemuck` feature makes [`Entry`] `Pod`, so lent tables
//! can be views of memory the caller mapped itself (e.g. 2 MiB pages).
//!
//! ```text
//!  tag ──keyed hash──► hash table (h·2^n × u32) ──► tag + value tables, interleaved
//!                                                   (2^n × {tag, value, expiry, chain})
//!   next ──► new bindings, in creation order      last ──► cleaner, in expiry order
//! ```
//!
//! The layers:
//!
//! * [`Ess`]: the store of Fig. 10. One lookup per instruction —
//!   [`find`](Ess::find) / [`find_create`](Ess::find_create) give a [`Handle`],
//!   [`read`](Ess::read) / [`write`](Ess::write) use it — plus the paper's
//!   [`get`](Ess::get) / [`put`](Ess::put), and the cleaners [`clean`](Ess::clean) (bounded
//!   work) and [`clean_all`](Ess::clean_all).
//! * [`Ess::find_batch`] / [`Ess::find_create_batch`]: the same operations for a batch of
//!   packets, with their memory accesses overlapped.
//! * [`EssConfig`]: capacity 2^n, hash ratio *h* ([`HashRatio`]), lifetime and clock
//!   resolution in ticks, [`HashKey`].
//! * [`ShardedEss`] / [`ShardRouter`]: one store per shard, chosen by computation ID, so a
//!   computation's instructions are serialised and stores can live on different cores
//!   (§5.2).
//! * [`ChainStats`]: how evenly tags spread, for monitoring and for Fig. 11.
//! * [`oracle::Oracle`]: the contract as a plain map, the model the tests and fuzzer check
//!   the store against.
//!
//! Choices the paper leaves open, and ours:
//!
//! * Expiry times are 32 bits of clock units (*z* = 32); the lifetime must be under 2^31
//!   units. Entries 2^32 units stale are reclaimed before their bits could alias.
//! * A binding created at tick `c` is visible while `now / resolution < c / resolution +
//!   τ / resolution`: from creation until τ has passed at the clock's resolution, never
//!   longer than τ ticks.
//! * The store's time never runs backwards: an earlier `now` than one already seen by a
//!   mutating call is read as that latest time.
//! * A new binding holds `Value(0)`; [`Handle::is_new`] tells an instruction that it saw
//!   *nil*.
//! * A full store refuses with [`Full`]; it never evicts a live binding.
//! * The tag and value tables share an index as in Fig. 10, but are stored interleaved
//!   ([`Entry`]): on a cached CPU, the `read`/`write` after a `find` then costs no extra
//!   cache miss.
//! * Reclaiming an entry touches only the `last` register. Hash slots and chain links name
//!   entries by 32 bits of their creation number, so a lookup tells a stale link from a
//!   live one without reading the entry (see [`Ess`]). A creation thus touches one random
//!   cache line, not the three that unlinking would.
//!
//! # Example
//!
//! ```
//! # #[cfg(feature = "alloc")] { // `Ess::new` needs the heap
//! use ess::{Ess, EssConfig, Full, HashKey, Instant, Tag, Value};
//!
//! // Ticks are milliseconds; τ = 10 s on a 100 ms clock; 2^4 bindings.
//! let config = EssConfig::new(4, 10_000, 100, HashKey::from_seed(0x5eed))?;
//! let mut ess = Ess::new(config);
//! let at = Instant::from_ticks;
//!
//! // COUNT (Fig. 3): one lookup, then read and write through the handle.
//! let h = ess.find_create(at(0), Tag(0xC0FFEE))?;
//! let count = if h.is_new() { 0 } else { ess.read(h).0 };
//! ess.write(h, Value(count + 1));
//!
//! assert_eq!(ess.get(at(9_999), Tag(0xC0FFEE)), Some(Value(1)));
//! assert_eq!(ess.get(at(10_000), Tag(0xC0FFEE)), None); // gone after τ
//!
//! // Full: live bindings are never evicted.
//! for tag in 1..=16 {
//!     ess.put(at(10_000), Tag(tag), Value(tag))?;
//! }
//! assert_eq!(ess.put(at(10_000), Tag(99), Value(0)), Err(Full));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(test)]
extern crate std;

mod batch;
mod chain;
mod config;
mod hash;
#[cfg(feature = "alloc")]
pub mod oracle;
#[cfg(feature = "alloc")]
mod shard;
mod stats;
mod store;
mod tables;
mod time;

pub use batch::BATCH;
pub use config::{ConfigError, EssConfig, HashRatio, MAX_CAPACITY_LOG2, MAX_LIFETIME_UNITS};
pub use hash::HashKey;
/// The caller's time, in ticks of its clock: [`sansio::Instant`], the one type every core
/// (and `netsim`) shares.
pub use sansio::Instant;
#[cfg(feature = "alloc")]
pub use shard::{ShardRouter, ShardedEss};
pub use stats::{ChainStats, HISTOGRAM_LEN};
pub use store::{Counters, DefaultTables, Ess, Full, Handle, Probe};
#[cfg(feature = "alloc")]
pub use tables::OwnedTables;
pub use tables::{BorrowedTables, Entry, Tables};

/// A 64-bit tag: the name of a binding, chosen at random by its users (§2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Tag(pub u64);

/// A 64-bit value bound to a tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "bytemuck", derive(bytemuck::Pod, bytemuck::Zeroable))]
#[repr(transparent)]
pub struct Value(pub u64);

impl From<u64> for Tag {
    fn from(x: u64) -> Self {
        Tag(x)
    }
}

impl From<Tag> for u64 {
    fn from(t: Tag) -> Self {
        t.0
    }
}

impl From<u64> for Value {
    fn from(x: u64) -> Self {
        Value(x)
    }
}

impl From<Value> for u64 {
    fn from(v: Value) -> Self {
        v.0
    }
}
