//! Shared by the criterion bench (`benches/esp.rs`) and the callgrind driver
//! (`examples/per_packet.rs`), so both measure the same code: a warm store, the packets, and
//! one step per measured operation.
//!
//! Every step starts by copying its packet from a template into a reused buffer (ESP
//! rewrites operands in place, and the TTL goes down), baseline included, so the copy costs
//! the same on both sides of a ratio.
//!
//! * [`Baseline`]: what every router does to an IPv4 packet (20-byte header, 28 bytes of
//!   payload) anyway: check the fixed header (version, IHL, total length), read the
//!   destination, decrement the TTL with the incremental checksum update (RFC 1624). Once
//!   with our `wire::addresses` + `wire::decrement_ttl`, once with etherparse's
//!   `Ipv4HeaderSlice` plus a hand-written TTL/checksum update.
//! * [`PerPacket::header_only`]: `process` on a bare ESP header (parse → execute → emit).
//! * [`PerPacket::full_packet`]: the baseline work, then `locate` + `process` on a dedicated
//!   IPv4 ESP packet: what a router does per ESP packet.
//!
//! The store holds 2^16 bindings and is half full of other bindings; time stands still
//! (lifetime 2^30 ticks), so nothing expires and every packet takes the same path.
//! [`PerPacket::new`] checks that path before anything is measured.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

use esp_proto::endpoint::Endpoint;
use esp_proto::exec::{Context, Env, Processed, Verdict, process};
use esp_proto::idmap::IdMap;
use esp_proto::instr::{CombineOp, CompareOp, Instruction, Robust};
use esp_proto::wire::{Header, Loc, addresses, decrement_ttl, locate};
use ess::{Ess, EssConfig, Handle, HashKey, Instant, Tag, Value};
/// The splitmix64 finaliser, to scatter the fill's tags over the hash table.
use sansio::mix64 as mix;

/// log2 of the store's capacity.
pub(crate) const LOG2: u8 = 16;
/// Other bindings in the store: half of its capacity.
pub(crate) const FILL: u64 = 1 << (LOG2 - 1);
/// Binding lifetime in ticks: far beyond any run, so nothing expires.
const LIFETIME: u64 = 1 << 30;
/// The fill creates tag `i` at tick `i`; every packet runs at this tick.
const NOW: Instant = Instant::from_ticks(FILL);
/// The computation's ID.
const CID: u32 = 0x00C0_FFEE;
/// Bits per IDmap (the paper's §4.3 experiment).
const K: u8 = 11;
/// RCOLLECT's forwarding limit (the paper's §4.3 uses 2 and 3).
const THRESH: u16 = 3;
/// First tag of the instructions' own bindings (the fill's tags are scrambled numbers; a
/// clash has probability about 2^-40).
const TAG_BASE: u64 = 1 << 62;
/// Payload bytes of the baseline packet (20 + 28 = 48 bytes in all).
const BASELINE_PAYLOAD: usize = 28;

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);

/// The work every router does on an IPv4 packet: check the fixed header, read the
/// destination, decrement the TTL (incremental checksum). `None` if the packet is dropped.
#[inline(always)]
fn route(p: &mut [u8]) -> Option<IpAddr> {
    let (_, dst) = addresses(p).ok()?;
    (decrement_ttl(p).ok()? > 0).then_some(dst)
}

/// The same with etherparse's header view and a hand-written TTL and checksum update.
#[inline(always)]
fn route_etherparse(p: &mut [u8]) -> Option<Ipv4Addr> {
    let header = etherparse::Ipv4HeaderSlice::from_slice(p).ok()?;
    // etherparse checks version, IHL and the slice length; the total length is ours.
    let total = usize::from(header.total_len());
    if total < header.slice().len() || total > p.len() {
        return None;
    }
    let dst = header.destination_addr();
    let ttl = header.ttl();
    if ttl <= 1 {
        return None;
    }
    p[8] = ttl - 1;
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), and ~m + m' = 0xFEFF when the TTL drops by 1.
    let sum = u32::from(!u16::from_be_bytes([p[10], p[11]])) + 0xFEFF;
    [p[10], p[11]] = (!(((sum & 0xFFFF) + (sum >> 16)) as u16)).to_be_bytes();
    Some(dst)
}

/// A plain 48-byte IPv4 packet (UDP-like, no options) with a correct header checksum.
fn baseline_packet() -> Vec<u8> {
    let total = 20 + BASELINE_PAYLOAD;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&SRC.octets());
    p[16..20].copy_from_slice(&DST.octets());
    let mut sum: u32 = p[..20]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p
}

/// The IPv4 forwarding baseline.
pub(crate) struct Baseline {
    template: Vec<u8>,
    buf: Vec<u8>,
}

impl Baseline {
    pub(crate) fn new() -> Baseline {
        let template = baseline_packet();
        let mut b = Baseline {
            buf: template.clone(),
            template,
        };
        assert_eq!(b.ours(), Some(IpAddr::V4(DST)));
        assert!(esp_proto::wire::ipv4_checksum_ok(&b.buf));
        assert_eq!(b.etherparse(), Some(DST));
        assert!(esp_proto::wire::ipv4_checksum_ok(&b.buf));
        b
    }

