//! Static routes with backups: a prefix's packets leave by its first interface that is up
//! (`Node::set_link`), and a prefix whose interfaces are all down is as if withdrawn.
//! Checked against a straightforward model over random prefixes, link lists and link flaps.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::net::IpAddr;

use proptest::prelude::*;
use waist_node::routes::prefix;
use waist_node::{Config, InPlace, Instant, Node};

const IFACES: usize = 5;

fn node(cache: bool) -> Node {
    let mut c = Config::router([192, 168, 0, 1].into(), IFACES);
    if cache {
        c.route_cache_log2 = Some(6);
    }
    Node::new(c, Instant::ZERO).unwrap()
}

/// `addr` with the bits past `len` cleared.
fn masked(addr: u32, len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        addr & (u32::MAX << (32 - u32::from(len)))
    }
}

/// The model: prefix (address, length) → interfaces; `down` interfaces are skipped.
struct Model {
    routes: BTreeMap<(u32, u8), Vec<usize>>,
    up: [bool; IFACES],
}

impl Model {
    fn route(&self, dst: u32) -> Option<u16> {
        self.routes
            .iter()
            .filter(|((a, l), _)| masked(dst, *l) == *a)
            .filter_map(|((_, l), links)| links.iter().find(|&&i| self.up[i]).map(|&i| (*l, i)))
            .max_by_key(|&(l, _)| l)
            .map(|(_, i)| u16::try_from(i).unwrap())
    }
}

/// Addresses drawn from a small space (10.0.0.0/22) so prefixes overlap often.
fn addr() -> impl Strategy<Value = u32> {
    (0u32..1024).prop_map(|x| 0x0a00_0000 | x)
}

proptest! {
    #[test]
    fn route_is_the_first_up_link_of_the_longest_live_prefix(
        cache in any::<bool>(),
        routes in prop::collection::vec(
            (addr(), prop_oneof![Just(0u8), 16u8..=32], prop::collection::vec(0..IFACES, 1..4)),
            1..12,
        ),
        flaps in prop::collection::vec((0..IFACES, any::<bool>()), 0..24),
        probes in prop::collection::vec(addr(), 16),
    ) {
        let mut n = node(cache);
        let mut m = Model { routes: BTreeMap::new(), up: [true; IFACES] };
        for (a, l, links) in &routes {
            let a = masked(*a, *l);
            let p = prefix(IpAddr::from(a.to_be_bytes()), *l).unwrap();
            prop_assert!(n.add_route_via(p, links));
            m.routes.insert((a, *l), links.clone());
        }
        let check = |n: &Node, m: &Model| -> Result<(), TestCaseError> {
            for &d in probes.iter().chain(m.routes.keys().map(|(a, _)| a)) {
                prop_assert_eq!(n.routes().route(IpAddr::from(d.to_be_bytes())), m.route(d), "dst {:x}", d);
            }
            Ok(())
        };
        check(&n, &m)?;
        for (t, &(iface, up)) in flaps.iter().enumerate() {
            n.set_link(Instant::from_millis(t as u64), iface, up);
            m.up[iface] = up;
            check(&n, &m)?;
            for i in 0..IFACES {
                prop_assert_eq!(n.routes().link_up(i as u16), m.up[i]);
            }
        }
    }
}

/// 10.2.0.80/32 over interfaces 1 then 2, with 10.0.0.0/8 on 3 behind it.
#[test]
fn packets_follow_the_first_up_link_and_fall_back_when_all_are_down() {
    for cache in [false, true] {
        let mut n = node(cache);
        let host = prefix([10, 2, 0, 80].into(), 32).unwrap();
        assert!(n.add_route_via(host, &[1, 2]));
        assert!(n.add_route(prefix([10, 0, 0, 0].into(), 8).unwrap(), 3));
        assert!(!n.add_route_via(host, &[1, 9]), "no interface 9");
        assert!(!n.add_route_via(host, &[]));
        let out = |n: &mut Node| {
            // 10.1.0.1 → 10.2.0.80, UDP, TTL 64, in on interface 0.
            let mut f = [0u8; 28];
            waist_ip::emit_header(
                &mut f,
                [10, 1, 0, 1].into(),
                [10, 2, 0, 80].into(),
                17,
                64,
                8,
            )
            .unwrap();
            n.handle_packet(Instant::ZERO, 0, &mut f)
                .map(|InPlace { iface, .. }| iface)
        };
        assert_eq!(out(&mut n), Some(1));
        n.set_link(Instant::ZERO, 1, false);
        assert_eq!(out(&mut n), Some(2));
        assert_eq!(n.routes().static_choice(host), Some(2));
        n.set_link(Instant::ZERO, 2, false);
        assert_eq!(out(&mut n), Some(3), "withdrawn: the /8 answers");
        assert_eq!(n.routes().static_choice(host), None);
        n.set_link(Instant::ZERO, 1, true);
        assert_eq!(out(&mut n), Some(1));
        let statics: Vec<_> = n.routes().statics().map(|(p, l)| (p, l.to_vec())).collect();
        assert!(statics.contains(&(host, vec![1, 2])), "{statics:?}");
    }
}
