//! What a client predicts of each continuation the server will issue, the half of delta
//! encoding (paper §5.3) that is congestion control rather than format: the format,
//! [`ContinuationDelta`], lives in [`crate::wire::delta`] (re-exported here, so
//! `trickles::delta::ContinuationDelta` still works).
//!
//! # What "predicted" means
//!
//! Server and client compute the same prediction, [`predict`], from values both hold: a
//! request's planned slot (its [`Params`]) and the continuation the request carried (none
//! for a SYN). For a response to request `R` that presents continuation `c` (or none) and
//! whose plan gave the slot `params`:
//!
//! | field                                   | predicted value                      |
//! |-----------------------------------------|--------------------------------------|
//! | `number`, `tcp_base`, `start_cwnd`, `ssthresh`, `proof_start`, `epoch_start`, `rtx` | from `params` |
//! | `site`, `key_epoch`, `conn_nonce`       | `c`'s (0 for a SYN's responses)      |
//! | `flags`                                 | from `params` (`delayed_ack`)        |
//! | `rtt_us`, `timestamp_ms`, `tag`         | not predicted: always sent           |
//!
//! The server plans from the continuation and SACK proof the request carries; the client
//! plans from the same continuation and proof before sending them, with the same
//! [`CcConfig`](crate::cc::CcConfig). So the congestion fields always agree, and the delta
//! carries `site` and `key_epoch` only after a site change or key rotation, and
//! `conn_nonce` only in a SYN's responses. Should the two ever disagree (a client with
//! another `CcConfig`), the rebuilt continuation is wrong and the server rejects it by MAC:
//! nothing is trusted that the MAC did not cover.

use crate::cc::Params;
use crate::wire::continuation::Continuation;
/// The format, re-exported: it lives in [`crate::wire::delta`].
pub use crate::wire::delta::{ContinuationDelta, DELTA_MAX_LEN, DELTA_MIN_LEN};

/// The continuation a client predicts for the response slot `params` of a request that
/// presented `request` (`None` for a SYN): see the module docs. `rtt_us`, `timestamp_ms`
/// and `tag` are 0; a [`ContinuationDelta`] always supplies them.
pub fn predict(params: &Params, request: Option<&Continuation>) -> Continuation {
    Continuation {
        number: params.number,
        tcp_base: params.tcp_base,
        start_cwnd: params.start_cwnd,
        ssthresh: params.ssthresh,
        proof_start: params.proof_start,
        rtt_us: 0,
        timestamp_ms: 0,
        epoch_start: params.epoch_start,
        rtx: params.rtx,
        site: request.map_or(0, |c| c.site),
        key_epoch: request.map_or(0, |c| c.key_epoch),
        flags: params.flags(),
        conn_nonce: request.map_or(0, |c| c.conn_nonce),
        tag: [0; 16],
    }
}