    /// Copy, then our `addresses` + `decrement_ttl`.
    #[inline]
    pub(crate) fn ours(&mut self) -> Option<IpAddr> {
        self.buf.copy_from_slice(&self.template);
        route(black_box(&mut self.buf[..]))
    }

    /// Copy, then etherparse's `Ipv4HeaderSlice` + hand-written TTL/checksum.
    #[inline]
    pub(crate) fn etherparse(&mut self) -> Option<Ipv4Addr> {
        self.buf.copy_from_slice(&self.template);
        route_etherparse(black_box(&mut self.buf[..]))
    }
}

/// One measured instruction and the path it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    /// COUNT on a bound counter, under the threshold: `find_create` hit, read, write;
    /// forwarded.
    Count,
    /// COMPARE (≤) on a bound value: `find_create` hit, read, compare, write; forwarded.
    Compare,
    /// COLLECT with a huge child count, so it never completes: `find` of the count,
    /// `find_create` hit of the value, fold, count down; dropped (the path of every report
    /// but a node's last).
    Collect,
    /// RCOLLECT with a `words`-word IDmap.
    ///
    /// `new_child == false`, the *duplicate* path: the packet's IDmap is already in the
    /// heard filter, which equals RCHLD's filter, and the forwarding count is past the
    /// limit: 3w + 3 lookups, no writes but the count; dropped.
    ///
    /// `new_child == true`, the *new child* path at a node's last child: the IDmap is new,
    /// OR-ed into the heard filter, the value folded, the filters then match, the count is
    /// within the limit, so the node's own IDmap (`IdMap::for_node`, k = 11) replaces the
    /// packet's; forwarded. The heard filter and the count are put back before each packet
    /// (`w + 1` writes through stored handles, included in the figures).
    Rcollect { words: u8, new_child: bool },
}

impl Case {
    pub(crate) const ALL: [Case; 7] = [
        Case::Count,
        Case::Compare,
        Case::Collect,
        Case::Rcollect {
            words: 1,
            new_child: false,
        },
        Case::Rcollect {
            words: 1,
            new_child: true,
        },
        Case::Rcollect {
            words: 8,
            new_child: false,
        },
        Case::Rcollect {
            words: 8,
            new_child: true,
        },
    ];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            Case::Count => "count",
            Case::Compare => "compare",
            Case::Collect => "collect",
            Case::Rcollect {
                words: 1,
                new_child: false,
            } => "rcollect1_dup",
            Case::Rcollect {
                words: 1,
                new_child: true,
            } => "rcollect1_new",
            Case::Rcollect {
                new_child: false, ..
            } => "rcollect8_dup",
            Case::Rcollect {
                new_child: true, ..
            } => "rcollect8_new",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The verdict every packet of this case gets.
    const fn verdict(self) -> Verdict {
        match self {
            Case::Count | Case::Compare => Verdict::Forward,
            Case::Collect => Verdict::Drop,
            Case::Rcollect { new_child, .. } => {
                if new_child {
                    Verdict::Forward
                } else {
                    Verdict::Drop
                }
            }
        }
    }
}

/// A warm store with one instruction's state set up, its packets, and reused buffers.
pub(crate) struct PerPacket {
    ess: Ess,
    env: Env,
    header: Vec<u8>,
    packet: Vec<u8>,
    header_buf: Vec<u8>,
    packet_buf: Vec<u8>,
    /// Bindings put back before each packet (RCOLLECT's new-child path).
    reset: Vec<(Handle, Value)>,
    case: Case,
    /// Tag of the value the instruction folds or stores.
    value: Tag,
}

