//! SNAP at a node (SNAP §III, §VI): every SNAP packet that reaches a SNAP-capable node runs
//! there, wherever it is addressed; each packet it sends is routed like any other and
//! framed in a fresh IP header of its family (`snap_vm::ip`): IPv4 protocol 254, or IPv6
//! next header 254 for a packet whose addresses are IPv6. The node's first IPv4 address
//! is `here` to IPv4 packets, its first IPv6 address to IPv6 ones (a node without one of
//! them is `0.0.0.0` / `::` to that family: it forwards such packets and is never their
//! destination).
//!
//! A `send` addressed to the node itself runs here at once, as if it had arrived, with
//! interface [`LOCAL_IFACE`]. Resource bound is conserved, so one arrival causes at most
//! its bound's worth of such runs; the node also caps them at
//! [`Config::snap_local_runs`](crate::Config::snap_local_runs).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::net::IpAddr;

use snap_vm::service::EssService;
use snap_vm::vm::{End, Transmit, Vm};
use waist_ip::IpHeader;

use super::queues::MAX_DELIVERIES;
use super::{Delivery, Fate, Node, Reason};
use crate::Instant;
use crate::config::Config;

/// The interface packets that did not arrive on a link run with (`getifc` reads −1).
pub const LOCAL_IFACE: u32 = u32::MAX;

/// The VM a node built from `config` runs SNAP packets in, with the services the config
/// declares ([`Config::snap_ess`]); `None` with SNAP off (or no address to name the node).
pub(super) fn vm_for(config: &Config) -> Option<Vm> {
    let (address, address6) = (config.ipv4(), config.ipv6());
    if !config.snap || (address.is_none() && address6.is_none()) {
        return None;
    }
    let mut vm = Vm::new(snap_vm::vm::NodeConfig {
        address: address.unwrap_or([0; 4]),
        ifaces: u32::try_from(config.ifaces.len()).unwrap_or(u32::MAX),
        mtu: config.ifaces.iter().map(|f| f.mtu).max().unwrap_or(1500),
    });
    vm.set_address6(address6);
    if let Some(ess) = config.snap_ess {
        for s in EssService::trio(ess.store, ess.key) {
            vm.services.register(Box::new(s));
        }
    }
    Some(vm)
}

impl Node {
    /// A SNAP packet arrived (or the node originates one): run it and everything it sends here.
    pub(crate) fn snap_arrival(
        &mut self,
        now: Instant,
        iface: usize,
        h: &IpHeader,
        packet: &[u8],
        originated: bool,
    ) -> Fate {
        let Ok(snap) = snap_vm::ip::payload_of(h, packet) else {
            return Fate::Dropped(Reason::Malformed);
        };
        let ifc = if originated {
            LOCAL_IFACE
        } else {
            u32::try_from(iface).unwrap_or(LOCAL_IFACE)
        };
        self.run_snap(now, ifc, snap.to_vec())
    }

    /// The transit fast path: a SNAP packet in a 20-byte IPv4 header (or a 40-byte IPv6
    /// one) whose program only routes it on from here ([`Vm::forward_in_place`](snap_vm::vm::Vm::forward_in_place))
    /// is forwarded in the frame it arrived in, its resource bound decremented and its IP
    /// header rewritten as [`snap_vm::ip::encapsulate`] would write it: the same bytes, the
    /// same counters and the same fate as the general path (a run, a copy out, a fresh
    /// buffer), without them. The fate and, when it goes out, the interface; `None` (the
    /// packet untouched) for anything else.
    pub(crate) fn snap_transit(
        &mut self,
        h: &IpHeader,
        packet: &mut [u8],
    ) -> Option<(Fate, Option<usize>)> {
        // The VM's family-specific entry refuses a SNAP packet of the other family (the
        // slow path refuses it too).
        let vm = self.vm.as_ref()?;
        let v6 = h.version == waist_ip::Version::V6;
        let dst = if v6 {
            if h.header_len != waist_ip::IPV6_HEADER_LEN {
                return None;
            }
            IpAddr::from(vm.forward6_in_place(packet.get_mut(waist_ip::IPV6_HEADER_LEN..)?)?)
        } else {
            if h.header_len != waist_ip::IPV4_HEADER_LEN {
                return None;
            }
            IpAddr::from(vm.forward4_in_place(packet.get_mut(waist_ip::IPV4_HEADER_LEN..)?)?)
        };
        self.stats.snap_executed += 1;
        let dropped = Some((Fate::Dropped(Reason::Snap), None));
        let Some(out) = self.snap_route(dst) else {
            return dropped;
        };
        // In the general path's order: framing, then the link's MTU.
        let framed = if v6 {
            snap_vm::ip::reframe6_in_place(packet)
        } else {
            snap_vm::ip::reframe_in_place(packet)
        };
        if framed.is_err() || !self.snap_fits(out, packet.len()) {
            return dropped;
        }
        Some((Fate::Forwarded, Some(out)))
    }

