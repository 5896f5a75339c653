//! Per-trickle congestion control (§2.3–2.5): what one request makes the server send.
//!
//! [`plan`] is a pure function of a request's transport continuation, its SACK proof and
//! its kind. The server runs it to decide; the client runs the same function to predict
//! what its request will produce (how many responses, which packet numbers, which carry
//! data), so it can size the request and tell a missing packet from one that was never
//! going to be sent.
//!
//! ## Packet numbers
//!
//! Within a loss-free epoch (parameters `TCPBase`, `startCwnd`, `ssthresh`) request `k`
//! produces `W(k) − W(k−1) + 1` responses numbered from `k + W(k−1)` (§2.5), where
//! `W = TCPCwnd`, so the epoch's numbers are contiguous. Each response carries a
//! continuation with its own number; the request that later uses it is request `number`.
//!
//! ## Fast retransmit/recovery (§2.5 steps 1–3)
//!
//! A request whose proof shows a gap at or above the continuation's `proof_start` is in
//! recovery. With `j` the first missing packet:
//!
//! ```text
//! cwndAtLoss = W(j − 1)     newCwnd = max(cwndAtLoss / 2, 2)    lossOffset = k − j
//! R          = j − 1 + cwndAtLoss          (the highest number the epoch issued before j)
//! (a) continue iff cwndAtLoss − lossOffset + 1 ≤ newCwnd, else terminate
//! (2) if k follows a run of losses a..k−1: retransmit up to burstLimit of them
//! (b) ... and regenerate the continuations of the lost requests that (a) would have kept
//! ```
//!
//! The requests of the window at the loss are `j+1 ..= R`; (a) keeps the last
//! `newCwnd − 1` of them, and the retransmission of `j` — which TCP counts in flight —
//! is the `newCwnd`-th survivor, shipped as a continuation with the first retransmission.
//! Survivors are numbered `R+1 ..= R+newCwnd` and start the next epoch:
//! `TCPBase = R`, `startCwnd = ssthresh = newCwnd`, `proof_start = R + 1` (the loss is now
//! committed, so later proofs may drop it). Retransmissions keep the lost packet's number
//! and carry a nonce from the second key, so they never count in a SACK proof.
//!
//! ## Retransmit timeout
//!
//! A timeout request resets to slow start: `ssthresh = max(W(a − 1)/2, 2)` with `a` the
//! first loss in the proof (or `k + 1` if none), `cwnd = min(initialCwnd, ssthresh)`, and
//! `cwnd` data responses open an epoch numbered beyond anything the old one can have
//! issued.

pub mod window;

use alloc::vec::Vec;

use crate::sack::SackBlock;
use crate::wire::continuation::{Continuation, EpochStart};
use window::tcp_cwnd;

/// Congestion-control settings the server and its clients agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// Window of a new connection and after a retransmit timeout (the paper's
    /// `InitialCwnd`; the original code starts at 3).
    pub initial_cwnd: u16,
    /// Initial slow-start threshold of a new connection.
    pub initial_ssthresh: u16,
    /// Largest window, in packets (the original caps at 8191).
    pub max_cwnd: u16,
    /// Most lost packets one request may have retransmitted (§2.5 step 2).
    pub burst_limit: u16,
    /// Delayed acknowledgments (§2.1, §2.5: "Trickles acknowledges every other packet"):
    /// only every other packet of an epoch (those an even distance from `TCPBase`)
    /// carries a continuation, and the request made with it acknowledges that packet and
    /// the one before, as two consecutive requests would. Halves requests and MAC checks;
    /// the window follows the same `TCPCwnd`.
    ///
    /// It is negotiated per connection: a client with it set asks in its SYN
    /// ([`REQUEST_FLAG_DELAYED_ACK`](crate::wire::REQUEST_FLAG_DELAYED_ACK)), a server with
    /// it set grants what is asked, and the connection's continuations then carry
    /// [`CONTINUATION_FLAG_DELAYED_ACK`](crate::wire::continuation::CONTINUATION_FLAG_DELAYED_ACK)
    /// under their MAC. [`plan`] reads the continuation's flag, not this field, so a client
    /// that does not ask is acknowledged packet by packet by a server that would grant
    /// it, and the other way round.
    ///
    /// Pairing applies in the connection's first epoch (from the SYN); an epoch that
    /// begins at a loss (fast recovery, a retransmit timeout) acknowledges every packet,
    /// so recovery runs exactly as without delayed acks (see `pairs`). On by default, as
    /// the paper's implementation ran: over the simulator's links the paper's figures are
    /// the same as without (within 2% at every RTT of `waist repro trickles-rtt`; equal or
    /// better at every loss rate of `trickles-loss`).
    pub delayed_ack: bool,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            initial_cwnd: 3,
            initial_ssthresh: 8191,
            max_cwnd: 8191,
            burst_limit: 8,
            delayed_ack: true,
        }
    }
}

