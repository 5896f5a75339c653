//! What the client does with the server's responses: parse each segment, rebuild delta-encoded
//! continuations, file data for reassembly, and resolve packets as received or lost.

use super::*;

impl Client {
    /// Handles one segment from the server (the bytes after the IP header) that arrived
    /// at `now`.
    pub fn handle_segment(&mut self, now: Instant, tcp: &[u8]) -> Result<(), ClientError> {
        let now_us = self.clock(now);
        let seg = wire::parse_segment_with(
            &self.tuple.server_addr,
            &self.tuple.client_addr,
            tcp,
            self.cfg.checksum,
        )?;
        if seg.src_port != self.tuple.server_port || seg.dst_port != self.tuple.client_port {
            return Err(ClientError::OtherConnection);
        }
        let resp = Response::parse(seg.payload)?;
        if resp.kind == ResponseKind::Reset {
            // The server refused the connection (for example a request its application
            // cannot summarise statelessly): stop sending and keep what arrived.
            self.deadline = None;
            self.reset = true;
            self.transmit.clear();
            return Err(ClientError::Reset);
        }
        if self.reset {
            return Err(ClientError::Reset);
        }
        let continuation = self.rebuild(&resp);
        if let Some(c) = &continuation
            && let Some((l, _)) = &self.latest
            && c.conn_nonce != l.conn_nonce
        {
            return Err(ClientError::OtherConnection);
        }
        let end = resp.offset.saturating_add(resp.data.len() as u64);
        if end > self.requested_end {
            // Data the client never asked for (responses carry no MAC the client can
            // check): refusing it bounds the reassembly buffer by what was requested.
            return Err(ClientError::Unrequested);
        }
        self.stats.responses += 1;
        let consumed = self.take_uconts(resp.user_continuation);
        let mut progress = false;
        if !resp.data.is_empty() && !self.recv.has(resp.offset, resp.data.len() as u64) {
            progress = true;
        }
        if resp.end_of_stream {
            // Before the data: delivery stops there, whatever follows in sequence order.
            self.recv.set_end(end);
            progress = true;
        }
        self.recv.insert(resp.offset, resp.data);
        if let Some(o) = self.outstanding.get(&resp.offset).copied()
            && let got = u64::from(o.len).min(resp.data.len() as u64)
            && (got == 0 || self.recv.has(resp.offset, got))
        {
            if resp.data.len() >= usize::from(o.len) || resp.end_of_stream {
                self.outstanding.remove(&resp.offset);
            } else {
                // A short answer (the application had less to send yet, or a retried
                // request's halved limit): ask for the rest again.
                self.range_short(resp.offset, resp.data.len() as u16);
            }
        }
        let mut direct = None;
        if resp.kind == ResponseKind::Retransmit {
            self.stats.retransmissions += 1;
        } else if resp.packet_number >= self.floor
            && !self.arrived.contains_key(&resp.packet_number)
        {
            if let Some(sent) = self
                .expected
                .get_mut(&resp.packet_number)
                .and_then(|e| e.sent_at.take())
            {
                self.rtt_sample(now_us.saturating_sub(sent));
            }
            // The user continuation, shared with the latest one when the bytes are the
            // same (a bulk transfer's responses all carry one): no copy per packet.
            let cont = continuation.map(|c| {
                let ucont = match &self.latest {
                    Some((_, u)) if **u == *resp.user_continuation => Arc::clone(u),
                    _ => Arc::from(resp.user_continuation),
                };
                (c, ucont)
            });
            if let Some((c, u)) = &cont
                && self
                    .latest
                    .as_ref()
                    .is_none_or(|(l, _)| c.number > l.number)
            {
                self.latest = Some((*c, Arc::clone(u)));
                progress = true;
            }
            let arrival = Arrival {
                nonce: resp.nonce,
                continuation: cont,
                consumed,
            };
            let n = resp.packet_number;
            if self.arrived.is_empty()
                && self.expected.first_key_value().is_none_or(|(&e, _)| n <= e)
            {
                // In order (the common case): resolved first thing below, never filed.
                direct = Some((n, arrival));
            } else {
                self.arrived.insert(n, arrival);
            }
        }
        if progress {
            self.timeouts_in_row = 0;
            self.rto_us = self.computed_rto();
        }
        if let Some((n, arrival)) = direct {
            self.accept(now_us, n, arrival);
        }
        self.resolve(now_us);
        self.unpark(now_us);
        self.arm(now_us, progress);
        Ok(())
    }

    /// The response's full continuation: as sent, or rebuilt from its delta and the
    /// prediction for its number. A delta with no prediction is dropped (the response then
    /// counts as one whose continuation was lost); a wrong rebuild fails the server's MAC.
    pub(super) fn rebuild(&mut self, resp: &Response<'_>) -> Option<Continuation> {
        if resp.continuation.is_some() {
            return resp.continuation;
        }
        let delta = resp.delta?;
        match self
            .expected
            .get(&resp.packet_number)
            .and_then(|e| e.predicted)
        {
            Some(predicted) => {
                self.stats.deltas_rebuilt += 1;
                Some(delta.apply(&predicted))
            }
            None => {
                self.stats.deltas_dropped += 1;
                None
            }
        }
    }

    /// Resolves arrived packet `a`, the lowest unresolved one: extends the proof and
    /// releases its continuation's request.
    fn accept(&mut self, now_us: u64, a: u32, arrival: Arrival) {
        self.expected.remove(&a);
        self.proof.push(a, arrival.nonce);
        self.out.on_received(a, arrival.consumed);
        self.count_later(a);
        if let Some((c, ucont)) = arrival.continuation {
            self.spend(now_us, c, &ucont);
        }
    }

    /// Resolves packets in number order: each arrival extends the proof and releases its
    /// continuation's request; a packet still missing after `dup_thresh` later arrivals is
    /// declared lost.
    pub(super) fn resolve(&mut self, now_us: u64) {
        loop {
            let next_expected = self.expected.first_key_value().map(|(&n, _)| n);
            let next_arrived = self.arrived.first_key_value().map(|(&n, _)| n);
            match (next_expected, next_arrived) {
                (_, Some(a)) if next_expected.is_none_or(|e| a <= e) => {
                    let Some(arrival) = self.arrived.remove(&a) else {
                        break;
                    };
                    self.accept(now_us, a, arrival);
                }
                (Some(e), _) => {
                    // Every arrival still held is above `e` (those below were resolved
                    // first), so they all count.
                    let later = self.arrived.len() as u32;
                    if later < self.cfg.dup_thresh {
                        break;
                    }
                    let gone = self.expected.remove(&e);
                    self.stats.losses += 1;
                    self.out.on_lost(e);
                    if let Some(start) = gone.and_then(|g| g.range)
                        && self
                            .outstanding
                            .get(&start)
                            .is_some_and(|o| !o.retransmit && o.watch == e)
                    {
                        self.range_lost(start);
                    }
                }
                (None, _) => break,
            }
        }
    }
}
