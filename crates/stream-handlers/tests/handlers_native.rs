//! The handlers run natively, with no cost model, on real byte messages: what a router
//! node hosting them on its links would do.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::{ByteSwap, ContentRouter, Delta, Filter, Mirror};
use stream_handlers::stream::{Field, Message, Param, Predicate, StreamHandler};

/// A flight-data-like record: 2-byte kind, 2-byte altitude band, 4-byte timestamp, body.
fn record(kind: u16, band: u16, ts: u32, body: usize) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&kind.to_be_bytes());
    v.extend_from_slice(&band.to_be_bytes());
    v.extend_from_slice(&ts.to_be_bytes());
    v.extend((0..body).map(|i| (i * 7) as u8));
    v
}

#[test]
fn a_pipeline_of_native_handlers_routes_filters_and_converts_real_records() {
    let kind = Field::new(0, 2);
    let band = Field::new(2, 2);
    let mut router = ContentRouter::new(kind, None, 4);
    router.configure(Param::Route(1, 10)).unwrap();
    router.configure(Param::Route(2, 20)).unwrap();
    let mut dep = Deployment::single(
        Point::RxSide,
        Box::new(Filter::new(Predicate::Range(band, 100, 200))),
    );
    dep.push(Point::RxSide, Box::new(router));
    dep.push(Point::InTransit, Box::new(ByteSwap));
    let recs = [
        record(1, 150, 7, 12),
        record(2, 120, 8, 3),
        record(1, 250, 9, 12), // band out of range: filtered
        record(3, 150, 10, 5), // no route, no default: dropped
    ];
    let mut out = Vec::new();
    for r in &recs {
        out.extend(dep.run(Message::new(0, r.clone())));
    }
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].dest, 10);
    assert_eq!(out[1].dest, 20);
    // ByteSwap (the format handler) swapped each 32-bit word: converting again restores the record.
    let mut f = ByteSwap;
    let mut back = Vec::new();
    f.handle(out[0].clone(), &mut back);
    assert_eq!(back[0].payload, recs[0]);
}

#[test]
fn mirror_then_delta_gives_each_destination_its_own_updated_copy() {
    let mut dep = Deployment::single(Point::RxSide, Box::new(Mirror::new(vec![1, 2, 3])));
    dep.push(Point::TxSide, Box::new(Delta::paper(5)));
    let rec = record(1, 1, 1, 92); // 100 bytes
    let out = dep.run(Message::new(0, rec.clone()));
    assert_eq!(
        out.iter().map(|m| m.dest).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    for m in &out {
        let changed = m.payload.iter().zip(&rec).filter(|(a, b)| a != b).count();
        assert_eq!(changed, 20);
        assert_eq!(m.payload[20..], rec[20..]);
    }
}

#[test]
fn rudp_assembles_from_mpackets_handlers_run_and_fragments_leave_again() {
    use sansio::Instant;
    use stream_handlers::handlers::CustomMulticast;
    use stream_handlers::rudp::{HEADER_LEN, Reassembler, ReassemblyConfig, fragment};
    // 40 bytes of data + the 24-byte header: every packet is one 64-byte mpacket.
    let size = (64 - HEADER_LEN) as u16;
    let rec = record(7, 150, 42, 300);
    let mut packets = fragment(1, 9, 100, &rec, size).unwrap();
    assert!(packets.iter().all(|p| p.len() <= 64));
    packets.reverse();
    let mut rx = Reassembler::new(ReassemblyConfig::default());
    let assembled = packets
        .iter()
        .filter_map(|p| rx.handle_fragment(Instant::ZERO, p).unwrap())
        .next()
        .unwrap();
    assert_eq!(assembled.payload, rec);
    let band = Field::new(2, 2);
    let mc = CustomMulticast::new(
        vec![1, 2, 3],
        vec![(2, Predicate::Ge(band, 200)), (3, Predicate::Lt(band, 200))],
    );
    let mut dep = mc.deployment();
    let out = dep.run(Message::new(0, assembled.payload));
    assert_eq!(out.iter().map(|m| m.dest).collect::<Vec<_>>(), vec![1, 3]);
    // Each destination's copy is fragmented again and reassembles at the destination.
    for (k, m) in out.iter().enumerate() {
        let frags = fragment(m.dest, k as u32, 0, &m.payload, size).unwrap();
        let mut dst = Reassembler::new(ReassemblyConfig::default());
        let got: Vec<_> = frags
            .iter()
            .filter_map(|p| dst.handle_fragment(Instant::ZERO, p).unwrap())
            .collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].payload, rec);
    }
}
