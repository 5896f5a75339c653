//! How the client builds its requests ([`Client::send_with`]): picks the user continuation,
//! trims the SACK proof, spends a continuation and frames the request.

use super::Expected;
use super::*;

impl Client {
    /// The user continuation a request carries, and the end of the output it may ask for
    /// with it (see the `ucont_store` module): the best input continuation when client data
    /// waits, else the output continuation covering the next range, else `given` (the
    /// one that arrived with the transport continuation being spent).
    pub(super) fn pick_ucont(&self, kind: RequestKind, given: &[u8]) -> (Vec<u8>, Option<u64>) {
        if kind == RequestKind::Syn || kind == RequestKind::Fin {
            return (given.to_vec(), None);
        }
        if self.out.has_unsent()
            && let Some(input) = self.uconts.input()
        {
            // Ranges of known output regions need their output continuation: a request
            // carrying input asks for none of them (before any is known, it asks blindly
            // from the start, which the server may answer from the object it opens).
            let limit = self.uconts.has_outputs().then_some(0);
            return (input.to_vec(), limit);
        }
        if let Some(start) = self.peek_range_start()
            && let Some((end, output)) = self.uconts.output_for(start)
        {
            return (output.to_vec(), Some(end));
        }
        (given.to_vec(), None)
    }

    /// The proof to send: the whole one, or — when a window lost so much that it needs more
    /// than [`MAX_SACK_BLOCKS`] blocks — its first [`PROOF_HEAD`] blocks (which fix the
    /// first loss) and its last blocks (which fix the run of losses right before the
    /// request). The blocks left out read as losses to the server: a client may always
    /// report more loss than it had, and the server reads only the first gap and the gap
    /// before the request, which both survive.
    pub(super) fn proof_blocks(&self) -> Vec<SackBlock> {
        Self::sendable(self.proof.blocks())
    }

    /// `blocks` cut to what a request can carry (see [`Client::proof_blocks`]).
    fn sendable(blocks: &[SackBlock]) -> Vec<SackBlock> {
        if blocks.len() <= MAX_SACK_BLOCKS {
            return blocks.to_vec();
        }
        let tail = MAX_SACK_BLOCKS - PROOF_HEAD;
        let mut out = blocks.get(..PROOF_HEAD).unwrap_or_default().to_vec();
        out.extend_from_slice(blocks.get(blocks.len() - tail..).unwrap_or_default());
        out
    }

    /// The flags of a request of `kind`: deltas when configured, and on a SYN the ask for
    /// delayed acknowledgments (later requests follow their continuations' flag).
    fn request_flags(&self, kind: RequestKind) -> u8 {
        let mut flags = 0;
        if self.cfg.delta {
            flags |= wire::REQUEST_FLAG_DELTA;
        }
        if kind == RequestKind::Syn && self.cfg.cc.delayed_ack {
            flags |= wire::REQUEST_FLAG_DELAYED_ACK;
        }
        flags
    }

    /// Sends the request that uses continuation `c` (the FIN once done), with the proof
    /// as it stands, or with `parked`, the proof kept when `c` was parked (it ends at `c`'s
    /// packet).
    pub(super) fn spend_now(
        &mut self,
        now_us: u64,
        c: Continuation,
        ucont: &[u8],
        parked: Option<Vec<SackBlock>>,
    ) {
        self.proof.trim_below(c.proof_start);
        if self.done() {
            // Done: the first unused continuation carries the FIN (a hint: the server
            // frees nothing, its application may).
            if !self.fin_sent {
                self.fin_sent = true;
                let proof = self.proof_blocks();
                let planned = Planned {
                    slots: &[],
                    proof: &proof,
                };
                self.send_with(now_us, RequestKind::Fin, Some(c), ucont, planned, 0);
            }
            return;
        }
        let blocks = match parked {
            Some(mut p) => {
                let done = p.iter().take_while(|b| b.right < c.proof_start).count();
                p.drain(..done);
                Self::sendable(&p)
            }
            None => self.proof_blocks(),
        };
        let Ok(slots) = cc::plan(&c, &blocks, RequestMode::Normal, &self.cfg.cc) else {
            return;
        };
        let planned = Planned {
            slots: &slots,
            proof: &blocks,
        };
        self.send_with(now_us, RequestKind::Request, Some(c), ucont, planned, 0);
    }

