//! Frames in: one at a time ([`Node::handle_packet`]) or a batch at a time
//! ([`Node::handle_packets`], ESP lookups warmed together); the link frame's kinds (plain
//! IP, a packet behind a threaded label, a routing message). A labelled frame (§4): the
//! label decides first, then the packet goes out of the label's interface as it is, or on
//! by its IP header.
//!
//! Each frame's IP header is parsed and checked once and travels with the packet
//! ([`Header`]): one at a time, where the frame first needs it (at once for plain IP, after
//! the label for a labelled frame); in a batch with ESP on, when the batch is read
//! ([`Read`]: header and ESP instruction, found once, warmed from, then handed to the
//! pipeline). No stage checks the packet again: not to warm, not after a label, not at
//! each ESP site (the instruction is found at the packet's first ESP site unless the
//! batch's reading found it, and kept in `Node::esp_found` for the others).

use esp_proto::node::Found;
use fastpath::threaded::ForwardError;
use waist_ip::IpHeader;

use super::{Fate, InPlace, Node, Reason};
use crate::Instant;
use crate::frame::{Frame, LABEL_SHIM_LEN};

/// Frames [`Node::handle_packets`] reads and warms at a time before running them: enough
/// for the processor to overlap their misses, few enough that the lines are still in L1
/// when their frames run.
pub(super) const WARM_AHEAD: usize = 32;

/// One frame of a batch, read before it runs (ESP on: its instruction found to warm).
#[derive(Clone, Debug)]
pub(crate) enum Read {
    /// An IP packet: the whole frame, or what follows a threaded label.
    Packet {
        /// Behind a label (at [`LABEL_SHIM_LEN`]), or the frame itself (at 0).
        labelled: bool,
        /// Its header, checked ([`IpHeader::parse`]); `None` if malformed.
        header: Option<IpHeader>,
        /// Where its ESP instruction is (`None` with the header).
        esp: Option<Found>,
    },
    /// A routing message, after the kind byte.
    Routing,
    /// Not a frame.
    Bad,
}

impl Read {
    /// Reads `frame`: its kind, its IP header and its ESP instruction.
    #[inline(always)]
    fn of(frame: &[u8]) -> Read {
        let (labelled, packet) = match Frame::parse(frame) {
            Ok(Frame::Ip(p)) => (false, p),
            Ok(Frame::Labelled { packet, .. }) => (true, packet),
            Ok(Frame::Routing(_)) => return Read::Routing,
            Err(_) => return Read::Bad,
        };
        let header = IpHeader::parse(packet).ok();
        let esp = header.as_ref().map(|h| Found::in_checked(h, packet));
        Read::Packet {
            labelled,
            header,
            esp,
        }
    }
}

/// A packet's IP header as the caller of the IP pipeline ([`Node::ip`]) has it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Header<'a> {
    /// Not parsed yet: the pipeline parses and checks it.
    Unread,
    /// Checked by the caller, which read only its length (the label's fast path): the
    /// pipeline reads its fields without checking it again.
    Checked,
    /// Read with its frame (a batch): the header and, if found, its ESP instruction.
    Read(&'a IpHeader, Option<&'a Found>),
}

/// Where the ESP instruction of `packet` (header `h`) is: as the frame's reading found
/// it, or found now.
#[inline(always)]
pub(crate) fn esp_found(read: Option<&Found>, h: &IpHeader, packet: &[u8]) -> Found {
    match read {
        Some(f) => f.clone(),
        None => Found::in_checked(h, packet),
    }
}