/// What kind of request is being planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestMode {
    /// An ordinary request (at-most-once).
    Normal,
    /// A client-initiated retransmit-timeout request.
    Timeout,
}

/// What one planned response is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// A new packet: carries a continuation and may carry data.
    Data,
    /// A regenerated continuation for a lost request (§2.5 (b), and the survivor that
    /// stands for the retransmission): a continuation, no data.
    ContinuationOnly,
    /// A retransmission of lost packet `number`: data only, nonce from the second key.
    Retransmit,
}

impl SlotKind {
    /// Whether the slot is given one of the request's byte ranges.
    pub fn carries_data(self) -> bool {
        matches!(self, SlotKind::Data | SlotKind::Retransmit)
    }
}

/// The congestion-control fields of a continuation the server will issue (the rest —
/// RTT, timestamp, site, key epoch, connection nonce, tag — the server adds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Packet number of the new continuation.
    pub number: u32,
    /// Epoch base of `TCPCwnd`.
    pub tcp_base: u32,
    /// Epoch start window.
    pub start_cwnd: u16,
    /// Epoch slow-start threshold.
    pub ssthresh: u16,
    /// Lowest packet number later proofs must describe.
    pub proof_start: u32,
    /// How the epoch began.
    pub epoch_start: EpochStart,
    /// Consecutive timeouts that led here.
    pub rtx: u8,
    /// Whether the connection runs with delayed acknowledgments: the continuation's
    /// [`CONTINUATION_FLAG_DELAYED_ACK`](crate::wire::continuation::CONTINUATION_FLAG_DELAYED_ACK),
    /// the same for every continuation of a connection.
    pub delayed_ack: bool,
}

impl Params {
    /// The continuation flags these parameters give.
    pub fn flags(&self) -> u8 {
        if self.delayed_ack {
            crate::wire::continuation::CONTINUATION_FLAG_DELAYED_ACK
        } else {
            0
        }
    }
}

/// One response a request produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Packet number of the response.
    pub number: u32,
    /// What the response is.
    pub kind: SlotKind,
    /// The continuation it carries (`None` for retransmissions).
    pub params: Option<Params>,
}

/// Why a request cannot be planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A normal request's proof does not end at the request's own packet number.
    ProofMissesRequest,
    /// The proof claims packets beyond the request's own number.
    ProofAhead,
    /// Packet numbers would overflow 32 bits.
    Exhausted,
    /// A recovery request whose number lies beyond the window at the loss it reports:
    /// no honest client holds such a continuation.
    OutsideWindow,
}

impl core::fmt::Display for PlanError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlanError::ProofMissesRequest => {
                f.write_str("SACK proof does not acknowledge the request's packet")
            }
            PlanError::ProofAhead => {
                f.write_str("SACK proof covers packets after the request's packet")
            }
            PlanError::Exhausted => f.write_str("packet numbers exhausted"),
            PlanError::OutsideWindow => {
                f.write_str("request lies beyond the window at the loss it reports")
            }
        }
    }
}

