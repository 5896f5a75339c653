//! Unit-level tests of one distance-vector router fed by hand-built advertisements
//! (Fig. 7's example, poisoned reverse, link failure, timeouts, bad input).
#![allow(clippy::unwrap_used)] // tests

use fastpath::dv::wire::{AdvEntry, Advertisement, MessageKind, WireError};
use fastpath::dv::{Config, HandleError, LinkError, Route, Router, RouterId, Transmit};
use fastpath::threaded::NextHop;
use sansio::Instant;

/// `t` milliseconds after the origin (the router's timers count whole milliseconds).
fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn update(sender: RouterId, entries: &[(u32, u16, u32)]) -> Vec<u8> {
    let entries: Vec<AdvEntry> = entries
        .iter()
        .map(|&(dest, cost, index)| AdvEntry { dest, cost, index })
        .collect();
    let mut out = Vec::new();
    Advertisement::emit(MessageKind::Update, sender, &entries, &mut out);
    out
}

fn drain(r: &mut Router) -> Vec<Transmit> {
    core::iter::from_fn(|| r.poll_transmit()).collect()
}

fn sent_cost(t: &[Transmit], iface: u16, dest: u32) -> Option<u16> {
    t.iter()
        .filter(|t| t.iface == iface)
        .filter_map(|t| Advertisement::parse(&t.bytes).ok())
        .flat_map(|a| a.entries().collect::<Vec<_>>())
        .find(|e| e.dest == dest)
        .map(|e| e.cost)
}

const A: u16 = 1;
const B: u16 = 2;
const D: u32 = 100;

/// Fig. 7: R reaches D through A (3 + 5) or B (1 + 6); it picks B and B's index j.
fn fig7() -> Router {
    let mut r = Router::new(Config::new(1), ms(0));
    r.link_up(ms(0), A, 3).unwrap();
    r.link_up(ms(0), B, 1).unwrap();
    r.handle_message(ms(0), A, &update(10, &[(10, 0, 0), (D, 5, 4)]))
        .unwrap();
    r.handle_message(ms(0), B, &update(20, &[(20, 0, 0), (D, 6, 9)]))
        .unwrap();
    r
}

#[test]
fn fig7_picks_the_cheapest_neighbour_and_its_index() {
    let r = fig7();
    let route = r.route(D).unwrap();
    assert_eq!(route.cost, 7);
    assert_eq!(route.next_hop, NextHop::Neighbour(B));
    assert_eq!(route.next_index, 9);
    let entry = r.table().get(route.index).unwrap();
    assert_eq!(entry.next_index, 9);
    assert_eq!(r.route(10).unwrap().cost, 3);
    assert_eq!(r.route(20).unwrap().cost, 1);
    assert_eq!(r.index_of(1), Some(0));
}

#[test]
fn triggered_update_uses_poisoned_reverse() {
    let mut r = fig7();
    drain(&mut r);
    assert_eq!(r.poll_timeout(), Some(ms(1_000)));
    r.handle_timeout(ms(1_000));
    let sent = drain(&mut r);
    assert_eq!(sent_cost(&sent, A, D), Some(7));
    assert_eq!(sent_cost(&sent, B, D), Some(16));
    assert_eq!(r.poll_timeout(), Some(ms(30_000)));
}

#[test]
fn link_down_reroutes_and_recomputes_the_index() {
    let mut r = fig7();
    r.link_down(ms(5), B).unwrap();
    let route = r.route(D).unwrap();
    assert_eq!((route.cost, route.next_index), (8, 4));
    assert_eq!(route.next_hop, NextHop::Neighbour(A));
    assert_eq!(r.route(20).unwrap().cost, 16);
    assert_eq!(r.table().get(r.index_of(20).unwrap()), None);
    assert_eq!(r.link_down(ms(5), B), Err(LinkError::UnknownLink));
}

#[test]
fn worse_news_from_the_next_hop_is_believed() {
    let mut r = fig7();
    r.handle_message(ms(1), B, &update(20, &[(D, 16, 9)]))
        .unwrap();
    assert_eq!(r.route(D).unwrap().cost, 8);
    r.handle_message(ms(2), A, &update(10, &[(D, 16, 4)]))
        .unwrap();
    assert_eq!(r.route(D).unwrap().cost, 16);
    assert_eq!(r.table().get(r.index_of(D).unwrap()), None);
}

#[test]
fn silent_routes_time_out_and_indices_are_reused() {
    let mut r = fig7();
    let freed = [D, 10, 20].map(|d| r.index_of(d).unwrap());
    r.handle_timeout(ms(180_000));
    assert_eq!(r.route(D).unwrap().cost, 16);
    r.handle_timeout(ms(299_999));
    assert!(r.route(D).is_some());
    r.handle_timeout(ms(300_000));
    assert_eq!(r.route(D), None);
    assert_eq!(r.index_of(D), None);
    r.handle_message(ms(300_001), A, &update(10, &[(555, 2, 7)]))
        .unwrap();
    assert!(freed.contains(&r.index_of(555).unwrap()));
    assert_eq!(r.route(555).unwrap().cost, 5);
}

#[test]
fn bad_messages_change_nothing() {
    let mut r = fig7();
    let before: Vec<Route> = r.routes().collect();
    assert_eq!(
        r.handle_message(ms(1), 9, &update(30, &[(D, 1, 1)])),
        Err(HandleError::UnknownLink)
    );
    assert_eq!(
        r.handle_message(ms(1), A, &update(1, &[(D, 1, 1)])),
        Err(HandleError::FromSelf)
    );
    assert_eq!(
        r.handle_message(ms(1), A, &update(10, &[(D, 17, 1)])),
        Err(HandleError::CostAboveInfinity)
    );
    assert_eq!(
        r.handle_message(ms(1), A, &[1, 1, 0]),
        Err(HandleError::Wire(WireError::Truncated))
    );
    assert_eq!(r.routes().collect::<Vec<_>>(), before);
    assert_eq!(r.stats().bad_messages, 4);
}

#[test]
fn link_commands_check_costs() {
    let mut r = Router::new(Config::new(1), ms(0));
    assert_eq!(r.link_up(ms(0), 0, 0), Err(LinkError::ZeroCost));
    assert_eq!(r.link_up(ms(0), 0, 16), Err(LinkError::CostTooHigh));
    r.link_up(ms(0), 0, 2).unwrap();
    let sent = drain(&mut r);
    let kinds: Vec<MessageKind> = sent
        .iter()
        .map(|t| Advertisement::parse(&t.bytes).unwrap().kind())
        .collect();
    assert_eq!(kinds, vec![MessageKind::Request, MessageKind::Update]);
}

#[test]
fn full_table_is_counted_not_installed() {
    let mut cfg = Config::new(1);
    cfg.max_destinations = 2;
    let mut r = Router::new(cfg, ms(0));
    r.link_up(ms(0), 0, 1).unwrap();
    r.handle_message(ms(0), 0, &update(2, &[(2, 0, 0), (3, 1, 1)]))
        .unwrap();
    assert!(r.route(2).is_some());
    assert_eq!(r.route(3), None);
    assert_eq!(r.stats().table_full, 1);
}
