//! The pieces of a reply: SACK blocks parsed into a reused buffer, a SYN's replay key, and one
//! planned response with its continuation (planned, then completed once every response's
//! continuation of the request is MACed).

use alloc::vec::Vec;

use super::cache::ContinuationCache;
use super::{PlannedResponse, Rejected, ServerConfig};
use crate::cc::{Slot, SlotKind};
use crate::conn::FourTuple;
use crate::crypto::ServerKeys;
use crate::delta;
use crate::limits::payload_limit;
use crate::replay;
use crate::sack::{self, MAX_SACK_BLOCKS, ProofError, SackBlock};
use crate::wire::continuation::Continuation;
use crate::wire::delta::ContinuationDelta;
use crate::wire::{ByteRange, Request, RequestKind, ResponseKind};

/// The Bloom key of a SYN: its connection nonce (a CMAC output, so uniform) folded with
/// the retry count the way [`replay::replay_hash`] folds a tag's.
pub(super) fn syn_hash(conn_nonce: u64, retry: u8) -> u64 {
    let mut tag = [0u8; 16];
    tag[..8].copy_from_slice(&conn_nonce.to_be_bytes());
    tag[8..].copy_from_slice(&(!conn_nonce).to_be_bytes());
    replay::replay_hash(&tag, retry)
}

/// The request's SACK blocks, shape-checked (nonces are checked with the responses'), into
/// `out` (cleared first, so a server can keep one `Vec` across requests instead of zeroing
/// room for [`MAX_SACK_BLOCKS`] on every one); returns how many. A timeout request (and a
/// FIN) may carry none.
pub(super) fn parse_blocks(req: &Request<'_>, out: &mut Vec<SackBlock>) -> Result<usize, Rejected> {
    out.clear();
    for chunk in req.sack_chunks() {
        if out.len() == MAX_SACK_BLOCKS {
            return Err(Rejected::Proof(ProofError::TooMany));
        }
        out.push(SackBlock::parse(chunk));
    }
    if out.is_empty() && req.kind == RequestKind::Timeout {
        return Ok(0);
    }
    sack::check_shape(out).map_err(Rejected::Proof)?;
    Ok(out.len())
}

/// One planned response before its continuation is MACed: the continuation (tag zeroed;
/// [`finish`] fills the rest once [`ServerKeys::mac_continuations`] has tagged every
/// response of the request together) and limits.
#[allow(clippy::too_many_arguments)] // The pieces of one response, all needed; a struct would only rename them.
#[inline(always)]
pub(super) fn plan(
    cfg: &ServerConfig,
    keys: &ServerKeys,
    slot: &Slot,
    nonce: u32,
    range: Option<ByteRange>,
    conn_nonce: u64,
    rtt_us: u32,
    now_ms: u32,
) -> PlannedResponse {
    let kind = match slot.kind {
        SlotKind::Retransmit => ResponseKind::Retransmit,
        SlotKind::Data | SlotKind::ContinuationOnly => ResponseKind::Data,
    };
    // Built where it stays and MACed there afterwards (`ServerKeys::mac_continuations`
    // reads its fields one by one): moving a freshly built continuation as a whole would
    // load, 16 bytes at a time, fields just written one by one.
    PlannedResponse {
        kind,
        packet_number: slot.number,
        nonce,
        continuation: slot.params.map(|p| Continuation {
            number: p.number,
            tcp_base: p.tcp_base,
            start_cwnd: p.start_cwnd,
            ssthresh: p.ssthresh,
            proof_start: p.proof_start,
            rtt_us,
            timestamp_ms: now_ms,
            epoch_start: p.epoch_start,
            rtx: p.rtx,
            site: cfg.site,
            key_epoch: keys.current_epoch(),
            flags: p.flags(),
            conn_nonce,
            tag: [0; 16],
        }),
        delta: None,
        range,
        limit: payload_limit(cfg.mss, slot.params.is_some()),
    }
}

/// Completes a response [`plan`] built from `slot` once its continuation is MACed:
/// remembers the continuation in `cache` (Fig. 13), and when `delta` is set computes its
/// delta from what the client predicts for it from `request`, the continuation the
/// request presented (`None` for a SYN, whose client predicted with delayed
/// acknowledgments iff `asked_delayed`).
#[allow(clippy::too_many_arguments)] // As for `plan`.
#[inline(always)]
pub(super) fn finish(
    keys: &ServerKeys,
    cache: &mut ContinuationCache,
    resp: &mut PlannedResponse,
    slot: &Slot,
    tuple: &FourTuple,
    request: Option<&Continuation>,
    delta: bool,
    asked_delayed: bool,
) {
    let Some(c) = resp.continuation.as_ref() else {
        return;
    };
    if cache.is_enabled()
        && let Some(id) = keys.key_id(c.key_epoch)
    {
        cache.insert(tuple, &c.mac_fields(), &c.tag, id);
    }
    if delta && let Some(p) = slot.params {
        let predicted = delta::predict(&p, request);
        // A SYN's client predicts with the delayed-ack mode it asked for; when that
        // is not the one granted, the delta could not say so: send it whole.
        let asked = request.is_some() || asked_delayed == p.delayed_ack;
        if asked && ContinuationDelta::reproduces(&predicted, c) {
            resp.delta = Some(ContinuationDelta::between(&predicted, c));
        }
    }
}
