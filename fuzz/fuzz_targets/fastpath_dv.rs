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
#![no_main]

use arbitrary::Arbitrary;
use fastpath::dv::host::FirstHop;
use fastpath::dv::wire::{AdvEntry, Advertisement, MessageKind, UNREACHABLE};
use fastpath::dv::{Config, Router};
use fastpath::threaded::{MAX_INDEX, NextHop};
use libfuzzer_sys::fuzz_target;

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
}

const ME: u32 = 1;

fn check(r: &mut Router, now: u64) {
    let inf = r.config().infinity;
    let links: Vec<(u16, u16)> = r.links().collect();
    let me = r.route(ME).expect("a router always reaches itself");
    assert_eq!((me.cost, me.index, me.next_hop), (0, 0, NextHop::Local));
    for route in r.routes() {
        assert!(route.cost <= inf);
        assert!(route.next_index <= MAX_INDEX);
        assert!((route.index as usize) < r.table().len());
        assert_eq!(r.index_of(route.dest), Some(route.index));
        let entry = r.table().get(route.index);
        if route.dest == ME {
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
    if r.poll_timeout() <= now {
        r.handle_timeout(now);
    }
    while let Some(t) = r.poll_transmit() {
        assert!(
            links.iter().any(|&(l, _)| l == t.iface),
            "sent on a down link"
        );
        let adv = Advertisement::parse(&t.bytes).expect("our own messages parse");
        assert_eq!(adv.sender(), ME);
        assert!(adv.entries().all(|e| e.cost <= inf));
    }
}

fuzz_target!(|events: Vec<Event>| {
    let mut now = 0u64;
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
            Event::Advance { ms } => now += u64::from(ms % 10_000),
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
        }
        check(&mut r, now);
    }
});