/// The epoch parameters of a continuation, as `TCPCwnd` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Epoch {
    tcp_base: u32,
    start_cwnd: u16,
    ssthresh: u16,
    max_cwnd: u16,
}

impl Epoch {
    fn of(c: &Continuation, cfg: &CcConfig) -> Epoch {
        Epoch {
            tcp_base: c.tcp_base,
            start_cwnd: c.start_cwnd.max(1),
            // An epoch's first window is its start; TCPCwnd never reads below it.
            ssthresh: c.ssthresh.max(c.start_cwnd).max(1),
            max_cwnd: cfg.max_cwnd.max(1),
        }
    }

    /// `TCPCwnd(k)`, capped at `max_cwnd`.
    fn w(&self, k: u32) -> u32 {
        tcp_cwnd(
            u64::from(k),
            u64::from(self.tcp_base),
            u32::from(self.start_cwnd),
            u32::from(self.ssthresh),
        )
        .clamp(1, u32::from(self.max_cwnd))
    }
}

/// The missing packets a proof reports in `from..=k`: maximal runs `(first, last)`.
///
/// Blocks must be in increasing order (check their shape first); parts below `from` are
/// ignored.
pub fn losses(proof: &[SackBlock], from: u32, k: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
    let mut next = from;
    proof.iter().filter_map(move |b| {
        if b.right < next || b.left > k {
            return None;
        }
        let gap = (b.left > next).then(|| (next, b.left - 1));
        next = b.right.saturating_add(1);
        gap
    })
}

/// Plans the responses to a request that presents continuation `c` with SACK proof
/// `proof` (already shape-checked, nonces verified by the server).
///
/// A normal request's proof must end exactly at `c.number`; a timeout request's proof
/// may be empty or reach past it (the client times out with its latest continuation,
/// and may hold later packets that carried none).
pub fn plan(
    c: &Continuation,
    proof: &[SackBlock],
    mode: RequestMode,
    cfg: &CcConfig,
) -> Result<Vec<Slot>, PlanError> {
    let mut slots = Vec::new();
    plan_into(c, proof, mode, cfg, &mut slots)?;
    Ok(slots)
}

/// [`plan`] into `out` (cleared first), so a caller can reuse one buffer for every request.
pub fn plan_into(
    c: &Continuation,
    proof: &[SackBlock],
    mode: RequestMode,
    cfg: &CcConfig,
    out: &mut Vec<Slot>,
) -> Result<(), PlanError> {
    out.clear();
    let k = c.number;
    let last = proof.last().map(|b| b.right);
    if mode == RequestMode::Normal && last.is_some_and(|r| r > k) {
        return Err(PlanError::ProofAhead);
    }
    let ep = Epoch::of(c, cfg);
    let first_loss = losses(proof, c.proof_start, k).next().map(|(a, _)| a);
    match mode {
        RequestMode::Timeout => timeout(c, ep, first_loss, cfg, out)?,
        RequestMode::Normal => {
            if last != Some(k) {
                return Err(PlanError::ProofMissesRequest);
            }
            // With delayed acks the request stands for requests k − 1 and k, unless
            // packet k − 1 was lost (then recovery regenerates it like any lost request).
            let pair = pairs(c)
                && k.checked_sub(1).is_some_and(|p| {
                    p >= c.proof_start
                        && !losses(proof, c.proof_start, k).any(|(a, b)| a <= p && p <= b)
                });
            for v in if pair { k - 1..=k } else { k..=k } {
                let cv = Continuation { number: v, ..*c };
                match losses(proof, c.proof_start, v).next().map(|(a, _)| a) {
                    None => normal(&cv, ep, out)?,
                    Some(j) => recovery(&cv, ep, proof, j, cfg, out)?,
                }
            }
        }
    }
    delay(out);
    Ok(())
}

