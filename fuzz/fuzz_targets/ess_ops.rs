//! Differential fuzzing of `ess::Ess` against `ess::oracle::Oracle`.
//!
//! The first bytes choose a small store (capacity 2^1..=2^6, a small lifetime and clock
//! resolution or a lifetime near the 2^31-unit limit, h from 0.5 to 4, a hash key); the rest
//! is a sequence of operations (single calls and batches) run on both the store and the
//! oracle. Time moves forward in small steps, sometimes backwards (both read an earlier
//! `now` as the latest one seen), and sometimes jumps 2^32 clock units or more (where
//! 32-bit expiries could alias). Tags come from a set about twice the capacity, so chains
//! collide, the store fills, and tags are re-created after they expire.
//!
//! After every operation the visible results must agree: values, *nil*, `Full`,
//! `Handle::is_new`, the creation and refusal counters; `occupied()` stays within the
//! capacity and never below the live count, and equals it after `clean_all`. Every
//! `Check` also compares every tag and `chain_stats(now).visible` with the oracle.
#![no_main]

use arbitrary::Arbitrary;
use ess::oracle::Oracle;
use ess::{
    Ess, EssConfig, Full, Handle, HashKey, HashRatio, Instant, MAX_LIFETIME_UNITS, Tag, Value,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    setup: Setup,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
struct Setup {
    /// log2 of the capacity: 1 + `log2 % 6`.
    log2: u8,
    /// Lifetime in clock units: 1 + `units % 16`, or just under 2^31 if the top bit is set.
    units: u8,
    /// Clock resolution in ticks: 1 + `resolution % 8`.
    resolution: u8,
    /// h in quarters: 2 + `quarters % 15`.
    quarters: u8,
    /// The hash key's seed.
    seed: u64,
    /// The starting time.
    start: Step,
}

/// How `now` moves before an operation.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    /// Forward a few ticks.
    Forward(u8),
    /// Backward a few ticks (the store reads this as the latest time it has seen).
    Back(u8),
    /// Forward 2^32 clock units times 1..=4, plus a few ticks.
    Wrap(u8),
    /// Forward 2^(32 + k % 28) ticks.
    Far(u8),
}

#[derive(Arbitrary, Debug)]
struct Op {
    step: Step,
    kind: Kind,
}

#[derive(Arbitrary, Debug)]
enum Kind {
    /// `get`, and `probe`/`find` + `read`; remembers the handle.
    Find { tag: u8 },
    /// `find_create`, optionally writing through the handle; remembers the handle.
    FindCreate { tag: u8, write: Option<u64> },
    /// `put`.
    Put { tag: u8, value: u64 },
    /// `read` through the remembered handle, if it is still valid.
    ReadLast,
    /// `write` through the remembered handle, if it is still valid.
    WriteLast { value: u64 },
    /// `clean` with a small budget.
    Clean { budget: u8 },
    /// `clean_all`.
    CleanAll,
    /// `find_batch` then `find_create_batch` over a list of tags (repeats allowed), each
    /// answer compared with the oracle taking the tags one at a time.
    Batch { tags: Vec<u8> },
    /// Compare every tag, `chain_stats` and the live count.
    Check,
}

/// A handle, the tag it was found for, and the `now` it was found at. Valid until the next
/// `&mut` call other than `write`.
#[derive(Clone, Copy, Debug)]
struct Remembered {
    handle: Handle,
    tag: Tag,
    now: Instant,
}

struct Harness {
    ess: Ess,
    oracle: Oracle,
    capacity: usize,
    resolution: u64,
    tag_count: u64,
    now: u64,
    last: Option<Remembered>,
    created: u64,
    refused: u64,
}

impl Harness {
    fn new(setup: &Setup) -> Self {
        let log2 = 1 + setup.log2 % 6;
        let resolution = 1 + u64::from(setup.resolution % 8);
        let units = if setup.units & 0x80 != 0 {
            MAX_LIFETIME_UNITS - u64::from(setup.units & 0x7f)
        } else {
            1 + u64::from(setup.units % 16)
        };
        let h = HashRatio::from_quarters(2 + setup.quarters % 15)
            .expect("2..=16 quarters is a valid ratio");
        let config = EssConfig::new(
            log2,
            units * resolution,
            resolution,
            HashKey::from_seed(setup.seed),
        )
        .expect("the derived config is valid")
        .with_hash_ratio(h);
        let capacity = config.capacity();
        let mut harness = Harness {
            ess: Ess::new(config),
            oracle: Oracle::new(&config),
            capacity,
            resolution,
            tag_count: 2 * capacity as u64 + 1,
            now: 0,
            last: None,
            created: 0,
            refused: 0,
        };
        harness.step(setup.start);
        harness
    }