/// What a threaded label says about its frame.
enum ByLabel {
    /// On: out of this interface, the label rewritten; or (`None`) by the IP header
    /// (delivered here, a random label, or a label that failed).
    On(Option<usize>),
    /// Dropped: the label's hop limit ran out.
    HopLimit,
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
            let (fate, in_place) = self.ip(now, iface, frame, (0, Header::Unread), false);
            self.count(fate);
            return in_place;
        }
        let (fate, in_place) = match Frame::parse(frame) {
            Ok(Frame::Ip(_)) => self.ip(now, iface, frame, (0, Header::Unread), false),
            Ok(Frame::Labelled { .. }) => self.labelled(now, iface, frame, None),
            Ok(Frame::Routing(msg)) => {
                self.routing(now, iface, msg);
                return None;
            }
            Err(_) => {
                self.stats.dropped.bad_frame += 1;
                return None;
            }
        };
        self.count(fate);
        in_place
    }

    /// Takes in a batch of frames, each with the interface it arrived on (say, one
    /// `recvmmsg`), all at `now`, and runs the pipeline on each in order, exactly as
    /// [`handle_packet`](Node::handle_packet) one at a time would: the same rewrites, the
    /// same answers, the same queued transmits and deliveries, the same statistics.
    ///
    /// What batching adds, with ESP on: each run of up to 32 frames is read first (kind,
    /// IP header, ESP instruction: once per frame, then handed to the pipeline), and the
    /// ESP store lookups their instructions will make at the input port and centrally are
    /// brought into cache together
    /// ([`EspNode::warm_found`](esp_proto::node::EspNode::warm_found)), so their memory
    /// accesses overlap instead of each packet waiting on its own.
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
        if self.esp.is_none() {
            // Nothing to warm: each frame as it comes.
            for (i, (iface, frame)) in frames.iter_mut().enumerate() {
                let frame = frame.as_mut();
                let sent = self.handle_packet(now, *iface, frame);
                each(i, sent, frame);
            }
            return;
        }
        let mut reads = core::mem::take(&mut self.reads);
        for (c, chunk) in frames.chunks_mut(WARM_AHEAD).enumerate() {
            reads.clear();
            reads.extend(chunk.iter().map(|(_, f)| Read::of(f.as_ref())));
            self.warm_esp(chunk, &reads);
            for (i, ((iface, frame), read)) in chunk.iter_mut().zip(&reads).enumerate() {
                let frame = frame.as_mut();
                self.stats.received += 1;
                let sent = if *iface < self.config.ifaces.len() {
                    self.run(now, *iface, frame, read)
                } else {
                    self.stats.dropped.bad_iface += 1;
                    None
                };
                each(c * WARM_AHEAD + i, sent, frame);
            }
        }
        self.reads = reads;
    }

    /// Runs a frame read as `read` that arrived on `iface` (an interface the node has).
    fn run(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
        read: &Read,
    ) -> Option<InPlace> {
        let (fate, in_place) = match read {
            Read::Packet {
                labelled: true,
                header,
                esp,
            } => self.labelled(now, iface, frame, Some((header.as_ref(), esp.as_ref()))),
            Read::Packet {
                labelled: false,
                header: Some(h),
                esp,
            } => self.ip(now, iface, frame, (0, Header::Read(h, esp.as_ref())), false),
            Read::Packet { header: None, .. } => (Fate::Dropped(Reason::Malformed), None),
            Read::Routing => {
                self.routing(now, iface, frame.get(1..).unwrap_or_default());
                return None;
            }
            Read::Bad => {
                self.stats.dropped.bad_frame += 1;
                return None;
            }
        };
        self.count(fate);
        in_place
    }

    /// A routing message arrived on `iface`.
    fn routing(&mut self, now: Instant, iface: usize, msg: &[u8]) {
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
    }

    /// Warms the ESP lookups of `frames`, read as `reads` (see
    /// [`handle_packets`](Node::handle_packets)).
    fn warm_esp<B: AsRef<[u8]>>(&self, frames: &[(usize, B)], reads: &[Read]) {
        let Some(esp) = &self.esp else {
            return;
        };
        if frames.len() < 2 {
            return;
        }
        let ifaces = self.config.ifaces.len();
        for ((iface, frame), read) in frames.iter().zip(reads) {
            let Read::Packet {
                labelled,
                esp: Some(found),
                ..
            } = read
            else {
                continue;
            };
            let at = if *labelled { LABEL_SHIM_LEN } else { 0 };
            let packet = frame.as_ref().get(at..).unwrap_or_default();
            let input = (*iface < ifaces).then_some(*iface);
            // The output port is known only once the frame is routed: guessing it by a
            // longest-prefix match per frame cost more than the miss it saves (see
            // examples/esp_batch.rs), so output contexts are not warmed.
            esp.warm_found(packet, found, input, |_| None);
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

    /// A labelled frame. `read` is its packet's header and ESP instruction as a batch read
    /// them (the header `None` if malformed); without it the header is parsed here.
    #[inline(always)]
    fn labelled(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
        read: Option<(Option<&IpHeader>, Option<&Found>)>,
    ) -> (Fate, Option<InPlace>) {
        let out = match self.label(frame) {
            ByLabel::HopLimit => return (Fate::Dropped(Reason::LabelHopLimit), None),
            ByLabel::On(out) => out,
        };
        let at = LABEL_SHIM_LEN;
        match (out, read) {
            (_, Some((None, _))) => (Fate::Dropped(Reason::Malformed), None),
            (Some(out), Some((Some(h), esp))) => {
                self.label_forward(now, (iface, out), frame, h.total_len, Header::Read(h, esp))
            }
            (None, Some((Some(h), esp))) => {
                self.ip(now, iface, frame, (at, Header::Read(h, esp)), false)
            }
            // One at a time: the label's fast path reads the header's length; should the
            // IP path take the packet over, it reads the rest without a second check.
            (Some(out), None) => match IpHeader::parse(frame.get(at..).unwrap_or_default()) {
                Ok(h) => self.label_forward(now, (iface, out), frame, h.total_len, Header::Checked),
                Err(_) => (Fate::Dropped(Reason::Malformed), None),
            },
            (None, None) => self.ip(now, iface, frame, (at, Header::Unread), false),
        }
    }

    /// What a labelled frame's threaded label says (the label rewritten in place when it
    /// forwards). A label that failed (not one delivered here, nor a random one) is
    /// counted.
    #[inline(always)]
    fn label(&mut self, frame: &mut [u8]) -> ByLabel {
        let forwarded = match &self.dv {
            Some(r) => frame.get_mut(1..).map(|f| r.table().forward_packet(f)),
            None => None,
        };
        match forwarded {
            Some(Ok(Some(out))) => ByLabel::On(Some(usize::from(out))),
            Some(Err(ForwardError::HopLimitExceeded)) => ByLabel::HopLimit,
            // Delivered here (the label's destination is this router: the packet goes on by
            // its IP header), a random label (leaving the area), or an index that failed.
            other => {
                if !matches!(other, Some(Ok(None)) | Some(Err(ForwardError::NotThreaded))) {
                    self.stats.label_fallback += 1;
                }
                ByLabel::On(None)
            }
        }
    }

    /// A labelled frame that arrived on `iface` and whose label sends it out of `out`: the
    /// packet (`total_len` bytes, its header checked) goes as it is, its IP header
    /// untouched (the label's hop limit is its loop guard), after ESP. One too big for the
    /// label's link falls back to the IP path (with the header as `fallback` has it),
    /// which fragments or answers.
    #[inline(always)]
    fn label_forward(
        &mut self,
        now: Instant,
        (iface, out): (usize, usize),
        frame: &mut [u8],
        total_len: usize,
        fallback: Header<'_>,
    ) -> (Fate, Option<InPlace>) {
        let end = LABEL_SHIM_LEN + total_len;
        if total_len > self.config.ifaces.get(out).map_or(0, |f| f.mtu) {
            self.stats.label_fallback += 1;
            return self.ip(now, iface, frame, (LABEL_SHIM_LEN, fallback), false);
        }
        if let Some(node) = &mut self.esp {
            let Some(packet) = frame.get_mut(LABEL_SHIM_LEN..end) else {
                return (Fate::Dropped(Reason::Malformed), None);
            };
            // As the batch's reading found it, or found here from the packet's bytes (the
            // label's path keeps only the header's length).
            self.esp_found = match fallback {
                Header::Read(_, Some(found)) => found.clone(),
                _ => Found::in_packet(packet),
            };
            let gate = &mut self.micro.gate(Some(iface));
            if !node.ingress_found_with(now, iface, packet, &self.esp_found, gate)
                || !node.egress_found_with(now, out, packet, &self.esp_found, gate)
            {
                return (Fate::Dropped(Reason::Esp), None);
            }
        }
        self.stats.label_forwarded += 1;
        self.stats.copies += 1;
        (
            Fate::Forwarded,
            Some(InPlace {
                iface: out,
                range: 0..end,
            }),
        )
    }
}