/// Whether the epoch of `c` acknowledges packets in pairs: delayed acknowledgments were
/// negotiated and the epoch is the connection's first (it began at the SYN). Epochs that
/// begin at a loss (fast recovery, a retransmit timeout) acknowledge every packet: their
/// survivors are numbered in order of the requests that happen to survive, so which of
/// them would carry a continuation under pairing is left to chance, and a recovery whose
/// survivors all fell on packets without one would leave the connection with no
/// continuation at all (a retransmit timeout each time; over a link reordering a few
/// packets in a thousand, 45 s against 4 s for 20 MB in the simulator).
fn pairs(c: &Continuation) -> bool {
    c.delayed_ack() && c.epoch_start == EpochStart::Open
}

/// With delayed acks in an epoch that pairs them ([`pairs`]), strips the continuation from
/// packets an odd distance from their epoch's base: each is acknowledged with the next
/// one. They keep their numbers, so the epoch's numbers stay contiguous.
fn delay(slots: &mut [Slot]) {
    for slot in slots {
        if slot.params.is_some_and(|p| {
            p.delayed_ack
                && p.epoch_start == EpochStart::Open
                && !p.number.wrapping_sub(p.tcp_base).is_multiple_of(2)
        }) {
            slot.params = None;
            if slot.kind == SlotKind::ContinuationOnly {
                slot.kind = SlotKind::Data;
            }
        }
    }
}

fn normal(c: &Continuation, ep: Epoch, out: &mut Vec<Slot>) -> Result<(), PlanError> {
    let k = c.number;
    let before = ep.w(k.saturating_sub(1));
    let after = ep.w(k).max(before);
    let first = k.checked_add(before).ok_or(PlanError::Exhausted)?;
    let count = after - before + 1;
    first.checked_add(count).ok_or(PlanError::Exhausted)?;
    out.extend((0..count).map(|i| {
        let number = first + i;
        Slot {
            number,
            kind: SlotKind::Data,
            params: Some(Params {
                number,
                tcp_base: c.tcp_base,
                start_cwnd: c.start_cwnd,
                ssthresh: c.ssthresh,
                proof_start: c.proof_start,
                epoch_start: c.epoch_start,
                rtx: 0,
                delayed_ack: c.delayed_ack(),
            }),
        }
    }));
    Ok(())
}

fn recovery(
    c: &Continuation,
    ep: Epoch,
    proof: &[SackBlock],
    j: u32,
    cfg: &CcConfig,
    out: &mut Vec<Slot>,
) -> Result<(), PlanError> {
    let k = c.number;
    let cwnd_at_loss = ep.w(j.saturating_sub(1));
    let new_cwnd = (cwnd_at_loss / 2).max(2);
    let r = j
        .saturating_sub(1)
        .checked_add(cwnd_at_loss)
        .ok_or(PlanError::Exhausted)?;
    r.checked_add(new_cwnd + 1).ok_or(PlanError::Exhausted)?;
    if k > r {
        return Err(PlanError::OutsideWindow);
    }
    // (a): offsets at or past `keep_from` survive, numbered from R + 1.
    let keep_from = (cwnd_at_loss + 1).saturating_sub(new_cwnd);
    let survivor = |offset: u32| -> Option<u32> {
        // Only requests of the window at the loss (offsets below cwndAtLoss) exist.
        (offset >= keep_from && offset < cwnd_at_loss).then(|| r + 1 + (offset - keep_from))
    };
    let params = |number: u32| Params {
        number,
        tcp_base: r,
        start_cwnd: new_cwnd as u16,
        ssthresh: new_cwnd as u16,
        proof_start: r + 1,
        epoch_start: EpochStart::Recovery,
        rtx: 0,
        delayed_ack: c.delayed_ack(),
    };
    // The run of losses right before k, if k is the first packet after it.
    let run = losses(proof, c.proof_start, k)
        .last()
        .filter(|&(_, b)| b.checked_add(1) == Some(k));
    if let Some((a, b)) = run {
        // (2) retransmit the run, up to burstLimit packets.
        let limit = u32::from(cfg.burst_limit);
        for lost in (a..=b).take(limit as usize) {
            out.push(Slot {
                number: lost,
                kind: SlotKind::Retransmit,
                params: None,
            });
        }
        // The retransmission of the first loss is a trickle of the new window.
        if a == j {
            let n = r + new_cwnd;
            out.push(Slot {
                number: n,
                kind: SlotKind::ContinuationOnly,
                params: Some(params(n)),
            });
        }
        // (b) regenerate lost requests that (a) would have kept (only offsets inside the
        // window can qualify, so the loop is bounded by the window, not by the run). With
        // delayed acks the request for packet a − 1 (no continuation of its own) would have
        // ridden in a's, so it went missing with a.
        let first_missing = if pairs(c) && a.wrapping_sub(c.tcp_base).is_multiple_of(2) {
            a.saturating_sub(1)
        } else {
            a
        };
        let from = first_missing.max(j.saturating_add(keep_from));
        for lost in from..=b {
            if let Some(n) = survivor(lost.saturating_sub(j)) {
                out.push(Slot {
                    number: n,
                    kind: SlotKind::ContinuationOnly,
                    params: Some(params(n)),
                });
            }
        }
    }
    // (a) continue or terminate this trickle.
    if let Some(n) = survivor(k.saturating_sub(j)) {
        out.push(Slot {
            number: n,
            kind: SlotKind::Data,
            params: Some(params(n)),
        });
    }
    Ok(())
}