    /// Records what `planned.slots` will bring, assigns ranges, and queues the request
    /// with `planned.proof` (the blocks the plan was made from).
    pub(super) fn send_with(
        &mut self,
        now_us: u64,
        kind: RequestKind,
        c: Option<Continuation>,
        ucont: &[u8],
        planned: Planned<'_>,
        retry: u8,
    ) {
        let Planned { slots, proof } = planned;
        self.settle();
        let (ucont, range_end) = self.pick_ucont(kind, ucont);
        let ucont = ucont.as_slice();
        let mut ranges = RangeList::new();
        // A retransmission is watched against packets numbered from this request's first
        // new packet on; a request with none (a trickle terminated in recovery) watches
        // packets after everything predicted so far, which come from later requests.
        let next_number = slots
            .iter()
            .filter(|s| s.kind != SlotKind::Retransmit)
            .map(|s| s.number)
            .min()
            .or_else(|| {
                self.expected
                    .last_key_value()
                    .map(|(&n, _)| n.saturating_add(1))
            })
            .unwrap_or(self.floor);
        for slot in slots {
            let range = if slot.kind.carries_data() {
                let size = range_len(self.cfg.mss, slot.params.is_some(), ucont.len()) as u16;
                self.next_range(size, range_end)
            } else {
                None
            };
            let retransmit = slot.kind == SlotKind::Retransmit;
            // The range this slot will carry, if it gets one: its by-number index.
            let indexed = range.filter(|_| !retransmit).map(|r| r.start);
            if !retransmit {
                let predicted = slot
                    .params
                    .filter(|_| self.cfg.delta)
                    .map(|p| delta::predict(&p, c.as_ref()));
                let e = self.expected.entry(slot.number).or_insert(Expected {
                    predicted: None,
                    sent_at: Some(now_us),
                    range: None,
                });
                e.predicted = predicted;
                if indexed.is_some() {
                    e.range = indexed;
                }
            }
            let Some(range) = range else {
                continue;
            };
            self.requested_end = self
                .requested_end
                .max(range.start.saturating_add(u64::from(range.len)));
            let watch = if retransmit { next_number } else { slot.number };
            if ranges.push(range).is_err() {
                self.lost_ranges.push_front(range);
                if let Some(e) = self.expected.get_mut(&slot.number).filter(|_| !retransmit) {
                    e.range = None;
                }
                continue;
            }
            if retransmit {
                self.retransmitted.push(range.start);
            }
            self.outstanding.insert(
                range.start,
                Outstanding {
                    len: range.len,
                    watch,
                    retransmit,
                    later: 0,
                },
            );
        }
        let sack: Vec<u8> = if kind == RequestKind::Syn {
            Vec::new()
        } else {
            proof
                .iter()
                .flat_map(|b| {
                    let mut out = [0u8; SACK_BLOCK_LEN];
                    b.emit(&mut out);
                    out
                })
                .collect()
        };
        // Data rides only where a response carrying a continuation is predicted: that
        // response acknowledges it (and brings the application's answer in its user
        // continuation). With delayed acknowledgments half the packets carry none, and a
        // request in recovery may predict only such packets.
        let numbered: Vec<u32> = slots
            .iter()
            .filter(|s| s.kind != SlotKind::Retransmit && s.params.is_some())
            .map(|s| s.number)
            .collect();
        let chunk = if kind == RequestKind::Syn {
            // The SYN carries the connection's first request, always the same bytes.
            (!self.syn_data.is_empty()).then(|| (0, self.syn_data.clone()))
        } else if kind == RequestKind::Fin || numbered.is_empty() {
            None
        } else {
            // At most `max_request_data`, and no more than fits a packet the size of a full
            // response beside everything else the request carries (a long user
            // continuation, a long proof).
            let fixed = Request {
                kind,
                flags: 0,
                retry,
                continuation: c,
                sack: &sack,
                ranges,
                user_continuation: ucont,
                data_offset: Some(0),
                data: &[],
            }
            .buffer_len();
            let room = REQUEST_ROOM.saturating_sub(fixed);
            self.out
                .take(usize::from(self.cfg.max_request_data).min(room))
        };
        let (data_offset, data) = match &chunk {
            Some((offset, bytes)) => (Some(*offset), bytes.as_slice()),
            None => (None, &[][..]),
        };
        let req = Request {
            kind,
            flags: self.request_flags(kind),
            retry,
            continuation: c,
            sack: &sack,
            ranges,
            user_continuation: ucont,
            data_offset,
            data,
        };
        let mut out = alloc::vec![0u8; wire::TCP_HEADER_LEN + req.buffer_len()];
        let Some(body) = out.get_mut(wire::TCP_HEADER_LEN..) else {
            return;
        };
        let Ok(n) = req.emit(body) else { return };
        let header = SegmentHeader {
            src_port: self.tuple.client_port,
            dst_port: self.tuple.server_port,
            syn: kind == RequestKind::Syn,
            seq: if kind == RequestKind::Syn {
                self.isn
            } else {
                c.map_or(0, |c| c.number)
            },
            ack: 0,
        };
        let Ok(len) = wire::finish_segment(
            &self.tuple.client_addr,
            &self.tuple.server_addr,
            &header,
            &mut out,
            n,
        ) else {
            return;
        };
        out.truncate(len);
        self.transmit.push_back(out);
        self.stats.requests += 1;
        if let Some((offset, bytes)) = chunk
            && kind != RequestKind::Syn
        {
            self.out.sent(offset, bytes.len(), numbered);
        }
        if self.deadline.is_none() {
            self.deadline = Some(now_us.saturating_add(self.rto_us));
        }
    }
}
