//! A distance-vector router fed arbitrary advertisement bytes, well-formed advertisements
//! with arbitrary contents, link events and clock jumps.
//!
//! Asserts after every event: nothing panics; every cost is at most infinity; the router
//! reaches itself at cost 0 at index 0; every index is in range and names its destination;
//! a reachable route goes out of a link that is up and the threaded table holds exactly
//! that entry; an unreachable one has an empty table entry; every message it sends parses,
//! goes out of an up link and advertises no cost above infinity. Host index queries (and
//! arbitrary bytes sent to the query entry point) are answered without changing a route:
//! one answer entry per asked destination, each the router's own index and cost, or
//! `UNREACHABLE` with index 0, and a host cache takes the answer.
//!
//! Prefixes: well-formed prefix updates (kind 5) with arbitrary IPv4 and IPv6 prefixes,
//! prefix-update headers over arbitrary entry bytes (so the entry checks run), local
//! prefixes added and withdrawn, and address queries. Also asserted: a local prefix is
//! reached at cost 0 and delivered locally; longest-prefix match holds exactly the
//! reachable prefix routes (an address in a reachable prefix matches it or a longer
//! reachable one, with the route `route_to` gives); every sent message fits one datagram
//! and re-emits to the same bytes; an address answer has one entry per asked address,
//! the longest reachable prefix holding it or the address at `UNREACHABLE`.
#![no_main]

use arbitrary::Arbitrary;
use fastpath::dv::host::FirstHop;
use fastpath::dv::wire::{
    AdvEntry, Advertisement, MAX_MESSAGE_LEN, MessageKind, PrefixEntry, UNREACHABLE,
};
use fastpath::dv::{Config, Dest, Router};
use fastpath::lpm::{IpPrefix, Prefix, Prefix6};
use fastpath::threaded::{MAX_INDEX, NextHop};
use libfuzzer_sys::fuzz_target;
use sansio::{Instant, MILLIS};

#[derive(Arbitrary, Debug)]
enum Event {
    LinkUp {
        iface: u8,
        cost: u8,
    },
    LinkDown {
        iface: u8,
    },
    Raw {
        iface: u8,
        bytes: Vec<u8>,
    },
    Update {
        iface: u8,
        sender: u8,
        entries: Vec<(u8, u8, u16)>,
    },
    Request {
        iface: u8,
        sender: u8,
    },
    Advance {
        ms: u32,
    },
    Query {
        dests: Vec<u8>,
    },
    RawQuery {
        bytes: Vec<u8>,
    },
    PrefixUpdate {
        iface: u8,
        sender: u8,
        entries: Vec<(RawPrefix, u8, u16)>,
    },
    /// A kind 5 header with the right count over arbitrary entry bytes.
    RawPrefixUpdate {
        iface: u8,
        sender: u8,
        body: Vec<u8>,
    },
    AddLocal {
        prefix: RawPrefix,
    },
    RemoveLocal {
        prefix: RawPrefix,
    },
    AddressQuery {
        addrs: Vec<RawPrefix>,
    },
}

/// A prefix from a small space (so that updates, local prefixes and queries meet):
/// IPv4 under 10.0.0.0/16, IPv6 under 2001:db8::/112.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct RawPrefix {
    v6: bool,
    len: u8,
    low: u16,
}

impl RawPrefix {
    fn v4_bits(self) -> u32 {
        0x0a00_0000 | u32::from(self.low)
    }

    fn v6_bits(self) -> u128 {
        (0x2001_0db8u128 << 96) | u128::from(self.low)
    }

    fn prefix(self) -> IpPrefix {
        if self.v6 {
            let len = 112 + self.len % 17;
            let a = self.v6_bits() & (u128::MAX << (128 - u32::from(len)));
            IpPrefix::V6(Prefix6::new(a.to_be_bytes(), len).expect("masked"))
        } else {
            let len = 16 + self.len % 17;
            let a = self.v4_bits() & (u32::MAX << (32 - u32::from(len)));
            IpPrefix::V4(Prefix::new(a.to_be_bytes(), len).expect("masked"))
        }
    }

    /// The same bits as a full-length address.
    fn addr(self) -> IpPrefix {
        if self.v6 {
            IpPrefix::V6(Prefix6::new(self.v6_bits().to_be_bytes(), 128).expect("full"))
        } else {
            IpPrefix::V4(Prefix::new(self.v4_bits().to_be_bytes(), 32).expect("full"))
        }
    }
}

fn lookup(r: &Router, addr: IpPrefix) -> Option<(IpPrefix, fastpath::dv::Route)> {
    match addr {
        IpPrefix::V4(a) => r.lookup_v4(a.addr()).map(|(p, x)| (IpPrefix::V4(p), x)),
        IpPrefix::V6(a) => r.lookup_v6(a.addr()).map(|(p, x)| (IpPrefix::V6(p), x)),
    }
}

const ME: u32 = 1;