fn timeout(
    c: &Continuation,
    ep: Epoch,
    first_loss: Option<u32>,
    cfg: &CcConfig,
    out: &mut Vec<Slot>,
) -> Result<(), PlanError> {
    let k = c.number;
    let a = first_loss.unwrap_or(k.saturating_add(1));
    let ssthresh = (ep.w(a.saturating_sub(1)) / 2).max(2);
    // Never above ssthresh: the epoch must start in slow start for its numbering (and
    // Reno's loss window is 1, so this stays conservative).
    let cwnd = u32::from(cfg.initial_cwnd.max(1)).min(ssthresh);
    // Every number the old epoch can have issued is at most k + W(k) (normal requests)
    // plus a recovery's newCwnd ≤ W(k) survivors.
    let wk = ep.w(k);
    let base = k
        .checked_add(wk)
        .and_then(|n| n.checked_add(wk))
        .and_then(|n| n.checked_add(1))
        .ok_or(PlanError::Exhausted)?;
    base.checked_add(cwnd).ok_or(PlanError::Exhausted)?;
    let rtx = c.rtx.saturating_add(1).min(15);
    out.extend((1..=cwnd).map(|i| {
        let number = base + i;
        Slot {
            number,
            kind: SlotKind::Data,
            params: Some(Params {
                number,
                tcp_base: base,
                start_cwnd: cwnd as u16,
                ssthresh: ssthresh.min(u32::from(u16::MAX)) as u16,
                proof_start: base + 1,
                epoch_start: EpochStart::Timeout,
                rtx,
                delayed_ack: c.delayed_ack(),
            }),
        }
    }));
    Ok(())
}

/// The continuation parameters of a new connection's first `initial_cwnd` trickles,
/// numbered `1..=initial_cwnd` (epoch base 0), with delayed acknowledgments if
/// `cfg.delayed_ack` (for a server: if it grants them to this SYN).
pub fn open(cfg: &CcConfig) -> Vec<Slot> {
    let cwnd = u32::from(cfg.initial_cwnd.max(1));
    let mut slots: Vec<Slot> = (1..=cwnd)
        .map(|number| Slot {
            number,
            kind: SlotKind::Data,
            params: Some(Params {
                number,
                tcp_base: 0,
                start_cwnd: cwnd as u16,
                ssthresh: cfg.initial_ssthresh.max(cwnd as u16),
                proof_start: 1,
                epoch_start: EpochStart::Open,
                rtx: 0,
                delayed_ack: cfg.delayed_ack,
            }),
        })
        .collect();
    delay(&mut slots);
    slots
}
