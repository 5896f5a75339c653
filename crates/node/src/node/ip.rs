//! The IP pipeline: TTL, input- and output-port ESP, multicast copies, the route lookup
//! (with its source-hash cache), fragmentation or "too big", and ICMP errors.

use alloc::vec::Vec;

use waist_ip::icmp::{self, IcmpError, Unreachable};
use waist_ip::{IpHeader, Version, rewrite};

use super::input::{Header, esp_found};
use super::{Fate, InPlace, Node, Reason};
use crate::Instant;
use crate::frag;
use crate::routes::Found;

impl Node {
    /// The IP pipeline for the packet at `frame[at..]`, its header as the caller has it
    /// (`header`: parsed here once if the caller has not). `originated` marks a packet the
    /// node itself originates (no TTL decrement, no input-port ESP). Always inlined: its
    /// answer, returned through memory, cost a store-forwarding stall per packet.
    #[inline(always)]
    pub(crate) fn ip(
        &mut self,
        now: Instant,
        iface: usize,
        frame: &mut [u8],
        (at, header): (usize, Header<'_>),
        originated: bool,
    ) -> (Fate, Option<InPlace>) {
        let Some(packet) = frame.get_mut(at..) else {
            return (Fate::Dropped(Reason::Malformed), None);
        };
        let parsed;
        let (h, read_esp) = match header {
            Header::Read(h, esp) => (h, esp),
            Header::Unread | Header::Checked => {
                let checked = match header {
                    Header::Checked => IpHeader::parse_unverified(packet),
                    _ => IpHeader::parse(packet),
                };
                let Ok(h) = checked else {
                    return (Fate::Dropped(Reason::Malformed), None);
                };
                parsed = h;
                (&parsed, None)
            }
        };
        let Some(packet) = packet.get_mut(..h.total_len) else {
            return (Fate::Dropped(Reason::Malformed), None);
        };
        if self.vm.is_some() && h.protocol == snap_vm::wire::IP_PROTOCOL {
            if let Some((fate, out)) = self.snap_transit(h, packet) {
                let range = at..at + h.total_len;
                return (fate, out.map(|iface| InPlace { iface, range }));
            }
            let fate = self.snap_arrival(now, iface, h, packet, originated);
            return (fate, None);
        }
        if !originated && self.own.contains(&h.dst) {
            return (self.deliver_local(iface, packet), None);
        }
        if !originated
            && h.protocol == waist_ip::udp::PROTOCOL_UDP
            && self.streams_through
            && let Some(taken) = self.take_stream_through(packet)
        {
            return (taken, None);
        }
        // The ESP instruction is found at the packet's first ESP site (or was read with its
        // frame) and kept for the others. Microcode's policy asks where the packet came in.
        let input = (!originated).then_some(iface);
        if !originated {
            if rewrite::decrement_checked(packet, h) == 0 {
                self.icmp_error(iface, IcmpError::TimeExceeded, packet);
                return (Fate::Dropped(Reason::TtlExpired), None);
            }
            if let Some(esp) = &mut self.esp {
                self.esp_found = esp_found(read_esp, h, packet);
                let gate = &mut self.micro.gate(Some(iface));
                if !esp.ingress_found_with(now, iface, packet, &self.esp_found, gate) {
                    return (Fate::Dropped(Reason::Esp), None);
                }
            }
        } else if self.esp.is_some() {
            self.esp_found = esp_found(read_esp, h, packet);
        }
        if let Some(group) = self.routes.group_of(&h.dst) {
            let downstream: Vec<usize> = group
                .iter()
                .map(|&i| usize::from(i))
                .filter(|&i| i != iface || originated)
                .collect();
            return (self.send_copies(now, input, h, packet, &downstream), None);
        }
        let hash = self.source_hash(h, packet);
        let (out, found) = self.routes.lookup(&h.dst, &h.src, hash);
        match found {
            Found::Hit => self.stats.cache_hits += 1,
            Found::Miss => self.stats.cache_misses += 1,
            Found::Lpm => {}
        }
        let Some(out) = out.map(usize::from) else {
            self.icmp_error(iface, IcmpError::Unreachable(Unreachable::Net), packet);
            return (Fate::Dropped(Reason::NoRoute), None);
        };
        let mtu = self.config.ifaces.get(out).map_or(0, |f| f.mtu);
        if h.total_len > mtu {
            return (self.too_big(now, (iface, input), out, mtu, h, packet), None);
        }
        if let Some(esp) = &mut self.esp
            && !esp.egress_found_with(
                now,
                out,
                packet,
                &self.esp_found,
                &mut self.micro.gate(input),
            )
        {
            self.stats.esp_copies_dropped += 1;
            return (Fate::Dropped(Reason::Esp), None);
        }
        self.stats.copies += 1;
        (
            Fate::Forwarded,
            Some(InPlace {
                iface: out,
                range: at..at + h.total_len,
            }),
        )
    }

    /// The source hash a packet carries (IPv4 option 94), if the node has a cache to use
    /// it with.
    #[inline]
    fn source_hash(&self, h: &IpHeader, packet: &[u8]) -> Option<fastpath::flow::SourceHash> {
        if self.config.route_cache_log2.is_none() || h.version != Version::V4 || h.header_len == 20
        {
            return None;
        }
        fastpath::wire::find_ipv4_option(packet)
            .ok()
            .flatten()
            .map(|o| o.hash)
    }

    /// One copy per downstream interface, each with its own ESP output processing.
    #[inline(never)]
    fn send_copies(
        &mut self,
        now: Instant,
        input: Option<usize>,
        h: &IpHeader,
        packet: &[u8],
        downstream: &[usize],
    ) -> Fate {
        let mut sent = 0;
        for &o in downstream {
            let mtu = self.config.ifaces.get(o).map_or(0, |f| f.mtu);
            if h.total_len > mtu {
                continue;
            }
            let mut copy = packet.to_vec();
            if let Some(esp) = &mut self.esp
                && !esp.egress_found_with(
                    now,
                    o,
                    &mut copy,
                    &self.esp_found,
                    &mut self.micro.gate(input),
                )
            {
                self.stats.esp_copies_dropped += 1;
                continue;
            }
            self.stats.copies += 1;
            self.out.push_back((o, copy));
            sent += 1;
        }
        if sent > 0 {
            Fate::Forwarded
        } else if downstream.is_empty() {
            Fate::Dropped(Reason::NoRoute)
        } else {
            Fate::Dropped(Reason::Esp)
        }
    }

    /// A packet too big for `out`: fragments (IPv4 without DF) or ICMP and a drop.
    #[cold]
    #[inline(never)]
    fn too_big(
        &mut self,
        now: Instant,
        (iface, input): (usize, Option<usize>),
        out: usize,
        mtu: usize,
        h: &IpHeader,
        packet: &mut [u8],
    ) -> Fate {
        if h.dont_fragment {
            let mtu = u32::try_from(mtu).unwrap_or(u32::MAX);
            self.icmp_error(iface, IcmpError::TooBig { mtu }, packet);
            return Fate::Dropped(Reason::TooBig);
        }
        if let Some(esp) = &mut self.esp
            && !esp.egress_found_with(
                now,
                out,
                packet,
                &self.esp_found,
                &mut self.micro.gate(input),
            )
        {
            self.stats.esp_copies_dropped += 1;
            return Fate::Dropped(Reason::Esp);
        }
        let before = self.out.len();
        if frag::fragment(packet, mtu, |f| self.out.push_back((out, f))).is_err() {
            self.out.truncate(before);
            return Fate::Dropped(Reason::TooBig);
        }
        let made = (self.out.len() - before) as u64;
        self.stats.fragments += made;
        self.stats.copies += made;
        Fate::Forwarded
    }

    /// Queues ICMP error `kind` about `packet` (which arrived on `iface`) back toward its
    /// source, if ICMP is on, the RFCs allow it, and there is a route.
    #[cold]
    #[inline(never)]
    pub(crate) fn icmp_error(&mut self, iface: usize, kind: IcmpError, packet: &[u8]) {
        if !self.config.icmp {
            return;
        }
        let version = match packet.first().map(|b| b >> 4) {
            Some(6) => Version::V6,
            _ => Version::V4,
        };
        let Some(from) = self.icmp_source(iface, version) else {
            self.stats.icmp_suppressed += 1;
            return;
        };
        let mut buf = alloc::vec![0u8; icmp::error_len(packet)];
        match icmp::emit_error(kind, packet, from, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                self.send_own(buf);
            }
            Err(_) => self.stats.icmp_suppressed += 1,
        }
    }
}