    /// The interface toward a SNAP packet's destination (longest-prefix match, no cache),
    /// counting a packet with no route.
    fn snap_route(&mut self, dst: IpAddr) -> Option<usize> {
        let out = self.routes.route(dst).map(usize::from);
        if out.is_none() {
            self.stats.snap_no_route += 1;
        }
        out
    }

    /// Whether a framed SNAP packet of `len` bytes fits interface `out`'s MTU; counts it as
    /// sent if so, as unroutable if not.
    fn snap_fits(&mut self, out: usize, len: usize) -> bool {
        if len > self.config.ifaces.get(out).map_or(0, |f| f.mtu) {
            self.stats.snap_no_route += 1;
            return false;
        }
        self.stats.snap_sent += 1;
        self.stats.copies += 1;
        true
    }

    /// Runs `snap` at the node and every local run it causes.
    fn run_snap(&mut self, now: Instant, ifc: u32, snap: Vec<u8>) -> Fate {
        let node = self;
        let Some(mut vm) = node.vm.take() else {
            return Fate::Dropped(Reason::Snap);
        };
        let here = (
            node.config.ipv4().map(IpAddr::from),
            node.config.ipv6().map(IpAddr::from),
        );
        let mut queue = VecDeque::from([(ifc, snap)]);
        let mut budget = node.config.snap_local_runs;
        let (mut sent, mut delivered) = (0u64, false);
        while let Some((ifc, packet)) = queue.pop_front() {
            // The forwarding fast path first (§VI.E: most packets only route): exactly what
            // `run` would send for a packet whose entry is `forw` and that is not here yet,
            // without building an `Outcome`.
            let packet = match vm.try_forward(packet) {
                Ok(t) => {
                    node.stats.snap_executed += 1;
                    sent += u64::from(node.snap_transmit(here, &mut budget, &mut queue, t));
                    continue;
                }
                Err(packet) => packet,
            };
            let o = vm.run(now.micros(), ifc, packet);
            if matches!(o.end, End::Malformed(_) | End::NoResource) {
                continue;
            }
            node.stats.snap_executed += 1;
            if let Some(d) = o.delivery
                && node.deliveries.len() < MAX_DELIVERIES
            {
                node.deliveries.push_back(Delivery::Snap(d));
                delivered = true;
            }
            for t in o.transmits {
                sent += u64::from(node.snap_transmit(here, &mut budget, &mut queue, t));
            }
        }
        node.vm = Some(vm);
        if sent > 0 {
            Fate::Forwarded
        } else if delivered {
            Fate::Delivered
        } else {
            Fate::Dropped(Reason::Snap)
        }
    }

    /// Sends one packet a SNAP run produced: runs it here later if it is addressed here
    /// (within the local-run budget), else routes and frames it. Whether it went out.
    fn snap_transmit(
        &mut self,
        here: (Option<IpAddr>, Option<IpAddr>),
        budget: &mut u32,
        queue: &mut VecDeque<(u32, Vec<u8>)>,
        t: Transmit,
    ) -> bool {
        let dst = t.destination();
        if Some(dst) == here.0 || Some(dst) == here.1 {
            if *budget > 0 {
                *budget -= 1;
                queue.push_back((LOCAL_IFACE, t.packet));
            }
            return false;
        }
        let Some(out) = self.snap_route(dst) else {
            return false;
        };
        let Ok(ip) = snap_vm::ip::encapsulate(&t.packet) else {
            return false;
        };
        if !self.snap_fits(out, ip.len()) {
            return false;
        }
        self.out.push_back((out, ip));
        true
    }
}
