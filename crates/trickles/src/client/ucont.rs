//! The client's store of standard user continuations (§4.1–§4.3).
//!
//! The client cannot verify user continuations (the application's key is the server's),
//! but it reads their standard fields to decide which one each request carries:
//!
//! * a request carrying client data goes with the [`Input`](UserContinuation::Input)
//!   continuation that has consumed the most input, and a response whose input
//!   continuation consumed less than the request carried sends the rest again;
//! * a request for output goes with the [`Output`](UserContinuation::Output)
//!   continuation whose `valid_start..valid_end` covers its first range, and its ranges
//!   stay inside that;
//! * otherwise a request carries the user continuation that arrived with the transport
//!   continuation it spends (opaque application state, or none).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::app::UserContinuation;

/// Output continuations by `valid_start`, and the best input continuation.
#[derive(Debug, Default)]
pub(super) struct UcontStore {
    /// `valid_start` → (`valid_end`, sealed bytes).
    outputs: BTreeMap<u64, (u64, Vec<u8>)>,
    /// (`consumed`, sealed bytes) of the input continuation that consumed the most.
    input: Option<(u64, Vec<u8>)>,
}

/// The `consumed` field of an input continuation.
pub(super) fn input_consumed(ucont: &[u8]) -> Option<u64> {
    match UserContinuation::parse(ucont) {
        Ok((UserContinuation::Input { consumed, .. }, _)) => Some(consumed),
        _ => None,
    }
}

impl UcontStore {
    /// Files `ucont` (from any response) by its standard fields; others are ignored.
    pub(super) fn learn(&mut self, ucont: &[u8]) {
        match UserContinuation::parse(ucont) {
            Ok((UserContinuation::Input { consumed, .. }, _))
                if self.input.as_ref().is_none_or(|(c, _)| consumed > *c) =>
            {
                self.input = Some((consumed, ucont.to_vec()));
            }
            Ok((
                UserContinuation::Output {
                    valid_start,
                    valid_end,
                    ..
                },
                _,
            )) => {
                self.outputs
                    .insert(valid_start, (valid_end, ucont.to_vec()));
            }
            _ => {}
        }
    }

    /// The input continuation to send data with.
    pub(super) fn input(&self) -> Option<&[u8]> {
        self.input.as_ref().map(|(_, u)| u.as_slice())
    }

    /// The output continuation covering byte `offset`, with its `valid_end`.
    pub(super) fn output_for(&self, offset: u64) -> Option<(u64, &[u8])> {
        self.outputs
            .range(..=offset)
            .next_back()
            .filter(|(_, (end, _))| offset < *end)
            .map(|(_, (end, u))| (*end, u.as_slice()))
    }

    /// Whether any output continuation is known: from then on the client asks only for
    /// bytes inside known output regions.
    pub(super) fn has_outputs(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// The first known output region that ends after `offset`: `(valid_start, valid_end)`.
    pub(super) fn region_after(&self, offset: u64) -> Option<(u64, u64)> {
        // A region starting at or before `offset` may still cover it.
        if let Some((&start, &(end, _))) = self.outputs.range(..=offset).next_back()
            && end > offset
        {
            return Some((start, end));
        }
        self.outputs
            .range(offset.saturating_add(1)..)
            .find(|(start, (end, _))| end > start)
            .map(|(&start, &(end, _))| (start, end))
    }
}
