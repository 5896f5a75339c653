//! Frames in: one at a time ([`Node::handle_packet`]) or a batch at a time
//! ([`Node::handle_packets`], ESP lookups warmed together); the link frame's kinds (plain
//! IP, a packet behind a threaded label, a routing message).

use fastpath::threaded::ForwardError;
use waist_ip::IpHeader;

use super::{Fate, InPlace, Node, Reason};
use crate::Instant;
use crate::frame::{Frame, LABEL_SHIM_LEN};

/// Frames [`Node::handle_packets`] warms at a time before running them: enough for the
/// processor to overlap their misses, few enough that the lines are still in L1 when their
/// frames run.
const WARM_AHEAD: usize = 32;

/// The IP packet in a frame: the frame itself, or what follows a label.
fn ip_of(frame: &[u8]) -> Option<&[u8]> {
    match Frame::parse(frame).ok()? {
        Frame::Ip(p) | Frame::Labelled { packet: p, .. } => Some(p),
        Frame::Routing(_) => None,
    }
}

impl Node {
    /// Takes in one frame that arrived on `iface` at `now`, and runs the pipeline on it.
    ///
    /// The buffer is rewritten in place (TTL, checksum, ESP operands, label). If the frame
    /// leaves as exactly one copy, the answer says which bytes of the buffer to send where
    /// and nothing is copied; everything else the frame caused (multicast copies,
    /// fragments, ICMP, SNAP sends, routing messages) waits in
    /// [`poll_transmit`](Node::poll_transmit), and what is for the node in
    /// [`poll_deliver`](Node::poll_deliver). Call those after this, and re-read
    /// [`poll_timeout`](Node::poll_timeout).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
    ) -> Option<InPlace> {
        self.stats.received += 1;
        if iface >= self.config.ifaces.len() {
            self.stats.dropped.bad_iface += 1;
            return None;
        }
        // Plain IP, by far the most common frame, goes straight on.
        if matches!(frame.first().map(|b| b >> 4), Some(4 | 6)) {
            let (fate, in_place) = self.ip(now, iface, frame, 0, false);
            self.count(fate);
            return in_place;
        }
        let (label_at, ip_at) = match Frame::parse(frame) {
            Ok(Frame::Ip(_)) => (None, 0),
            Ok(Frame::Labelled { .. }) => (Some(1), LABEL_SHIM_LEN),
            Ok(Frame::Routing(msg)) => {
                let ok = match (&mut self.dv, u16::try_from(iface)) {
                    (Some(r), Ok(i)) => r.handle_message(now, i, msg).is_ok(),
                    _ => false,
                };
                if ok {
                    self.stats.routing += 1;
                } else {
                    self.stats.dropped.routing += 1;
                }
                self.drain_dv();
                return None;
            }
            Err(_) => {
                self.stats.dropped.bad_frame += 1;
                return None;
            }
        };
        let (fate, in_place) = match label_at {
            Some(at) => self.labelled(now, iface, frame, at),
            None => self.ip(now, iface, frame, ip_at, false),
        };
        self.count(fate);
        in_place
    }

    /// Takes in a batch of frames, each with the interface it arrived on (say, one
    /// `recvmmsg`), all at `now`, and runs the pipeline on each in order, exactly as
    /// [`handle_packet`](Node::handle_packet) one at a time would: the same rewrites, the
    /// same answers, the same queued transmits and deliveries, the same statistics.
    ///
    /// What batching adds: before each run of up to 32 frames, the ESP store lookups
    /// their instructions will make at the input port and centrally are brought into
    /// cache together
    /// ([`EspNode::warm`](esp_proto::node::EspNode::warm)), so their memory accesses
    /// overlap instead of each packet waiting on its own.
    ///
    /// `each(i, sent, frame)` is called after frame `i` has run, with
    /// [`handle_packet`](Node::handle_packet)'s answer and the rewritten frame, so the
    /// caller sends it on as it would after one call. What the frames queued waits in
    /// [`poll_transmit`](Node::poll_transmit) and [`poll_deliver`](Node::poll_deliver)
    /// after the batch (drain them then: relative to frames sent in place, queued frames
    /// go later than one call at a time would send them).
    pub fn handle_packets<B: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        now: Instant,
        frames: &mut [(usize, B)],
        mut each: impl FnMut(usize, Option<InPlace>, &[u8]),
    ) {
        for (c, chunk) in frames.chunks_mut(WARM_AHEAD).enumerate() {
            self.warm_esp(chunk);
            for (i, (iface, frame)) in chunk.iter_mut().enumerate() {
                let frame = frame.as_mut();
                let sent = self.handle_packet(now, *iface, frame);
                each(c * WARM_AHEAD + i, sent, frame);
            }
        }
    }

    /// Warms the ESP lookups of `frames` (see [`handle_packets`](Node::handle_packets)).
    fn warm_esp<B: AsRef<[u8]>>(&self, frames: &[(usize, B)]) {
        let Some(esp) = &self.esp else {
            return;
        };
        if frames.len() < 2 {
            return;
        }
        let ifaces = self.config.ifaces.len();
        for (iface, frame) in frames {
            let Some(packet) = ip_of(frame.as_ref()) else {
                continue;
            };
            let input = (*iface < ifaces).then_some(*iface);
            // The output port is known only once the frame is routed: guessing it by a
            // longest-prefix match per frame cost more than the miss it saves (see
            // examples/esp_batch.rs), so output contexts are not warmed.
            esp.warm(packet, input, |_| None);
        }
    }

    pub(crate) fn count(&mut self, fate: Fate) {
        let d = &mut self.stats.dropped;
        match fate {
            Fate::Forwarded => self.stats.forwarded += 1,
            Fate::Delivered => self.stats.delivered += 1,
            Fate::Dropped(r) => match r {
                Reason::Malformed => d.malformed += 1,
                Reason::TtlExpired => d.ttl_expired += 1,
                Reason::LabelHopLimit => d.label_hop_limit += 1,
                Reason::NoRoute => d.no_route += 1,
                Reason::TooBig => d.too_big += 1,
                Reason::Esp => d.esp += 1,
                Reason::Snap => d.snap += 1,
                Reason::Local => d.local += 1,
            },
        }
    }

    /// A labelled frame: the threaded table decides; a label that fails falls back to the
    /// IP header. The IP header is not touched on the label path (the label's hop limit is
    /// its loop guard).
    fn labelled(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
        at: usize,
    ) -> (Fate, Option<InPlace>) {
        let forwarded = match &self.dv {
            Some(r) => frame.get_mut(at..).map(|f| r.table().forward_packet(f)),
            None => None,
        };
        match forwarded {
            Some(Ok(Some(out))) => {
                let Ok(h) = IpHeader::parse(frame.get(LABEL_SHIM_LEN..).unwrap_or_default()) else {
                    return (Fate::Dropped(Reason::Malformed), None);
                };
                let end = LABEL_SHIM_LEN + h.total_len;
                if h.total_len
                    > self
                        .config
                        .ifaces
                        .get(usize::from(out))
                        .map_or(0, |f| f.mtu)
                {
                    // Too big for the label's link: the IP path fragments or answers.
                    self.stats.label_fallback += 1;
                    return self.ip(now, iface, frame, LABEL_SHIM_LEN, false);
                }
                if let Some(esp) = &mut self.esp {
                    let Some(p) = frame.get_mut(LABEL_SHIM_LEN..end) else {
                        return (Fate::Dropped(Reason::Malformed), None);
                    };
                    if !esp.ingress(now, iface, p) || !esp.egress(now, usize::from(out), p) {
                        return (Fate::Dropped(Reason::Esp), None);
                    }
                }
                self.stats.label_forwarded += 1;
                self.stats.copies += 1;
                (
                    Fate::Forwarded,
                    Some(InPlace {
                        iface: usize::from(out),
                        range: 0..end,
                    }),
                )
            }
            Some(Err(ForwardError::HopLimitExceeded)) => {
                (Fate::Dropped(Reason::LabelHopLimit), None)
            }
            // Delivered here (the label's destination is this router: the packet goes on by
            // its IP header), a random label (leaving the area), or an index that failed.
            other => {
                if !matches!(other, Some(Ok(None)) | Some(Err(ForwardError::NotThreaded))) {
                    self.stats.label_fallback += 1;
                }
                self.ip(now, iface, frame, LABEL_SHIM_LEN, false)
            }
        }
    }
}
