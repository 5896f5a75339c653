//! The paper's programs at work, one VM at a time: each packet runs on a node, and its transmits are
//! handed by hand to the next node of a line of hosts 10.0.0.1, 10.0.0.2, … Every packet is
//! verified before it runs and its use checked against the verifier's bounds.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::VecDeque;

use snap_vm::paper;
use snap_vm::program::Program;
use snap_vm::verify::verify;
use snap_vm::vm::{Delivered, Delivery, End, Fault, NodeConfig, Outcome, Vm};

const A: [u8; 4] = [10, 0, 0, 1];

fn addr(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

/// What happened on the line.
#[derive(Debug, Default)]
struct Trace {
    /// (node, outcome) in the order the packets ran.
    runs: Vec<(usize, Outcome)>,
    /// The entry point of each run's packet.
    entries: Vec<u16>,
    /// (node, delivery).
    deliveries: Vec<(usize, Delivery)>,
}

/// Runs `packet` at node `start` of a line of `n` nodes with `ifaces` interfaces each, then
/// every packet it causes, each at the next node toward its destination.
fn line(n: usize, ifaces: u32, start: usize, packet: Vec<u8>) -> Trace {
    let mut vms: Vec<Vm> = (0..n)
        .map(|i| {
            Vm::new(NodeConfig {
                address: addr(i),
                ifaces,
                mtu: 1500,
            })
        })
        .collect();
    let mut queue = VecDeque::from([(start, packet)]);
    let mut trace = Trace::default();
    while let Some((at, packet)) = queue.pop_front() {
        assert!(trace.runs.len() < 100, "runaway");
        let program = Program::from_bytes(&packet).unwrap();
        let bounds = verify(&program, vms[at].config()).unwrap();
        let out = vms[at].run(0, 0, packet);
        let s = out.stats;
        assert!(s.executed <= bounds.instructions, "{s:?} {bounds:?}");
        assert!(s.max_depth <= bounds.stack_depth, "{s:?} {bounds:?}");
        assert!(s.allocated <= bounds.heap_words, "{s:?} {bounds:?}");
        assert!(
            s.sends <= bounds.sends && s.sends <= ifaces,
            "{s:?} {bounds:?}"
        );
        let mut given = 0;
        for t in &out.transmits {
            given += u32::from(Program::from_bytes(&t.packet).unwrap().rb);
            let to = (0..n).find(|&j| addr(j) == t.dst).expect("on the line");
            let next = match to.cmp(&at) {
                std::cmp::Ordering::Greater => at + 1,
                std::cmp::Ordering::Less => at - 1,
                std::cmp::Ordering::Equal => at,
            };
            queue.push_back((next, t.packet.clone()));
        }
        // Conservation: children never get more than the packet had after arriving.
        if out.rb_in > 0 {
            assert!(given < u32::from(out.rb_in), "{out:?}");
        }
        if let Some(d) = &out.delivery {
            trace.deliveries.push((at, d.clone()));
        }
        trace.runs.push((at, out));
        trace.entries.push(program.entry);
    }
    trace
}

fn packet(p: &Program) -> Vec<u8> {
    p.to_bytes().unwrap()
}

#[test]
fn ping_delivers_its_payload_at_the_sender_after_one_round_trip() {
    for links in 0..4 {
        let p = paper::ping(A, addr(links), 7, b"hello", 2 * links as u16 + 1);
        let t = line(4, 2, 0, packet(&p));
        // Out over `links` links and back: 2 · links + 1 runs, the last delivering at A.
        assert_eq!(t.runs.len(), 2 * links + 1);
        let path: Vec<usize> = t.runs.iter().map(|(at, _)| *at).collect();
        let expect: Vec<usize> = (0..=links).chain((0..links).rev()).collect();
        assert_eq!(path, expect);
        assert_eq!(
            t.deliveries,
            [(
                0,
                Delivery {
                    port: 7,
                    value: Delivered::Bytes(b"hello".to_vec()),
                    src: A, // forwto rewrites the destination only
                    src6: None,
                }
            )]
        );
        let turn = &t.runs[links].1;
        assert_eq!(
            turn.end,
            if links == 0 {
                End::Delivered
            } else {
                End::Forwarded
            }
        );
    }
    // One unit short and the packet dies on its last arrival, back at A.
    let p = paper::ping(A, addr(3), 7, b"hello", 6);
    let t = line(4, 2, 0, packet(&p));
    assert!(t.deliveries.is_empty());
    assert_eq!(t.runs.last().unwrap().1.end, End::NoResource);
}

#[test]
fn plan_ping_runs_p_at_the_destination_and_r_back_at_the_source() {
    for links in 1..4 {
        let p = paper::plan_ping(A, addr(links), 7, b"hello", 2 * links as u16 + 1);
        let t = line(4, 2, 0, packet(&p));
        assert_eq!(t.runs.len(), 2 * links + 1);
        // At the destination p sends one child (entry defaultRoute = 0) home and exits.
        let (at, turn) = &t.runs[links];
        assert_eq!((*at, turn.end, turn.transmits.len()), (links, End::Exit, 1));
        let child = Program::from_bytes(&turn.transmits[0].packet).unwrap();
        assert_eq!((child.entry, child.dst), (0, A));
        assert_eq!(child.stack.last().map(|v| v.as_int()), Some(2)); // r's index, for paj
        assert_eq!(
            t.deliveries,
            [(
                0,
                Delivery {
                    port: 7,
                    value: Delivered::Bytes(b"hello".to_vec()),
                    src: A,
                    src6: None,
                }
            )]
        );
    }
}

#[test]
fn plan_ping_to_itself_sends_its_child_to_itself() {
    // p's send is a real one even at home: two runs, two units of bound.
    let p = paper::plan_ping(A, A, 7, b"me", 2);
    let t = line(1, 1, 0, packet(&p));
    assert_eq!(t.runs.len(), 2);
    assert_eq!(t.deliveries.len(), 1);
    let p = paper::plan_ping(A, A, 7, b"me", 1);
    assert!(line(1, 1, 0, packet(&p)).deliveries.is_empty());
}

fn report(at: usize, k: i32) -> Delivered {
    Delivered::Tuple(vec![Delivered::Addr(addr(at)), Delivered::Int(k)])
}

#[test]
fn traceroute_reports_every_hop_then_the_destination() {
    // Three links need 3·2/2 + 2·3 + 1 = 10.
    let p = paper::traceroute(A, addr(3), 9, 10);
    let t = line(4, 2, 0, packet(&p));
    let got: Vec<(usize, i32, Delivered)> = t
        .deliveries
        .iter()
        .map(|(at, d)| (*at, d.port, d.value.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (0, 9, report(1, 1)),
            (0, 9, report(2, 2)),
            (0, 9, report(3, 3))
        ]
    );
    // The source forwards only; routers report and forward (two sends); the destination
    // sends its report and exits.
    let sends: Vec<(usize, u32)> = t
        .runs
        .iter()
        .zip(&t.entries)
        .filter(|(_, entry)| **entry == 0) // the traceroute itself, not its reports
        .map(|((at, o), _)| (*at, o.stats.sends))
        .collect();
    assert_eq!(sends, [(0, 1), (1, 2), (2, 2), (3, 1)]);
    // Each report gets the hop count so far as its bound.
    let r1 = Program::from_bytes(&t.runs[1].1.transmits[0].packet).unwrap();
    assert_eq!((r1.rb, r1.dst), (1, A));
    // With one unit less, the destination's report cannot get home.
    let p = paper::traceroute(A, addr(3), 9, 9);
    let t = line(4, 2, 0, packet(&p));
    assert_eq!(t.deliveries.len(), 2);
}

#[test]
fn traceroute_respects_the_send_limit() {
    let p = paper::traceroute(A, addr(2), 9, 20);
    let t = line(3, 1, 0, packet(&p));
    // A router with one interface may send once: the report goes, the forw faults.
    assert_eq!(t.runs[1].1.end, End::Fault(Fault::SendLimit));
    assert_eq!(
        t.deliveries,
        [(
            0,
            Delivery {
                port: 9,
                value: report(1, 1),
                src: A,
                src6: None,
            }
        )]
    );
}

#[test]
fn traceroute_to_itself_reports_once() {
    let p = paper::traceroute(A, A, 9, 2);
    let t = line(1, 1, 0, packet(&p));
    assert_eq!(t.deliveries.len(), 1);
    assert_eq!(t.deliveries[0].1.value, report(0, 0));
}

#[test]
fn multicast_splits_the_bound_and_delivers_at_every_destination() {
    let dests = [addr(1), addr(2), addr(3)];
    let p = paper::multicast(A, &dests, 5, b"hi all", 13);
    let t = line(4, 3, 0, packet(&p));
    let (at, first) = &t.runs[0];
    assert_eq!((*at, first.end, first.transmits.len()), (0, End::Exit, 3));
    let children: Vec<Program> = first
        .transmits
        .iter()
        .map(|t| Program::from_bytes(&t.packet).unwrap())
        .collect();
    let rbs: Vec<u16> = children.iter().map(|c| c.rb).collect();
    assert_eq!(rbs, [4, 4, 4]); // (13 − 1) / 3 each
    let after_arrival = first.rb_in - 1;
    assert!(rbs.iter().sum::<u16>() <= after_arrival);
    assert_eq!(children.iter().map(|c| c.dst).collect::<Vec<_>>(), dests);
    let mut got: Vec<(usize, Delivered)> = t
        .deliveries
        .iter()
        .map(|(at, d)| {
            assert_eq!((d.port, d.src), (5, A));
            (*at, d.value.clone())
        })
        .collect();
    got.sort_by_key(|(at, _)| *at);
    let hi = Delivered::Bytes(b"hi all".to_vec());
    assert_eq!(got, [(1, hi.clone()), (2, hi.clone()), (3, hi)]);
}

#[test]
fn multicast_shares_round_down_and_the_source_needs_an_interface_per_destination() {
    let dests = [addr(1), addr(2)];
    let p = paper::multicast(A, &dests, 5, b"x", 8);
    let t = line(3, 2, 0, packet(&p));
    let rbs: Vec<u16> = t.runs[0]
        .1
        .transmits
        .iter()
        .map(|t| Program::from_bytes(&t.packet).unwrap().rb)
        .collect();
    assert_eq!(rbs, [3, 3]); // 7 / 2, the odd unit kept
    assert_eq!(t.deliveries.len(), 2);
    // Three destinations, two interfaces: the third send faults, two children stand.
    let p = paper::multicast(A, &[addr(1), addr(2), addr(2)], 5, b"x", 9);
    let t = line(3, 2, 0, packet(&p));
    assert_eq!(t.runs[0].1.end, End::Fault(Fault::SendLimit));
    assert_eq!(t.runs[0].1.transmits.len(), 2);
    // No destinations: it just exits.
    let p = paper::multicast(A, &[], 5, b"x", 9);
    assert_eq!(line(1, 1, 0, packet(&p)).runs[0].1.end, End::Exit);
}

#[test]
fn the_verifier_accepts_every_fixture() {
    let node = NodeConfig {
        address: A,
        ifaces: 1,
        mtu: 1500,
    };
    let all = [
        paper::ping(A, addr(1), 7, b"", 3),
        paper::ping(A, addr(5), 65535, &[0xff; 300], 65535),
        paper::plan_ping(A, addr(1), 7, b"payload", 3),
        paper::traceroute(A, addr(9), 1, 100),
        paper::multicast(A, &[addr(1)], 5, b"x", 3),
        paper::multicast(A, &(1..40).map(addr).collect::<Vec<_>>(), 5, b"x", 3),
    ];
    for p in &all {
        let b = verify(p, &node).unwrap();
        assert!(b.instructions as usize <= p.code.len());
        assert_eq!(b.sends, 1);
    }
    assert!(verify(&all[0], &node).unwrap().delivers);
}