fn check(r: &mut Router, now: Instant) {
    let inf = r.config().infinity;
    let links: Vec<(u16, u16)> = r.links().collect();
    let me = r.route(ME).expect("a router always reaches itself");
    assert_eq!((me.cost, me.index, me.next_hop), (0, 0, NextHop::Local));
    let local: Vec<IpPrefix> = r.local_prefixes().collect();
    for route in r.routes() {
        assert!(route.cost <= inf);
        assert!(route.next_index <= MAX_INDEX);
        assert!((route.index as usize) < r.table().len());
        assert_eq!(r.index_of_dest(route.dest), Some(route.index));
        let entry = r.table().get(route.index);
        if let Some(p) = route.dest.prefix() {
            // Longest-prefix match holds exactly the reachable prefix routes.
            let addr = match p {
                IpPrefix::V4(p) => IpPrefix::V4(Prefix::new(p.addr(), 32).expect("full")),
                IpPrefix::V6(p) => IpPrefix::V6(Prefix6::new(p.addr(), 128).expect("full")),
            };
            match lookup(r, addr) {
                Some((q, found)) => {
                    assert!(found.cost < inf, "LPM holds an unreachable route");
                    assert_eq!(r.route_to(q), Some(found));
                    if route.cost < inf {
                        assert!(q.len() >= p.len(), "a shorter prefix hides {p:?}");
                    } else {
                        assert_ne!(q, p, "LPM matched an unreachable prefix");
                    }
                }
                None => assert_eq!(route.cost, inf, "reachable {p:?} not in LPM"),
            }
            if local.contains(&p) {
                assert_eq!((route.cost, route.next_hop), (0, NextHop::Local));
                let entry = entry.expect("a local prefix has a table entry");
                assert_eq!(entry.next_hop, NextHop::Local);
                continue;
            }
        }
        if route.dest == Dest::Router(ME) {
            continue;
        }
        if route.cost < inf {
            let NextHop::Neighbour(i) = route.next_hop else {
                panic!("a remote destination delivered locally: {route:?}");
            };
            assert!(links.iter().any(|&(l, _)| l == i), "route via a down link");
            let entry = entry.expect("reachable route has a table entry");
            assert_eq!(
                (entry.next_hop, entry.next_index),
                (route.next_hop, route.next_index)
            );
        } else {
            assert_eq!(entry, None, "unreachable route still forwards");
        }
    }
    if r.poll_timeout().is_some_and(|t| t <= now) {
        r.handle_timeout(now);
    }
    while let Some(t) = r.poll_transmit() {
        assert!(
            links.iter().any(|&(l, _)| l == t.iface),
            "sent on a down link"
        );
        assert!(
            t.bytes.len() <= MAX_MESSAGE_LEN,
            "a message over one datagram"
        );
        let adv = Advertisement::parse(&t.bytes).expect("our own messages parse");
        assert_eq!(adv.sender(), ME);
        assert!(adv.dest_entries().all(|e| e.cost <= inf));
        assert!(adv.len() <= r.config().max_entries);
        let mut again = Vec::new();
        if adv.kind().has_prefix_entries() {
            let entries: Vec<PrefixEntry> = adv.prefix_entries().collect();
            Advertisement::emit_prefixes(adv.kind(), ME, &entries, &mut again);
        } else {
            let entries: Vec<AdvEntry> = adv.entries().collect();
            Advertisement::emit(adv.kind(), ME, &entries, &mut again);
        }
        assert_eq!(again, t.bytes, "re-emitting changed the bytes");
    }
}

