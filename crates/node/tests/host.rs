//! The end-host side through a chain of real nodes: SNAP ping (Fig. 1) and ESP queries
//! built and parsed with `esp_proto::endpoint`, reflected by the far host.
//!
//! ```text
//!  tool ─ if0 [R1] if1 ─ if0 [R2] if1 ─ if0 [R3] if1 ─ far host 10.9.0.1 (ESP reflector)
//! ```

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::IpAddr;

use esp_proto::endpoint::{Endpoint, HostAction, host_receive};
use esp_proto::instr::{CombineOp, Instruction};
use esp_proto::wire::Loc;
use ess::{HashKey, Tag, Value};
use waist_node::host::SnapPinger;
use waist_node::routes::prefix;
use waist_node::{Config, EspConfig, Instant, Node};

const TOOL: [u8; 4] = [10, 1, 0, 1];
const FAR: [u8; 4] = [10, 9, 0, 1];

fn router_addr(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

struct Chain {
    routers: Vec<Node>,
    /// What reached the tool.
    back: Vec<Vec<u8>>,
}

impl Chain {
    fn new(esp: [bool; 3], snap: bool) -> Chain {
        let routers = (0..3)
            .map(|i| {
                let a = router_addr(i);
                let mut c = Config::router(a.into(), 2);
                c.snap = snap;
                if esp[i] {
                    c.esp = Some(
                        EspConfig::new(
                            u64::from(u32::from_be_bytes(a)),
                            8,
                            HashKey::from_seed(i as u64),
                        )
                        .unwrap(),
                    );
                }
                let mut n = Node::new(c, Instant::ZERO).unwrap();
                n.add_route(prefix([10, 1, 0, 0].into(), 16).unwrap(), 0);
                n.add_route(prefix([10, 9, 0, 0].into(), 16).unwrap(), 1);
                for j in 0..3 {
                    if j != i {
                        n.add_route(
                            prefix(router_addr(j).into(), 32).unwrap(),
                            if j < i { 0 } else { 1 },
                        );
                    }
                }
                n
            })
            .collect();
        Chain {
            routers,
            back: Vec::new(),
        }
    }

    /// Sends `frame` from the tool and runs the chain until quiet.
    fn send(&mut self, frame: Vec<u8>) {
        let mut pending = vec![(0usize, 0usize, frame)];
        let mut steps = 0;
        while let Some((r, iface, mut f)) = pending.pop() {
            steps += 1;
            assert!(steps < 1000, "loop");
            let node = &mut self.routers[r];
            let mut outs = Vec::new();
            if let Some(t) = node.handle_packet(Instant::ZERO, iface, &mut f) {
                outs.push((t.iface, f[t.range].to_vec()));
            }
            while let Some(o) = node.poll_transmit_owned() {
                outs.push(o);
            }
            for (o, p) in outs {
                match (r, o) {
                    (0, 0) => self.back.push(p),
                    (2, 1) => {
                        // The far host: reflect RB packets, swallow the rest.
                        let mut p = p;
                        if host_receive(&mut p) == Ok(HostAction::Reflect) {
                            pending.push((2, 1, p));
                        }
                    }
                    (r, 1) => pending.push((r + 1, 0, p)),
                    (r, _) => pending.push((r - 1, 1, p)),
                }
            }
        }
    }
}

#[test]
fn snap_ping_through_three_routers() {
    let mut chain = Chain::new([false; 3], true);
    let mut pinger = SnapPinger::new(TOOL, 7);
    chain.send(
        pinger
            .request(router_addr(2), 9, Instant::ZERO, 20)
            .unwrap(),
    );
    assert_eq!(chain.back.len(), 1);
    let r = pinger
        .handle_reply(Instant::from_micros(1_500), &chain.back[0])
        .unwrap();
    // R1, R2, R3 on the way out, R2, R1 back, then here: six runs, one unit each.
    assert_eq!(
        (r.seq, r.target, r.rtt_us, r.rb),
        (9, router_addr(2).into(), 1_500, 14)
    );
    let runs: Vec<u64> = chain
        .routers
        .iter()
        .map(|n| n.stats().snap_executed)
        .collect();
    assert_eq!(runs, [2, 2, 1]);
}

#[test]
fn snap_ping_through_plain_routers_still_turns_round_at_a_snap_node() {
    // Without SNAP the routers forward protocol 254 as plain IP: the destination router
    // cannot run the ping, so nothing comes back (partial deployment needs SNAP at the ends).
    let mut chain = Chain::new([false; 3], false);
    let pinger = SnapPinger::new(TOOL, 7);
    chain.send(
        pinger
            .request(router_addr(2), 1, Instant::ZERO, 20)
            .unwrap(),
    );
    assert!(chain.back.is_empty());
    assert_eq!(chain.routers[2].stats().delivered, 1);
}

#[test]
fn esp_count_runs_at_every_hop_and_comes_back_reflected() {
    let mut chain = Chain::new([true; 3], false);
    let ep = Endpoint::new(11, TOOL.into())
        .with_loc(Loc::CENTRAL)
        .with_reflect(true);
    let count = Instruction::Count {
        counter: Tag(5),
        thresh: 10,
    };
    chain.send(ep.packet_to(FAR.into(), &count, b"q").unwrap());
    assert_eq!(chain.back.len(), 1);
    let got = ep.receive(&chain.back[0]).unwrap();
    assert_eq!(
        (got.from, got.instr, got.err),
        (IpAddr::from(FAR), count, None)
    );
    // With RB set the packet passes the routers untouched on the way out (§2.5); the far
    // host reflects it (RB cleared, addresses swapped) and it runs once per router on the
    // way back.
    for n in &chain.routers {
        let s = n.stats();
        assert_eq!((s.esp_executed, s.forwarded), (1, 2), "{s:?}");
    }
}

#[test]
fn lastmark_names_the_last_marked_node_and_an_abort_is_precise() {
    // R1 has no ESP (partial deployment).
    let mut chain = Chain::new([false, true, true], false);
    let ep = Endpoint::new(12, TOOL.into())
        .with_loc(Loc::CENTRAL)
        .with_reflect(true);
    // MARK, reflected by the far host, binds the tag on the way back at R3 and R2.
    chain.send(
        ep.packet_to(FAR.into(), &Instruction::Mark { tag: Tag(77) }, &[])
            .unwrap(),
    );
    assert_eq!(chain.back.len(), 1);
    let last = Instruction::LastMark {
        tag: Tag(77),
        node: Value(0),
    };
    chain.send(ep.packet_to(FAR.into(), &last, &[]).unwrap());
    let got = ep.receive(&chain.back[1]).unwrap();
    // LASTMARK runs on the way back: R3 (marked), R2 (marked), R1 (no ESP): R2 answers.
    let Instruction::LastMark { node, .. } = got.instr else {
        panic!("{got:?}")
    };
    assert_eq!(node, Value(u64::from(u32::from_be_bytes(router_addr(1)))));
    // COLLECT with no COUNT before it aborts at the first ESP router it meets (R3 on the
    // way back), precisely, and R2 leaves it alone (Err set, Loc cleared).
    let collect = Instruction::Collect {
        value: Tag(1),
        val: Value(3),
        counter: Tag(2),
        op: CombineOp::Add,
    };
    chain.send(ep.packet_to(FAR.into(), &collect, &[]).unwrap());
    let got = ep.receive(&chain.back[2]).unwrap();
    assert_eq!(got.error().expect("aborted").instr, collect);
    assert_eq!(got.loc, Loc::NONE);
    let runs: Vec<u64> = chain
        .routers
        .iter()
        .map(|n| n.stats().esp_executed)
        .collect();
    assert_eq!(runs, [0, 2, 3], "MARK and LASTMARK at R2; all three at R3");
}
