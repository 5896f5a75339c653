//! The pieces of a reply: SACK blocks parsed into a reused buffer, a SYN's replay key, and one
//! planned response with its MACed continuation.

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

/// One planned response: its continuation (MACed over all its fields, and remembered in
/// `cache`, Fig. 13) and limits, and when `delta` is set the continuation's delta from what
/// the client predicts for it from `request`, the continuation the request presented
/// (`None` for a SYN, whose client predicted with delayed acknowledgments iff
/// `asked_delayed`).
#[allow(clippy::too_many_arguments)] // The pieces of one response, all needed; a struct would only rename them.
#[inline(always)]
pub(super) fn respond(
    cfg: &ServerConfig,
    keys: &ServerKeys,
    cache: &mut ContinuationCache,
    slot: &Slot,
    nonce: u32,
    range: Option<ByteRange>,
    tuple: &FourTuple,
    conn_nonce: u64,
    rtt_us: u32,
    now_ms: u32,
    request: Option<&Continuation>,
    delta: bool,
    asked_delayed: bool,
) -> PlannedResponse {
    let kind = match slot.kind {
        SlotKind::Retransmit => ResponseKind::Retransmit,
        SlotKind::Data | SlotKind::ContinuationOnly => ResponseKind::Data,
    };
    // Built where it stays and MACed in place: moving a freshly built continuation as a
    // whole would load, 16 bytes at a time, fields just written one by one.
    let mut resp = PlannedResponse {
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
    };
    if let Some(c) = resp.continuation.as_mut() {
        c.tag = keys.mac_continuation(tuple, c).unwrap_or_default();
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
    resp
}