impl PerPacket {
    /// A store of 2^16 half full of other bindings, with `case`'s state, checked to take
    /// `case`'s path.
    pub(crate) fn new(case: Case) -> PerPacket {
        let config = EssConfig::new(LOG2, LIFETIME, 1, HashKey::from_seed(0x5EED_0E55))
            .expect("valid ESS config");
        let mut ess = Ess::new(config);
        for i in 0..FILL {
            ess.put(Instant::from_ticks(i), Tag(mix(i)), Value(i))
                .expect("room for the fill");
        }
        let env = Env::new(0x0A00_0005, HashKey::from_seed(0x1D_5EED));
        let value = Tag(TAG_BASE);
        let counter = Tag(TAG_BASE + 1);
        let forwarded = Tag(TAG_BASE + 2);
        let children = Tag(TAG_BASE + 16);
        let heard = Tag(TAG_BASE + 32);
        let mut reset = Vec::new();
        let instr = match case {
            Case::Count => {
                ess.put(NOW, counter, Value(1)).expect("room");
                Instruction::Count {
                    counter,
                    thresh: u64::MAX,
                }
            }
            Case::Compare => {
                ess.put(NOW, value, Value(1_000)).expect("room");
                Instruction::Compare {
                    value,
                    current: Value(1_000),
                    op: CompareOp::Le,
                }
            }
            Case::Collect => {
                ess.put(NOW, counter, Value(u64::MAX)).expect("room");
                ess.put(NOW, value, Value(0)).expect("room");
                Instruction::Collect {
                    value,
                    val: Value(5),
                    counter,
                    op: CombineOp::Add,
                }
            }
            Case::Rcollect { words, new_child } => {
                // The packet's sender and one other child, each with its own IDmap.
                let mine = IdMap::for_node(&HashKey::from_seed(0xC41D_0001), CID, K, words);
                let other = IdMap::for_node(&HashKey::from_seed(0xC41D_0002), CID, K, words);
                assert!(
                    !mine.is_subset_of(&other),
                    "the sender must be new to `other`"
                );
                let mut both = other;
                both.union_with(&mine);
                let before = if new_child { other } else { both };
                for (i, (&c, &h)) in both.as_words().iter().zip(before.as_words()).enumerate() {
                    ess.put(NOW, Tag(children.0 + i as u64), Value(c))
                        .expect("room");
                    ess.put(NOW, Tag(heard.0 + i as u64), Value(h))
                        .expect("room");
                    if new_child {
                        let handle = ess.find(NOW, Tag(heard.0 + i as u64)).expect("bound");
                        reset.push((handle, Value(h)));
                    }
                }
                ess.put(NOW, value, Value(0)).expect("room");
                let sent = if new_child { 0 } else { 1 << 32 };
                ess.put(NOW, forwarded, Value(sent)).expect("room");
                if new_child {
                    let handle = ess.find(NOW, forwarded).expect("bound");
                    reset.push((handle, Value(sent)));
                }
                Instruction::Rcollect {
                    value,
                    val: Value(7),
                    heard,
                    children,
                    forwarded,
                    op: CombineOp::Add,
                    robust: Robust {
                        thresh: THRESH,
                        k: K,
                        idmap: mine,
                    },
                }
            }
        };
        let ep = Endpoint::new(CID, SRC.into())
            .with_dest(DST.into())
            .with_loc(Loc::OUTPUT);
        let header = ep.instruction(&instr).expect("encodable");
        let packet = ep.packet(&instr).expect("encodable");
        let mut p = PerPacket {
            ess,
            env,
            header_buf: header.clone(),
            packet_buf: packet.clone(),
            header,
            packet,
            reset,
            case,
            value,
        };
        p.check();
        p
    }

    /// Runs each step a few times and checks the path: no abort, the case's verdict, and
    /// the value folded (new RCOLLECT child, COLLECT) or left alone (duplicate).
    fn check(&mut self) {
        for _ in 0..3 {
            let before = self.ess.get(NOW, self.value);
            let a = self.header_only();
            let mid = self.ess.get(NOW, self.value);
            let b = self.full_packet();
            let after = self.ess.get(NOW, self.value);
            for got in [a, b] {
                assert_eq!(got.abort, None, "{:?}", self.case);
                assert_eq!(got.verdict, self.case.verdict(), "{:?}", self.case);
            }
            match self.case {
                Case::Collect
                | Case::Rcollect {
                    new_child: true, ..
                } => {
                    assert!(before != mid && mid != after, "{:?} must fold", self.case);
                }
                Case::Rcollect {
                    new_child: false, ..
                } => assert!(before == mid && mid == after, "a duplicate folds nothing"),
                Case::Count | Case::Compare => {}
            }
        }
    }

    /// Puts back the bindings the previous packet changed (RCOLLECT's new-child path).
    #[inline(always)]
    pub(crate) fn reset(&mut self) {
        for &(h, v) in &self.reset {
            self.ess.write(h, v);
        }
    }

    /// Copy the ESP header, then `process` it: parse → execute → emit.
    #[inline]
    pub(crate) fn header_only(&mut self) -> Processed {
        self.reset();
        self.header_buf.copy_from_slice(&self.header);
        let Ok(mut header) = Header::new_checked(black_box(&mut self.header_buf[..])) else {
            return Processed::PASS;
        };
        let cid = header.cid();
        process(
            &mut Context::new(&mut self.ess, &self.env, cid),
            NOW,
            &mut header,
        )
    }

    /// Copy the IPv4 packet, do the baseline's work, then `locate` + `process`.
    #[inline]
    pub(crate) fn full_packet(&mut self) -> Processed {
        self.reset();
        self.packet_buf.copy_from_slice(&self.packet);
        let p = black_box(&mut self.packet_buf[..]);
        if black_box(route(p)).is_none() {
            return Processed {
                verdict: Verdict::Drop,
                abort: None,
            };
        }
        let Ok(Some(located)) = locate(p) else {
            return Processed::PASS;
        };
        let Ok(mut header) = located.header_mut(p) else {
            return Processed::PASS;
        };
        if !header.loc().contains(Loc::OUTPUT) {
            return Processed::PASS;
        }
        let cid = header.cid();
        process(
            &mut Context::new(&mut self.ess, &self.env, cid),
            NOW,
            &mut header,
        )
    }

    /// Bytes of the ESP header and of the dedicated packet.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (self.header.len(), self.packet.len())
    }
}
