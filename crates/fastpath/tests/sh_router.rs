//! End to end over real packet bytes: senders put the source-hash option in IPv4 packets
//! (built with etherparse), a router reads it back with `find_ipv4_option` and forwards
//! through a `RouteCache`; and IPv6 packets carry the index in the flow label.

// Tests report failure by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fastpath::apps::route::RouteCache;
use fastpath::assign::FlowSource;
use fastpath::lpm::Prefix;
use fastpath::wire::{
    SourceHashOption, find_ipv4_option, insert_ipv4_option, ipv6_destination_flow_id,
    ipv6_flow_label, set_ipv6_flow_label,
};
use fastpath::{FlowCache, Lookup};

fn ipv4(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    etherparse::PacketBuilder::ipv4(src, dst, 64)
        .udp(4000, 53)
        .write(&mut p, payload)
        .unwrap();
    p
}

#[test]
fn ipv4_option_drives_the_route_cache() {
    let mut router: RouteCache<u16> = RouteCache::new(12).unwrap();
    router.add_route(Prefix::new([10, 0, 0, 0], 8).unwrap(), 1);
    router.add_route(Prefix::new([10, 9, 0, 0], 16).unwrap(), 2);

    let mut senders: Vec<FlowSource> = (0..20u8)
        .map(|i| FlowSource::new([192, 168, 1, i], 0xb007 + u32::from(i), u64::from(i)))
        .collect();
    let mut hits = 0;
    let mut packets = 0;
    for (i, s) in senders.iter_mut().enumerate() {
        let (fid, hash) = s.start_flow();
        let src = [192, 168, 1, i as u8];
        let dst = [10, (i % 12) as u8, 0, 1];
        // The flow number rides in the option's flow id (its bytes 4..8).
        let flow = u32::from_be_bytes(fid.as_bytes()[4..8].try_into().unwrap());
        let opt = SourceHashOption {
            hash,
            flow_id: Some(fastpath::FlowId::from_u32(flow)),
        };
        for k in 0..10 {
            let pkt = insert_ipv4_option(&ipv4(src, dst, &[k; 9]), &opt).unwrap();
            // Router side: only header bytes.
            let got = find_ipv4_option(&pkt).unwrap().unwrap();
            let f = u32::from_be_bytes(got.flow_id.unwrap().as_bytes().try_into().unwrap());
            let d: [u8; 4] = pkt[16..20].try_into().unwrap();
            let s: [u8; 4] = pkt[12..16].try_into().unwrap();
            let want = router.route_uncached(d).copied();
            let (hop, l) = router.route(got.hash, d, s, f);
            assert_eq!(hop.copied(), want);
            if k == 0 {
                // A new flow id cannot be in the cache yet.
                assert_eq!(l, Lookup::Miss);
            }
            hits += u32::from(l == Lookup::Hit);
            packets += 1;
        }
    }
    // 20 flows in 4096 slots: (almost) every packet after a flow's first is a hit.
    assert!(hits >= packets - 20 - 4, "{hits}/{packets}");
    assert_eq!(
        router.cache().stats().misses + router.cache().stats().hits,
        packets.into()
    );
}

#[test]
fn ipv6_flow_label_is_a_source_hash() {
    let mut cache: FlowCache<u16> = FlowCache::new(20).unwrap();
    let mut p = Vec::new();
    etherparse::PacketBuilder::ipv6(
        [0xfe; 16],
        [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        64,
    )
    .udp(1, 2)
    .write(&mut p, b"x")
    .unwrap();
    set_ipv6_flow_label(&mut p, fastpath::SourceHash::new(0xabcde)).unwrap();
    let h = ipv6_flow_label(&p).unwrap();
    let fid = ipv6_destination_flow_id(&p).unwrap();
    assert_eq!(cache.get_or_insert_with(h, &fid, |_| 7).1, Lookup::Miss);
    assert_eq!(cache.get_or_insert_with(h, &fid, |_| 9), (&7, Lookup::Hit));
    // etherparse still reads a valid packet with our label.
    let (hdr, _) = etherparse::Ipv6Header::from_slice(&p).unwrap();
    assert_eq!(hdr.flow_label.value(), 0xabcde);
}