fuzz_target!(|events: Vec<Event>| {
    let mut now = Instant::ZERO;
    let mut config = Config::new(ME);
    config.triggered_delay = 10;
    config.update_interval = 1_000;
    config.route_timeout = 5_000;
    config.gc_timeout = 3_000;
    config.max_entries = 7;
    config.max_destinations = 64;
    let mut r = Router::new(config, now);
    for ev in events.into_iter().take(256) {
        match ev {
            Event::LinkUp { iface, cost } => {
                let _ = r.link_up(now, u16::from(iface % 8), u16::from(cost % 20));
            }
            Event::LinkDown { iface } => {
                let _ = r.link_down(now, u16::from(iface % 8));
            }
            Event::Raw { iface, bytes } => {
                let _ = r.handle_message(now, u16::from(iface % 8), &bytes);
            }
            Event::Update {
                iface,
                sender,
                entries,
            } => {
                let entries: Vec<AdvEntry> = entries
                    .into_iter()
                    .take(200)
                    .map(|(d, c, i)| AdvEntry {
                        dest: u32::from(d % 80),
                        cost: u16::from(c % 20),
                        index: u32::from(i),
                    })
                    .collect();
                let mut bytes = Vec::new();
                Advertisement::emit(
                    MessageKind::Update,
                    u32::from(sender % 8),
                    &entries,
                    &mut bytes,
                );
                let _ = r.handle_message(now, u16::from(iface % 8), &bytes);
            }
            Event::Request { iface, sender } => {
                let mut bytes = Vec::new();
                Advertisement::emit(MessageKind::Request, u32::from(sender % 8), &[], &mut bytes);
                let _ = r.handle_message(now, u16::from(iface % 8), &bytes);
            }
            Event::Advance { ms } => now = now.saturating_add(u64::from(ms % 10_000) * MILLIS),
            Event::Query { dests } => {
                let dests: Vec<u32> = dests.iter().take(64).map(|&d| u32::from(d % 80)).collect();
                let mut host = FirstHop::new(900, 1_000, 64);
                let mut query = Vec::new();
                let asked = host.query(now, &dests, &mut query);
                if asked > 0 {
                    let routes: Vec<_> = r.routes().collect();
                    let mut answer = Vec::new();
                    assert_eq!(r.answer_query(&query, &mut answer), Ok(asked));
                    assert_eq!(
                        r.routes().collect::<Vec<_>>(),
                        routes,
                        "a query changed a route"
                    );
                    let adv = Advertisement::parse(&answer).expect("our answers parse");
                    assert_eq!(adv.kind(), MessageKind::IndexAnswer);
                    assert_eq!(adv.len(), asked);
                    let inf = r.config().infinity;
                    for e in adv.entries() {
                        match r.route(e.dest).filter(|route| route.cost < inf) {
                            Some(route) => assert_eq!((e.index, e.cost), (route.index, route.cost)),
                            None => assert_eq!((e.index, e.cost), (0, UNREACHABLE)),
                        }
                    }
                    let learned = host.handle_answer(now, &answer).expect("answer parses");
                    assert!(learned <= asked);
                }
            }
            Event::RawQuery { bytes } => {
                let routes: Vec<_> = r.routes().collect();
                let mut out = Vec::new();
                if r.answer_query(&bytes, &mut out).is_err() {
                    assert!(out.is_empty(), "a refused query wrote an answer");
                }
                assert_eq!(
                    r.routes().collect::<Vec<_>>(),
                    routes,
                    "a query changed a route"
                );
            }
            Event::PrefixUpdate {
                iface,
                sender,
                entries,
            } => {
                let entries: Vec<PrefixEntry> = entries
                    .into_iter()
                    .take(200)
                    .map(|(p, c, i)| PrefixEntry {
                        prefix: p.prefix(),
                        cost: u16::from(c % 20),
                        index: u32::from(i),
                    })
                    .collect();
                let mut bytes = Vec::new();
                Advertisement::emit_prefixes(
                    MessageKind::PrefixUpdate,
                    u32::from(sender % 8),
                    &entries,
                    &mut bytes,
                );
                let _ = r.handle_message(now, u16::from(iface % 8), &bytes);
            }
            Event::RawPrefixUpdate {
                iface,
                sender,
                body,
            } => {
                let count = u16::try_from(body.len() / 24).unwrap_or(u16::MAX);
                let mut bytes = vec![1, 5];
                bytes.extend_from_slice(&count.to_be_bytes());
                bytes.extend_from_slice(&u32::from(sender % 8).to_be_bytes());
                bytes.extend_from_slice(&body);
                let routes: Vec<_> = r.routes().collect();
                let result = r.handle_message(now, u16::from(iface % 8), &bytes);
                if result.is_err() {
                    assert_eq!(
                        r.routes().collect::<Vec<_>>(),
                        routes,
                        "a refused message changed a route"
                    );
                }
            }
            Event::AddLocal { prefix } => {
                let p = prefix.prefix();
                if let Ok(i) = r.add_local_prefix(now, p) {
                    assert_eq!(r.index_of_dest(p), Some(i));
                }
            }
            Event::RemoveLocal { prefix } => {
                let p = prefix.prefix();
                let was = r.local_prefixes().any(|q| q == p);
                assert_eq!(r.remove_local_prefix(now, p), was);
            }
            Event::AddressQuery { addrs } => {
                let asked: Vec<PrefixEntry> = addrs
                    .iter()
                    .take(64)
                    .map(|a| PrefixEntry {
                        prefix: a.addr(),
                        cost: 0,
                        index: 0,
                    })
                    .collect();
                let mut query = Vec::new();
                Advertisement::emit_prefixes(MessageKind::AddressQuery, 900, &asked, &mut query);
                let routes: Vec<_> = r.routes().collect();
                let mut answer = Vec::new();
                assert_eq!(r.answer_query(&query, &mut answer), Ok(asked.len()));
                assert_eq!(
                    r.routes().collect::<Vec<_>>(),
                    routes,
                    "a query changed a route"
                );
                let adv = Advertisement::parse(&answer).expect("our answers parse");
                assert_eq!(adv.kind(), MessageKind::AddressAnswer);
                assert_eq!(adv.len(), asked.len());
                for (q, e) in asked.iter().zip(adv.prefix_entries()) {
                    match lookup(&r, q.prefix) {
                        Some((p, route)) => {
                            assert_eq!((e.prefix, e.cost, e.index), (p, route.cost, route.index));
                        }
                        None => assert_eq!((e.prefix, e.cost, e.index), (q.prefix, UNREACHABLE, 0)),
                    }
                }
            }
        }
        check(&mut r, now);
    }
});
