//! Per-trickle congestion control (§2.5): the plan a request produces.

// Test harness: panics are the failure reports.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;

use proptest::prelude::*;
use trickles::cc::{self, CcConfig, RequestMode, SlotKind};
use trickles::continuation::{Continuation, EpochStart};
use trickles::cwnd::{RenoSim, tcp_cwnd};
use trickles::sack::SackBlock;

fn cont(
    number: u32,
    tcp_base: u32,
    start_cwnd: u16,
    ssthresh: u16,
    proof_start: u32,
) -> Continuation {
    Continuation {
        number,
        tcp_base,
        start_cwnd,
        ssthresh,
        proof_start,
        rtt_us: 0,
        timestamp_ms: 0,
        epoch_start: EpochStart::Open,
        rtx: 0,
        site: 0,
        key_epoch: 0,
        flags: 0,
        conn_nonce: 7,
        tag: [0; 16],
    }
}

/// A proof claiming `proof_start..=k` minus `lost` (nonces are not checked by `plan`).
fn proof(from: u32, k: u32, lost: &BTreeSet<u32>) -> Vec<SackBlock> {
    let mut blocks: Vec<SackBlock> = Vec::new();
    for i in from..=k {
        if lost.contains(&i) {
            continue;
        }
        match blocks.last_mut() {
            Some(b) if b.right + 1 == i => b.right = i,
            _ => blocks.push(SackBlock {
                left: i,
                right: i,
                nonce: 0,
            }),
        }
    }
    blocks
}

/// Fig. 9 (TCPBase 40, startCwnd 3, ssthresh 8): processing requests in order, each
/// request's responses are exactly the packets TCP Reno sends on that ack, and the number
/// of trickles in flight is Reno's cwnd.
#[test]
fn loss_free_trickles_send_what_reno_sends() {
    let cfg = CcConfig::default();
    let (base, start, ssthresh) = (40u32, 3u16, 8u16);
    let mut reno = RenoSim::new(u32::from(start), u32::from(ssthresh));
    let mut snd_nxt = base + 1 + u32::from(start);
    let mut in_flight: BTreeSet<u32> = (base + 1..snd_nxt).collect();
    for k in base + 1..base + 2_000 {
        assert!(in_flight.remove(&k), "request {k} acks a packet in flight");
        let slots = cc::plan(
            &cont(k, base, start, ssthresh, base + 1),
            &proof(base + 1, k, &BTreeSet::new()),
            RequestMode::Normal,
            &cfg,
        )
        .unwrap();
        reno.ack();
        let sent_by_reno: Vec<u32> = (snd_nxt..k + 1 + reno.cwnd).collect();
        let numbers: Vec<u32> = slots.iter().map(|s| s.number).collect();
        assert_eq!(numbers, sent_by_reno, "request {k}");
        assert!(
            slots
                .iter()
                .all(|s| s.kind == SlotKind::Data && s.params.unwrap().number == s.number)
        );
        snd_nxt = k + 1 + reno.cwnd;
        in_flight.extend(numbers);
        assert_eq!(in_flight.len() as u32, reno.cwnd, "request {k}");
        assert_eq!(reno.cwnd, tcp_cwnd(u64::from(k), u64::from(base), 3, 8));
    }
}

/// Runs every request of the window at a loss of `lost` (first loss `j`) through `plan`
/// and returns all slots, the survivors' numbers and the new epoch.
fn recover(cwnd_at_loss_k: u32, lost: &BTreeSet<u32>, cfg: &CcConfig) -> (Vec<cc::Slot>, u32, u32) {
    // An epoch that began at j - 1 with startCwnd = ssthresh = w keeps W(k) = w through
    // the whole window.
    let j = *lost.first().unwrap();
    let (base, w) = (j - 1, cwnd_at_loss_k as u16);
    let r = j - 1 + u32::from(w);
    let mut all = Vec::new();
    for k in j + 1..=r {
        if lost.contains(&k) {
            continue;
        }
        let c = cont(k, base, w, w, 1);
        all.extend(cc::plan(&c, &proof(1, k, lost), RequestMode::Normal, cfg).unwrap());
    }
    (all, r, u32::from(w) / 2)
}

