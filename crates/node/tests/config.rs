//! What a node's `Config` carries besides its stages, installed by `Node::new` (so the
//! simulator and the daemon build the same router from one value): static routes with
//! backups, multicast groups, prefixes to originate; the ESS sized by packet rate with the
//! node's defaults; and the errors for what cannot be installed.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use ess::HashKey;
use fastpath::dv;
use fastpath::lpm::IpPrefix;
use waist_node::routes::prefix;
use waist_node::{Config, ConfigError, EspConfig, IfaceConfig, Instant, Node, SECONDS};

const T0: Instant = Instant::ZERO;

fn v4(a: [u8; 4], len: u8) -> IpPrefix {
    prefix(a.into(), len).unwrap()
}

/// A UDP packet from 10.1.0.1 to `dst`.
fn udp_to(dst: [u8; 4]) -> Vec<u8> {
    let mut p = vec![0u8; 40];
    waist_ip::emit_header(&mut p, [10, 1, 0, 1].into(), dst.into(), 17, 9, 20).unwrap();
    p
}

/// Three interfaces, routing on interface 1; a route to 10.2/16 by 2 then 1, a group
/// 239.1.1.1 copied onto 1 and 2, 10.9/16 originated.
fn config() -> Config {
    let mut c = Config::router([10, 0, 0, 254].into(), 3);
    c.dv = Some(dv::Config::new(0x0a00_00fe));
    c.ifaces[1] = IfaceConfig::new(1500).with_dv(1);
    c.routes = vec![(v4([10, 2, 0, 0], 16), vec![2, 1])];
    c.groups = vec![([239, 1, 1, 1].into(), vec![1, 2])];
    c.originate = vec![v4([10, 9, 0, 0], 16)];
    c
}

#[test]
fn node_new_installs_the_routes_groups_and_prefixes_of_its_config() {
    let mut n = Node::new(config(), T0).unwrap();
    let out = |n: &mut Node| {
        n.handle_packet(T0, 0, &mut udp_to([10, 2, 0, 7]))
            .map(|o| o.iface)
    };
    assert_eq!(out(&mut n), Some(2));
    n.set_link(T0, 2, false);
    assert_eq!(out(&mut n), Some(1), "the backup");
    while n.poll_transmit_owned().is_some() {}
    assert_eq!(n.handle_packet(T0, 0, &mut udp_to([239, 1, 1, 1])), None);
    let copies: Vec<usize> = std::iter::from_fn(|| n.poll_transmit_owned())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(copies, vec![1, 2]);
    let local: Vec<IpPrefix> = n.dv().unwrap().local_prefixes().collect();
    assert_eq!(local, vec![v4([10, 9, 0, 0], 16)]);
    assert_eq!(n.config().routes, config().routes, "the config keeps them");
}

#[test]
fn what_a_config_cannot_install_is_an_error() {
    let err = |edit: fn(&mut Config)| {
        let mut c = config();
        edit(&mut c);
        Node::new(c, T0).err()
    };
    assert_eq!(
        err(|c| c.routes[0].1.clear()),
        Some(ConfigError::EmptyRoute)
    );
    assert_eq!(
        err(|c| c.routes[0].1.push(3)),
        Some(ConfigError::UnknownIface { iface: 3 })
    );
    assert_eq!(
        err(|c| c.groups[0].1 = vec![0, 7]),
        Some(ConfigError::UnknownIface { iface: 7 })
    );
    assert_eq!(
        err(|c| {
            c.dv = None;
            c.ifaces[1].dv_cost = None;
        }),
        Some(ConfigError::OriginateWithoutRouting)
    );
    // A table of one destination holds only the router itself.
    assert_eq!(
        err(|c| c.dv.as_mut().unwrap().max_destinations = 1),
        Some(ConfigError::RoutingTableFull)
    );
}

#[test]
fn esp_sized_by_rate_keeps_the_node_defaults() {
    let key = HashKey::from_seed(7);
    let by_rate = EspConfig::for_rate(1, 100_000, 10 * SECONDS, key).unwrap();
    let by_size = EspConfig::new(1, 20, key).unwrap();
    assert_eq!(
        by_rate.node.store, by_size.node.store,
        "10^6 bindings: 2^20"
    );
    assert_eq!(by_rate.node.idmap_key, by_size.node.idmap_key);
    assert_eq!(
        (by_rate.node.timestamp_shift, by_rate.node.shards),
        (EspConfig::TIMESTAMP_SHIFT, 1)
    );
    assert_eq!(
        (by_rate.clean_interval, by_rate.clean_budget, by_rate.sites),
        (by_size.clean_interval, by_size.clean_budget, by_size.sites)
    );
    assert_eq!(by_rate.node.store.lifetime_ticks(), EspConfig::LIFETIME);
    assert!(EspConfig::for_rate(1, u64::MAX, 10 * SECONDS, key).is_err());
}
