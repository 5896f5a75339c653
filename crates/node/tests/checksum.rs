//! Every packet a node emits has a well-formed IP header by etherparse's own computation
//! (issue 24's property, for every in-place rewrite the node makes): forwarded packets
//! after TTL decrement and ESP in any form (instructions in IPv4 option 158 rewrite header
//! bytes), with a source-hash option, fragments, ICMP errors and echo replies.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::IpAddr;

use esp_proto::endpoint::Endpoint;
use esp_proto::instr::{CombineOp, Instruction, Param};
use esp_proto::wire::Loc;
use ess::{HashKey, Tag, Value};
use proptest::prelude::*;
use waist_node::routes::prefix;
use waist_node::{Config, EspConfig, Instant, Node};

fn instruction() -> impl Strategy<Value = Instruction> {
    let tag = || (0u64..4).prop_map(Tag);
    let val = || any::<u64>().prop_map(Value);
    prop_oneof![
        (tag(), 0u64..4).prop_map(|(counter, thresh)| Instruction::Count { counter, thresh }),
        (tag(), val(), tag()).prop_map(|(value, val, counter)| Instruction::Collect {
            value,
            val,
            counter,
            op: CombineOp::Add
        }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Get { tag, value }),
        (tag(), val()).prop_map(|(tag, value)| Instruction::Put { tag, value }),
        val().prop_map(|value| Instruction::Param {
            param: Param::NodeId,
            op: CombineOp::Xor,
            value
        }),
        tag().prop_map(|tag| Instruction::Mark { tag }),
        (tag(), val()).prop_map(|(tag, node)| Instruction::LastMark { tag, node }),
    ]
}

fn well_formed(p: &[u8]) -> Result<(), String> {
    let sliced = etherparse::SlicedPacket::from_ip(p).map_err(|e| format!("{e}"))?;
    match sliced.net {
        Some(etherparse::NetSlice::Ipv4(v4)) => {
            let h = v4.header().to_header();
            if h.header_checksum != h.calc_header_checksum() {
                return Err(format!(
                    "checksum {:#06x}, should be {:#06x}",
                    h.header_checksum,
                    h.calc_header_checksum()
                ));
            }
            if usize::from(h.total_len) != p.len() {
                return Err(format!(
                    "total length {} for {} bytes",
                    h.total_len,
                    p.len()
                ));
            }
        }
        Some(etherparse::NetSlice::Ipv6(v6)) => {
            if usize::from(v6.header().payload_length()) + 40 != p.len() {
                return Err("IPv6 length".into());
            }
        }
        _ => return Err("not IP".into()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_packet_out_is_well_formed(
        history in proptest::collection::vec(instruction(), 0..8),
        instr in instruction(),
        v6 in any::<bool>(),
        option in any::<bool>(),
        source_hash in any::<bool>(),
        df in any::<bool>(),
        ttl in 1u8..=255,
        payload in 0usize..1400,
        mtu in 576usize..1500,
        to_node in any::<bool>(),
    ) {
        let me: IpAddr = if v6 { [0xfd00, 0, 0, 0, 0, 0, 0, 0xfe].into() } else { [10, 0, 0, 254].into() };
        let mut c = Config::router(me, 2);
        c.esp = Some(EspConfig::new(1, 6, HashKey::from_seed(3)).unwrap());
        c.route_cache_log2 = Some(6);
        c.ifaces[1].mtu = mtu;
        let mut n = Node::new(c, Instant::ZERO).unwrap();
        let (src, dst): (IpAddr, IpAddr) = if v6 {
            ([0xfd00, 1, 0, 0, 0, 0, 0, 1].into(), [0xfd00, 2, 0, 0, 0, 0, 0, 1].into())
        } else {
            ([10, 1, 0, 1].into(), [10, 2, 0, 1].into())
        };
        let dst = if to_node { me } else { dst };
        let width = if v6 { 128 } else { 32 };
        n.add_route(prefix(src, width).unwrap(), 0);
        n.add_route(prefix(dst, width).unwrap(), 1);
        let ep = Endpoint::new(3, src).with_loc(Loc::ALL).with_ttl(ttl);
        let build = |i: &Instruction| -> Option<Vec<u8>> {
            let h = waist_ip::header_len_for(src);
            let mut base = vec![0u8; h + 8 + payload];
            // ICMP echo requests when addressed to the node, UDP otherwise.
            let proto = if to_node { if v6 { 58 } else { 1 } } else { 17 };
            waist_ip::emit_header(&mut base, src, dst, proto, ttl, 8 + payload).unwrap();
            if to_node {
                base[h] = if v6 { 128 } else { 8 };
            }
            if !v6 && !df {
                waist_ip::rewrite::rewrite(&mut base, 6, &[0, 0]).unwrap();
            }
            if !v6 && source_hash {
                let o = fastpath::wire::SourceHashOption { hash: fastpath::flow::SourceHash::new(9), flow_id: None };
                base = fastpath::wire::insert_ipv4_option(&base, &o).ok()?;
            }
            if option { ep.piggyback(&base, i).ok() } else { Some(base) }
        };
        for h in &history {
            if let Some(mut p) = build(h) {
                n.handle_packet(Instant::ZERO, 0, &mut p);
                while n.poll_transmit_owned().is_some() {}
            }
        }
        let Some(mut p) = build(&instr) else {
            prop_assume!(false);
            unreachable!()
        };
        prop_assert!(well_formed(&p).is_ok(), "input {:?}", well_formed(&p));
        let mut outs = Vec::new();
        if let Some(t) = n.handle_packet(Instant::ZERO, 0, &mut p) {
            outs.push(p[t.range].to_vec());
        }
        while let Some((_, f)) = n.poll_transmit_owned() {
            outs.push(f);
        }
        for o in &outs {
            if let Err(e) = well_formed(o) {
                return Err(TestCaseError::fail(format!("{instr:?} v6={v6} option={option}: {e}")));
            }
        }
        prop_assert!(n.stats().balanced());
    }
}