/// Fig. 10: one loss in a window of 9 leaves newCwnd = 4 survivors numbered R+1..=R+4,
/// the lost packet retransmitted once, and the next epoch's initial conditions.
#[test]
fn one_loss_halves_the_window_with_one_retransmission() {
    let cfg = CcConfig::default();
    let lost: BTreeSet<u32> = [20].into();
    let (slots, r, new_cwnd) = recover(9, &lost, &cfg);
    assert_eq!(new_cwnd, 4);
    let retransmits: Vec<u32> = slots
        .iter()
        .filter(|s| s.kind == SlotKind::Retransmit)
        .map(|s| s.number)
        .collect();
    assert_eq!(retransmits, vec![20]);
    let survivors: Vec<u32> = slots
        .iter()
        .filter(|s| s.params.is_some())
        .map(|s| s.number)
        .collect();
    let mut sorted = survivors.clone();
    sorted.sort();
    assert_eq!(sorted, (r + 1..=r + 4).collect::<Vec<_>>());
    for s in slots.iter().filter_map(|s| s.params) {
        assert_eq!(
            (
                s.tcp_base,
                s.start_cwnd,
                s.ssthresh,
                s.proof_start,
                s.epoch_start
            ),
            (r, 4, 4, r + 1, EpochStart::Recovery)
        );
    }
    // The next epoch continues loss-free: request R+1 sends R+1+4.
    let next = cont(r + 1, r, 4, 4, r + 1);
    let slots = cc::plan(
        &next,
        &proof(r + 1, r + 1, &BTreeSet::new()),
        RequestMode::Normal,
        &cfg,
    )
    .unwrap();
    assert_eq!(
        slots.iter().map(|s| s.number).collect::<Vec<_>>(),
        vec![r + 5]
    );
}

proptest! {
    /// Whatever is lost in the window, recovery issues each number at most once, never
    /// more than newCwnd survivors, retransmits each lost packet at most once (up to
    /// burstLimit per run), and every survivor lies in R+1..=R+newCwnd.
    #[test]
    fn recovery_is_consistent_for_any_loss_pattern(w in 2u32..40, pattern in proptest::collection::vec(any::<bool>(), 40), burst in 1u16..10) {
        let cfg = CcConfig { burst_limit: burst, ..CcConfig::default() };
        let j = 100u32;
        let mut lost: BTreeSet<u32> = [j].into();
        for (i, &l) in pattern.iter().enumerate().take(w as usize - 1) {
            if l { lost.insert(j + 1 + i as u32); }
        }
        let (slots, r, half) = recover(w, &lost, &cfg);
        let new_cwnd = half.max(2);
        let mut seen = BTreeSet::new();
        for s in slots.iter().filter(|s| s.params.is_some()) {
            prop_assert!(seen.insert(s.number), "number {} issued twice", s.number);
            prop_assert!(s.number > r && s.number <= r + new_cwnd);
        }
        prop_assert!(seen.len() as u32 <= new_cwnd);
        let mut rtx = BTreeSet::new();
        for s in slots.iter().filter(|s| s.kind == SlotKind::Retransmit) {
            prop_assert!(lost.contains(&s.number));
            prop_assert!(rtx.insert(s.number));
        }
        // With every loss followed by a received packet, no survivor is missing.
        if !lost.contains(&r) {
            prop_assert_eq!(seen.len() as u32, new_cwnd.min(w));
        }
    }
}

/// A timeout request resets to slow start: initialCwnd survivors in a fresh epoch beyond
/// anything the old one issued, ssthresh half the window at the first loss.
#[test]
fn timeout_restarts_slow_start_beyond_old_numbers() {
    let cfg = CcConfig::default();
    let c = cont(500, 0, 3, 16, 400);
    let lost: BTreeSet<u32> = [450].into();
    let slots = cc::plan(&c, &proof(400, 480, &lost), RequestMode::Timeout, &cfg).unwrap();
    assert_eq!(slots.len(), usize::from(cfg.initial_cwnd));
    let w_old = tcp_cwnd(500, 0, 3, 16);
    let w_at_loss = tcp_cwnd(449, 0, 3, 16);
    for s in &slots {
        let p = s.params.unwrap();
        assert!(s.number > 500 + w_old);
        assert_eq!(
            (p.start_cwnd, p.ssthresh, p.epoch_start, p.rtx),
            (3, (w_at_loss / 2) as u16, EpochStart::Timeout, 1)
        );
        assert_eq!(p.proof_start, p.tcp_base + 1);
    }
}

#[test]
fn proofs_inconsistent_with_the_request_are_refused() {
    let cfg = CcConfig::default();
    let c = cont(50, 0, 3, 8, 1);
    let none = BTreeSet::new();
    assert_eq!(
        cc::plan(&c, &proof(1, 49, &none), RequestMode::Normal, &cfg),
        Err(cc::PlanError::ProofMissesRequest)
    );
    assert_eq!(
        cc::plan(&c, &proof(1, 51, &none), RequestMode::Normal, &cfg),
        Err(cc::PlanError::ProofAhead)
    );
    assert_eq!(
        cc::plan(&c, &[], RequestMode::Normal, &cfg),
        Err(cc::PlanError::ProofMissesRequest)
    );
    let edge = cc::plan(
        &cont(u32::MAX - 1, 0, 3, 8, 1),
        &proof(u32::MAX - 1, u32::MAX - 1, &none),
        RequestMode::Normal,
        &cfg,
    );
    assert_eq!(edge, Err(cc::PlanError::OutsideWindow));
    let edge = cc::plan(
        &cont(u32::MAX - 1, 0, 3, 8, u32::MAX - 1),
        &proof(u32::MAX - 1, u32::MAX - 1, &none),
        RequestMode::Normal,
        &cfg,
    );
    assert_eq!(edge, Err(cc::PlanError::Exhausted));
}