    /// The tag numbered `i` (mod the tag count): 0 and `u64::MAX` included, since an empty
    /// tag-table slot holds tag 0.
    fn tag(&self, i: u64) -> Tag {
        match i % self.tag_count {
            0 => Tag(0),
            1 => Tag(u64::MAX),
            k => Tag(k.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        }
    }

    fn step(&mut self, step: Step) {
        self.now = match step {
            Step::Forward(k) => self.now.saturating_add(u64::from(k % 32)),
            Step::Back(k) => self.now.saturating_sub(u64::from(k % 32)),
            Step::Wrap(k) => self
                .now
                .saturating_add(
                    (1u64 << 32)
                        .saturating_mul(self.resolution)
                        .saturating_mul(1 + u64::from(k % 4)),
                )
                .saturating_add(u64::from(k >> 2)),
            Step::Far(k) => self.now.saturating_add(1u64 << (32 + k % 28)),
        };
    }

    fn at(&self) -> Instant {
        Instant::from_ticks(self.now)
    }

    fn run(&mut self, op: &Op) {
        self.step(op.step);
        let now = self.at();
        match op.kind {
            Kind::Find { tag } => {
                let tag = self.tag(u64::from(tag));
                let want = self.oracle.get(now, tag);
                assert_eq!(self.ess.get(now, tag), want, "get({tag:?}) at {now}");
                let probe = self.ess.probe(now, tag);
                assert_eq!(
                    probe.found,
                    self.ess.find(now, tag),
                    "probe and find disagree"
                );
                assert!(
                    probe.entries_examined as usize <= self.capacity,
                    "walked past the capacity: {probe:?}"
                );
                match probe.found {
                    Some(handle) => {
                        assert!(!handle.is_new(), "find returned a new handle");
                        assert_eq!(
                            Some(self.ess.read(handle)),
                            want,
                            "read after find({tag:?}) at {now}"
                        );
                        self.last = Some(Remembered { handle, tag, now });
                    }
                    None => assert_eq!(want, None, "find({tag:?}) at {now} missed a live binding"),
                }
            }
            Kind::FindCreate { tag, write } => {
                let tag = self.tag(u64::from(tag));
                let got = self.ess.find_create(now, tag);
                let want = self.oracle.find_create(now, tag);
                self.last = None;
                match (got, want) {
                    (Ok(handle), Ok(created)) => {
                        assert_eq!(
                            handle.is_new(),
                            created,
                            "is_new of find_create({tag:?}) at {now}"
                        );
                        self.created += u64::from(created);
                        let value = self.oracle.get(now, tag);
                        if let Some(v) = value {
                            assert_eq!(
                                self.ess.read(handle),
                                v,
                                "read after find_create({tag:?}) at {now}"
                            );
                        }
                        if let Some(w) = write {
                            self.ess.write(handle, Value(w));
                            self.oracle.write(tag, Value(w));
                        }
                        self.last = Some(Remembered { handle, tag, now });
                    }
                    (Err(Full), Err(Full)) => self.refused += 1,
                    (got, want) => {
                        panic!("find_create({tag:?}) at {now}: ess {got:?}, oracle {want:?}")
                    }
                }
                assert_eq!(
                    self.ess.get(now, tag),
                    self.oracle.get(now, tag),
                    "get({tag:?}) after find_create"
                );
            }
            Kind::Put { tag, value } => {
                let tag = self.tag(u64::from(tag));
                let got = self.ess.put(now, tag, Value(value));
                // `Oracle::put` is `find_create` then `write`; split, to count creations.
                let want = self.oracle.find_create(now, tag);
                self.last = None;
                assert_eq!(got, want.map(|_| ()), "put({tag:?}, {value}) at {now}");
                match want {
                    Ok(created) => {
                        self.oracle.write(tag, Value(value));
                        self.created += u64::from(created);
                    }
                    Err(Full) => self.refused += 1,
                }
                assert_eq!(
                    self.ess.get(now, tag),
                    self.oracle.get(now, tag),
                    "get({tag:?}) after put"
                );
            }
            Kind::ReadLast => {
                if let Some(r) = self.last {
                    let want = self.oracle.get(r.now, r.tag);
                    assert!(
                        want.is_some() || r.handle.is_new(),
                        "remembered handle for a dead binding"
                    );
                    if let Some(v) = want {
                        assert_eq!(self.ess.read(r.handle), v, "read through remembered {r:?}");
                    }
                }
            }
            Kind::WriteLast { value } => {
                if let Some(r) = self.last {
                    self.ess.write(r.handle, Value(value));
                    self.oracle.write(r.tag, Value(value));
                    assert_eq!(
                        self.ess.get(r.now, r.tag),
                        self.oracle.get(r.now, r.tag),
                        "get after write {r:?}"
                    );
                }
            }
            Kind::Clean { budget } => {
                let budget = usize::from(budget % 8);
                let n = self.ess.clean(now, budget);
                self.oracle.observe(now);
                self.last = None;
                assert!(n <= budget, "clean reclaimed {n} with budget {budget}");
            }
            Kind::Batch { ref tags } => {
                let tags: Vec<Tag> = tags
                    .iter()
                    .take(80)
                    .map(|&t| self.tag(u64::from(t)))
                    .collect();
                let mut found = vec![None; tags.len()];
                self.ess.find_batch(now, &tags, &mut found);
                for (t, f) in tags.iter().zip(&found) {
                    let got = f.map(|h| self.ess.read(h));
                    assert_eq!(got, self.oracle.get(now, *t), "find_batch({t:?}) at {now}");
                }
                let mut out = vec![Err(Full); tags.len()];
                self.ess.find_create_batch(now, &tags, &mut out);
                self.last = None;
                for (t, got) in tags.iter().zip(out) {
                    let want = self.oracle.find_create(now, *t);
                    assert_eq!(
                        got.map(|h| h.is_new()),
                        want,
                        "find_create_batch({t:?}) at {now}"
                    );
                    self.created += u64::from(want == Ok(true));
                    self.refused += u64::from(want.is_err());
                }
            }
            Kind::CleanAll => {
                self.ess.clean_all(now);
                self.oracle.observe(now);
                self.last = None;
                let live = self.oracle.live(now);
                assert_eq!(
                    self.ess.occupied(),
                    live,
                    "occupied after clean_all at {now}"
                );
                // The next deadline is the oldest live binding's expiry.
                let oldest = (0..self.tag_count)
                    .filter_map(|i| self.oracle.expiry(now, self.tag(i)))
                    .min();
                assert_eq!(
                    self.ess.poll_timeout(),
                    oldest,
                    "poll_timeout after clean_all at {now}"
                );
            }
            Kind::Check => {
                for i in 0..self.tag_count {
                    let tag = self.tag(i);
                    assert_eq!(
                        self.ess.get(now, tag),
                        self.oracle.get(now, tag),
                        "sweep: get({tag:?}) at {now}"
                    );
                }
                let stats = self.ess.chain_stats(now);
                let live = self.oracle.live(now);
                assert_eq!(stats.visible, live as u64, "chain_stats.visible at {now}");
                assert!(
                    stats.max_chain as usize <= live,
                    "max_chain {} > live {live}",
                    stats.max_chain
                );
            }
        }
        let counters = self.ess.counters();
        assert_eq!(counters.created, self.created, "created counter");
        assert_eq!(counters.refused, self.refused, "refused counter");
        let occupied = self.ess.occupied();
        assert!(
            occupied <= self.capacity,
            "occupied {occupied} > capacity {}",
            self.capacity
        );
        assert!(
            occupied >= self.oracle.live(now),
            "occupied {occupied} < live {}",
            self.oracle.live(now)
        );
    }
}

fuzz_target!(|input: Input| {
    let mut harness = Harness::new(&input.setup);
    for op in &input.ops {
        harness.run(op);
    }
});
