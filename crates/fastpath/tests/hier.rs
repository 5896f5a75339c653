//! §4.1 across a simulated area: routers run distance-vector routing for the area and a
//! longest-prefix-match table for the world outside; packets for area destinations carry
//! threaded labels, packets leaving the area carry the source's random index, and every
//! router on the way caches the destination under that index.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use fastpath::SourceHash;
use fastpath::hier::{AreaForwarder, HierForward, source_label};
use fastpath::lpm::{LpmTable, Prefix};
use fastpath::sim::Network;
use fastpath::threaded::{Forward, Label, NextHop};
use proptest::prelude::*;

/// The area's border router and the interface (not a simulated link) out of the area.
const BORDER: usize = 3;
const EXIT: u16 = 999;

/// Per router: the LPM table for outside prefixes, pointing toward the border.
fn outside_tables(net: &Network) -> Vec<LpmTable<u16>> {
    (0..net.len())
        .map(|r| {
            let mut t = LpmTable::new();
            let iface = if r == BORDER {
                EXIT
            } else {
                match net.router(r).route(BORDER as u32).unwrap().next_hop {
                    NextHop::Neighbour(i) => i,
                    NextHop::Local => unreachable!(),
                }
            };
            t.insert(Prefix::new([192, 0, 2, 0], 24).unwrap(), iface);
            t
        })
        .collect()
}

/// Walks one packet from `src`; returns the routers visited and whether each hit.
fn walk(
    net: &Network,
    fwd: &mut [AreaForwarder],
    lpm: &[LpmTable<u16>],
    src: usize,
    mut label: Label,
    dst: [u8; 4],
) -> (Vec<usize>, Vec<bool>, bool) {
    let (mut at, mut path, mut hits) = (src, vec![src], Vec::new());
    loop {
        let out = fwd[at]
            .forward(net.router(at).table(), &lpm[at], label, dst)
            .unwrap();
        let (iface, next) = match out {
            HierForward::Threaded(Forward::Deliver) => return (path, hits, false),
            HierForward::Threaded(Forward::Send { iface, out_label }) => (iface, out_label),
            HierForward::Cached {
                iface,
                out_label,
                hit,
            } => {
                hits.push(hit);
                if iface == EXIT {
                    return (path, hits, true);
                }
                (iface, out_label)
            }
        };
        let link = net.links()[usize::from(iface)];
        at = if link.a == at { link.b } else { link.a };
        label = next;
        path.push(at);
    }
}

fn area() -> Network {
    // 0 – 1 – 3 (border), 0 – 2 – 3, with 0–2 cheaper.
    let mut net = Network::new(4, &[(0, 1, 1), (1, 3, 5), (0, 2, 1), (2, 3, 1)], 16);
    net.run_for(5_000);
    net
}

#[test]
fn inside_threaded_outside_source_hashed_and_cached_on_every_hop() {
    let net = area();
    let lpm = outside_tables(&net);
    let mut fwd: Vec<AreaForwarder> = (0..4).map(|_| AreaForwarder::new(8).unwrap()).collect();
    // Inside: a threaded label from 0 to 1.
    let label = source_label(net.router(0).index_of(1), SourceHash::new(0));
    let (path, hits, left) = walk(&net, &mut fwd, &lpm, 0, label, [0; 4]);
    assert_eq!((path, hits.len(), left), (vec![0, 1], 0, false));
    // Outside: the source has no index for 192.0.2.9, so it sends a random one.
    let out = source_label(None, SourceHash::new(0xab_cdef));
    let (path, hits, left) = walk(&net, &mut fwd, &lpm, 0, out, [192, 0, 2, 9]);
    assert_eq!(path, vec![0, 2, 3]);
    assert_eq!(hits, vec![false, false, false]);
    assert!(left);
    let (path, hits, _) = walk(&net, &mut fwd, &lpm, 0, out, [192, 0, 2, 9]);
    assert_eq!(path, vec![0, 2, 3]);
    assert_eq!(
        hits,
        vec![true, true, true],
        "every router hits on the same random bits"
    );
}

proptest! {
    /// Whatever indices sources choose — random, equal, colliding — every packet leaves the
    /// area by the border along the DV shortest path; sharing an index only costs misses.
    #[test]
    fn any_indices_reach_the_exit(
        packets in proptest::collection::vec((0usize..3, 0u32..16, 1u8..=254), 1..60),
    ) {
        let net = area();
        let lpm = outside_tables(&net);
        let mut fwd: Vec<AreaForwarder> = (0..4).map(|_| AreaForwarder::new(4).unwrap()).collect();
        for (src, index, host) in packets {
            let label = Label::random(index, 16);
            let (path, hits, left) = walk(&net, &mut fwd, &lpm, src, label, [192, 0, 2, host]);
            prop_assert!(left);
            prop_assert_eq!(*path.last().unwrap(), BORDER);
            prop_assert_eq!(hits.len(), path.len());
            let trace = net.trace(src, BORDER).unwrap();
            prop_assert_eq!(path, trace);
        }
    }
}
