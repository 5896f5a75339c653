//! A whole router node (`waist_node::Node`) fed link frames on its interfaces, routing
//! messages, commands and clock steps, with a configuration the fuzzer picks: 1–4
//! interfaces of MTU 68..=9000, ESP, SNAP, a source-hash route cache and distance vector
//! each on or off, static routes, multicast groups, originated prefixes.
//!
//! Frames come raw, or built from structured input so that deep stages are reached: plain
//! IPv4/IPv6 packets (`waist_ip::emit_header`), ICMP echo requests, ESP packets (dedicated
//! and piggybacked, every instruction kind), SNAP packets (Fig. 1 ping, PLAN ping, random
//! code over real opcodes), any of them behind a threaded label, plus well-formed and
//! ill-formed distance-vector messages. Packets then get the TTL, DF, a source-hash option,
//! a flipped byte or trailing bytes, and a header checksum filled afresh in half the cases.
//!
//! Asserts after every step:
//! 1. nothing panics;
//! 2. bounded output (see [`Bounds`]); every frame goes out on an interface the node has,
//!    is at most `MAX_FRAME` bytes, is a routing frame whose message parses and names this
//!    router, or an IP packet (behind a label or not) whose header `IpHeader::parse`
//!    accepts (checksum included) and whose total length is the packet's length; the same
//!    for every packet delivered to the node;
//! 3. `Stats::balanced()`, and one `received` per frame handed in;
//! 4. checksum preservation: if the input's IP packet had a valid IPv4 header checksum,
//!    every IPv4 packet the node sends because of it (in place or queued; a label frame's
//!    packet after its 5-byte shim) has a valid one too.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use esp_proto::wire::{Form, locate};
use ess::{EssConfig, HashKey};
use fastpath::dv;
use fastpath::dv::wire::Advertisement;
use libfuzzer_sys::fuzz_target;
use snap_vm::service::EssService;
use waist_ip::IpHeader;
use waist_ip::checksum::checksum;
use waist_node::frame::{KIND_LABEL, KIND_ROUTING, LABEL_SHIM_LEN};
use waist_node::{Config, Delivery, EspConfig, IfaceConfig, Instant, MAX_FRAME, Node};

#[path = "common/node.rs"]
mod common;
use common::{
    GROUP4, GROUP6, LabelSpec, OWN4, OWN6, PacketSpec, RoutingSpec, addr, build_packet,
    label_frame, masked, routing_message,
};

/// Whether invariant 4 (and the checksum half of invariant 2) also holds for packets
/// carrying an ESP instruction in IPv4 option 158. Known to fail until ESP fixes the
/// header checksum after rewriting operands inside the IPv4 header (issue 24); set to
/// `false` locally to let a run go on past that failure and look for others.
const ASSERT_ESP_OPTION_CHECKSUM: bool = true;

#[derive(Arbitrary, Debug)]
struct Setup {
    /// (MTU selector, routing cost selector, has its own addresses) per interface.
    ifaces: Vec<(u16, u8, bool)>,
    v6_addr: bool,
    /// ESP with a store of 2^(1 + n % 5) bindings.
    esp: Option<u8>,
    snap: bool,
    snap_local_runs: u8,
    cache_log2: Option<u8>,
    dv: Option<DvSetup>,
    icmp: bool,
    routes: Vec<(bool, u8, u8, u8)>,
    group4: Option<Vec<u8>>,
    group6: Option<Vec<u8>>,
    originate: Vec<(bool, u8, u8)>,
    /// Drain into a `MAX_FRAME` buffer with `poll_transmit` instead of
    /// `poll_transmit_owned`.
    drain_into_buf: bool,
}

#[derive(Arbitrary, Debug)]
struct DvSetup {
    update_interval: u16,
    triggered_delay: u16,
    max_entries: u8,
    max_destinations: u8,
}

#[derive(Arbitrary, Debug)]
enum Step {
    Frame {
        iface: u8,
        label: Option<LabelSpec>,
        packet: PacketSpec,
    },
    Raw {
        iface: u8,
        bytes: Vec<u8>,
    },
    Routing {
        iface: u8,
        msg: RoutingSpec,
    },
    Send {
        packet: PacketSpec,
    },
    Route {
        v6: bool,
        sel: u8,
        len: u8,
        iface: u8,
        remove: bool,
    },
    Link {
        iface: u8,
        up: bool,
    },
    Advance {
        us: u32,
    },
    Timeout,
}

#[derive(Arbitrary, Debug)]
struct Input {
    setup: Setup,
    steps: Vec<Step>,
}

/// How many frames one call may put out, worked out from `crates/node`.
struct Bounds {
    /// The longest downstream list handed to `add_group` (copies ≤ its length: one per
    /// entry, duplicates and unknown interfaces included, at most).
    fan_out: usize,
    /// `ifaces × (1 + snap_local_runs)` with SNAP on, else 0: the arrival and each of at
    /// most `snap_local_runs` local runs is one VM execution, and the VM lets one
    /// execution send at most `NodeConfig::ifaces` packets (`Fault::SendLimit`); sends to
    /// the node itself become local runs, not frames.
    snap: usize,
    /// Links running distance vector.
    dv_links: usize,
    /// Messages one distance vector for one link takes: router entries go in chunks of
    /// `max_entries` (clamped to 1..=121), prefix entries in chunks of
    /// `min(max_entries, 60)`, and routers plus prefixes are at most the table's
    /// `max_destinations` slots, so ⌈D / min(m, 60)⌉ + 1.
    per_vector: usize,
}

impl Bounds {
    /// One IP frame (or an originated packet). The paths are exclusive, so the bound is
    /// the largest of: one frame (forwarded in place, by label or unicast; or one ICMP
    /// error, echo reply or ESP reflection: exactly one is queued where one is); the
    /// multicast copies; the fragments of one packet (each carries ≥ 8 data bytes, so at
    /// most len / 8 + 1 of them); the SNAP sends. An IP frame never makes the routing
    /// protocol send.
    fn packet(&self, frame_len: usize) -> usize {
        1.max(self.fan_out).max(frame_len / 8 + 1).max(self.snap)
    }

    /// One routing frame: a request makes the router queue its vector for the link it
    /// came on; an update only schedules a triggered update (sent by `handle_timeout`).
    /// Generous: a vector for every link.
    fn routing(&self) -> usize {
        self.dv_links * self.per_vector
    }

    /// `handle_timeout`: a periodic or a triggered update (never both), one vector per
    /// link; route timeouts and garbage collection send nothing; ESP sweeps send nothing.
    fn timeout(&self) -> usize {
        self.dv_links * self.per_vector
    }

    /// A command (`set_link`, `originate`, route changes): bringing a link up queues a
    /// request and a vector for it.
    fn command(&self) -> usize {
        self.dv_links * (self.per_vector + 1)
    }
}

struct Harness {
    node: Node,
    now: Instant,
    bounds: Bounds,
    mtus: Vec<usize>,
    dv_id: Option<u32>,
    buf: Vec<u8>,
    drain_into_buf: bool,
}

impl Harness {
    /// Everything the node queued.
    fn drain(&mut self) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        if self.drain_into_buf {
            let short = self.node.stats().tx_buffer_short;
            while let Some(t) = self.node.poll_transmit(&mut self.buf) {
                out.push((t.iface, self.buf[..t.len].to_vec()));
            }
            assert_eq!(
                self.node.stats().tx_buffer_short,
                short,
                "MAX_FRAME was short"
            );
        } else {
            while let Some(f) = self.node.poll_transmit_owned() {
                out.push(f);
            }
        }
        while let Some(d) = self.node.poll_deliver() {
            if let Delivery::Packet { iface, packet } = d {
                assert!(iface < self.mtus.len(), "delivered from iface {iface}");
                let h = IpHeader::parse(&packet).expect("a delivered packet parses");
                assert_eq!(h.total_len, packet.len(), "a delivered packet is trimmed");
            }
        }
        out
    }

    /// Invariants 2 and 4 over what one step put out. `verify`: check header checksums
    /// at all (see [`verify_outputs`]); `premise`: the input's IP packet was IPv4 with a
    /// valid header checksum (invariant 4 applies).
    fn check(
        &self,
        out: &[(usize, Vec<u8>)],
        bound: usize,
        verify: bool,
        premise: bool,
        what: &str,
    ) {
        assert!(
            out.len() <= bound,
            "{what}: {} frames out, bound {bound}",
            out.len()
        );
        for (iface, frame) in out {
            assert!(*iface < self.mtus.len(), "{what}: out of iface {iface}");
            assert!(
                !frame.is_empty() && frame.len() <= MAX_FRAME,
                "{what}: frame size"
            );
            let ip = match frame[0] {
                KIND_ROUTING => {
                    let adv = Advertisement::parse(&frame[1..])
                        .unwrap_or_else(|e| panic!("{what}: own routing message: {e}"));
                    assert_eq!(Some(adv.sender()), self.dv_id, "{what}: routing sender");
                    continue;
                }
                KIND_LABEL => &frame[LABEL_SHIM_LEN..],
                _ => &frame[..],
            };
            // Invariant 4 (issue 24): a valid IPv4 checksum in, valid IPv4 checksums out.
            if verify && premise && ip.first().is_some_and(|b| b >> 4 == 4) {
                let ihl = usize::from(ip[0] & 0x0F) * 4;
                let header = ip.get(..ihl).unwrap_or_else(|| {
                    panic!(
                        "{what}: IPv4 header of {ihl} bytes in {} on {iface}",
                        ip.len()
                    )
                });
                assert_eq!(
                    checksum(header),
                    0,
                    "{what}: checksum not preserved: valid IPv4 checksum in, broken out on \
                     iface {iface}: {ip:02x?}"
                );
            }
            // Invariant 2: whatever came in, what goes out is a well-formed IP packet.
            let h = if verify {
                IpHeader::parse(ip)
            } else {
                IpHeader::parse_unverified(ip)
            };
            let h = h.unwrap_or_else(|e| {
                panic!("{what}: output on {iface} is no valid IP packet: {e}: {ip:02x?}")
            });
            assert_eq!(h.total_len, ip.len(), "{what}: trailing bytes out");
        }
    }

    fn balanced(&self, received: u64, what: &str) {
        let s = self.node.stats();
        assert!(s.balanced(), "{what}: unbalanced {s:?}");
        assert_eq!(s.received, received, "{what}: received");
    }
}

/// Whether `ip` is IPv4 with a valid header checksum (invariant 4's premise).
fn checksum_ok(ip: &[u8]) -> bool {
    ip.first().is_some_and(|b| b >> 4 == 4)
        && ip
            .get(..usize::from(ip[0] & 0x0F) * 4)
            .is_some_and(|header| header.len() >= 20 && checksum(header) == 0)
}

/// Whether an IPv4 header checksum must hold on what the node makes of `ip`: always if
/// [`ASSERT_ESP_OPTION_CHECKSUM`], else not for a packet carrying an instruction in IPv4
/// option 158.
fn verify_outputs(ip: &[u8]) -> bool {
    ASSERT_ESP_OPTION_CHECKSUM || !matches!(locate(ip), Ok(Some(l)) if l.form == Form::Ipv4Option)
}

fuzz_target!(|input: Input| {
    let s = &input.setup;
    let n = s.ifaces.len().clamp(1, 4);
    let dv_config = s.dv.as_ref().map(|d| {
        let mut c = dv::Config::new(u32::from_be_bytes(OWN4));
        c.update_interval = 100 + u64::from(d.update_interval % 5_000);
        c.route_timeout = 3 * c.update_interval;
        c.gc_timeout = 2 * c.update_interval;
        c.triggered_delay = u64::from(d.triggered_delay % 2_000);
        c.max_entries = 1 + usize::from(d.max_entries % 8);
        c.max_destinations = 2 + usize::from(d.max_destinations % 62);
        c
    });
    let mut ifaces = Vec::new();
    for i in 0..n {
        let (mtu, cost, own) = s.ifaces.get(i).copied().unwrap_or((1500, 0, false));
        let mut f = IfaceConfig::new(68 + usize::from(mtu) % (9000 - 68 + 1));
        if dv_config.is_some() && cost % 4 != 0 {
            f = f.with_dv(u16::from(cost % 4));
        }
        if own {
            let i = i as u8;
            f = f
                .with_addr(Ipv4Addr::new(10, 9, 9, i + 1).into())
                .with_addr(Ipv6Addr::new(0xfd09, 0, 0, 0, 0, 0, 0, u16::from(i) + 1).into());
        }
        ifaces.push(f);
    }
    let mut addrs = vec![IpAddr::from(OWN4)];
    if s.v6_addr {
        addrs.push(Ipv6Addr::from(OWN6).into());
    }
    let esp = s.esp.map(|log2| {
        let key = HashKey::from_seed(0x5EED);
        EspConfig {
            node: esp_proto::node::NodeConfig {
                ifaces: n,
                store: EssConfig::new(1 + log2 % 5, 10_000_000, 1_000, key.derive(1))
                    .expect("a valid store"),
                shards: 1,
                node_id: u64::from(u32::from_be_bytes(OWN4)),
                idmap_key: key.derive(2),
                timestamp_shift: 10,
            },
            clean_interval: 1_000_000,
            clean_budget: 8,
            sites: esp_proto::wire::Loc::from_bits(log2 >> 3 | 1),
            // Microcode too: COUNT installed under 64, inline programs on or off.
            microcode: waist_node::MicrocodeConfig {
                inline: if log2 & 0x40 == 0 {
                    esp_micro::InlinePolicy::On
                } else {
                    esp_micro::InlinePolicy::Off
                },
                installed: vec![(
                    64,
                    "count".into(),
                    esp_micro::Microcode::assemble(esp_micro::shipped::COUNT)
                        .expect("the shipped COUNT verifies"),
                )],
            },
        }
    });
    let config = Config {
        addrs,
        ifaces,
        esp,
        snap: s.snap,
        route_cache_log2: s.cache_log2.map(|c| 1 + c % 8),
        dv: dv_config,
        icmp: s.icmp,
        snap_local_runs: u32::from(s.snap_local_runs % 8),
        // Routes, groups and prefixes are added below, after the node is built; no SNAP
        // services.
        snap_ess: None,
        routes: Vec::new(),
        groups: Vec::new(),
        originate: Vec::new(),
        streams: None,
    };
    let mtus: Vec<usize> = config.ifaces.iter().map(|f| f.mtu).collect();
    let dv_links = config.ifaces.iter().filter(|f| f.dv_cost.is_some()).count();
    let per_vector = dv_config.map_or(0, |c| {
        let m = c.max_entries.clamp(1, dv::wire::MAX_ENTRIES);
        let m = m.min(dv::wire::MAX_PREFIX_ENTRIES);
        c.max_destinations.div_ceil(m) + 1
    });
    let bounds = Bounds {
        fan_out: 0,
        snap: if s.snap {
            n * (1 + usize::from(s.snap_local_runs % 8))
        } else {
            0
        },
        dv_links,
        per_vector,
    };
    let node = Node::new(config, Instant::ZERO).expect("the config is valid");
    let mut h = Harness {
        node,
        now: Instant::ZERO,
        bounds,
        mtus,
        dv_id: dv_config.map(|c| c.id),
        buf: vec![0u8; MAX_FRAME],
        drain_into_buf: s.drain_into_buf,
    };
    if let Some(vm) = h.node.vm_mut() {
        let store = EssConfig::new(4, 1_000_000, 1, HashKey::from_seed(1)).expect("a valid store");
        for service in EssService::trio(store, HashKey::from_seed(2)) {
            vm.services.register(Box::new(service));
        }
    }
    let out = h.drain();
    h.check(&out, h.bounds.command(), true, false, "new");

    for &(v6, sel, len, iface) in s.routes.iter().take(8) {
        h.node
            .add_route(masked(addr(v6, sel), len), usize::from(iface) % n);
    }
    for (group, list) in [
        (IpAddr::from(GROUP4), &s.group4),
        (Ipv6Addr::from(GROUP6).into(), &s.group6),
    ] {
        if let Some(list) = list {
            // Only the node's interfaces (duplicates allowed): `send_own` sends a packet for
            // a group out of its first downstream interface unchecked, so an unknown one
            // there would be a caller's error, not the node's.
            let down: Vec<usize> = list.iter().take(8).map(|&d| usize::from(d) % n).collect();
            h.bounds.fan_out = h.bounds.fan_out.max(down.len());
            h.node.add_group(group, &down);
        }
    }
    for &(v6, sel, len) in s.originate.iter().take(4) {
        let now = h.now;
        h.node.originate(now, masked(addr(v6, sel), len));
        let out = h.drain();
        h.check(&out, h.bounds.command(), true, false, "originate");
    }
    h.balanced(0, "setup");

    let mut received = 0u64;
    for step in input.steps.iter().take(64) {
        let iface_of = |i: u8| if i == u8::MAX { n } else { usize::from(i) % n };
        match step {
            Step::Frame {
                iface,
                label,
                packet,
            } => {
                let ip = build_packet(packet);
                let frame = label_frame(label.as_ref(), &ip);
                handle(&mut h, iface_of(*iface), frame, &ip, "frame");
                received += 1;
            }
            Step::Raw { iface, bytes } => {
                let ip = match bytes.first() {
                    Some(&KIND_LABEL) => bytes.get(LABEL_SHIM_LEN..).unwrap_or_default(),
                    _ => &bytes[..],
                };
                let ip = ip.to_vec();
                handle(&mut h, iface_of(*iface), bytes.clone(), &ip, "raw");
                received += 1;
            }
            Step::Routing { iface, msg } => {
                let mut frame = vec![KIND_ROUTING];
                frame.extend(routing_message(msg));
                let now = h.now;
                let out = h.node.handle_packet(now, iface_of(*iface), &mut frame);
                assert_eq!(out, None, "a routing frame is not forwarded");
                received += 1;
                let out = h.drain();
                h.check(&out, h.bounds.routing(), true, false, "routing frame");
            }
            Step::Send { packet } => {
                let ip = build_packet(packet);
                let verify = verify_outputs(&ip);
                let now = h.now;
                h.node.send(now, ip.clone());
                received += 1;
                let out = h.drain();
                h.check(
                    &out,
                    h.bounds.packet(ip.len()),
                    verify,
                    checksum_ok(&ip),
                    "send",
                );
            }
            Step::Route {
                v6,
                sel,
                len,
                iface,
                remove,
            } => {
                let p = masked(addr(*v6, *sel), *len);
                if *remove {
                    h.node.remove_route(p);
                } else {
                    h.node.add_route(p, usize::from(*iface) % n);
                }
            }
            Step::Link { iface, up } => {
                let now = h.now;
                h.node.set_link(now, usize::from(*iface) % n, *up);
                let out = h.drain();
                h.check(&out, h.bounds.command(), true, false, "set_link");
            }
            Step::Advance { us } => {
                h.now = h.now.saturating_add(u64::from(*us) % 10_000_000);
            }
            Step::Timeout => {
                let now = h.now;
                h.node.handle_timeout(now);
                let out = h.drain();
                h.check(&out, h.bounds.timeout(), true, false, "handle_timeout");
            }
        }
        if h.node.poll_timeout().is_some_and(|t| t <= h.now) {
            let now = h.now;
            h.node.handle_timeout(now);
            let out = h.drain();
            h.check(&out, h.bounds.timeout(), true, false, "due handle_timeout");
        }
        h.balanced(received, "step");
    }
});

/// Hands `frame` to the node on `iface` and checks what comes out. `ip` is the frame's IP
/// packet (after a label shim), for the checksum premise of invariant 4.
fn handle(h: &mut Harness, iface: usize, mut frame: Vec<u8>, ip: &[u8], what: &str) {
    let len = frame.len();
    let verify = verify_outputs(ip);
    let now = h.now;
    let in_place = h.node.handle_packet(now, iface, &mut frame);
    let mut out = Vec::new();
    if let Some(p) = in_place {
        assert!(
            p.range.start <= p.range.end && p.range.end <= len,
            "{what}: in-place range {:?} of {len}",
            p.range
        );
        out.push((p.iface, frame[p.range].to_vec()));
    }
    out.extend(h.drain());
    h.check(&out, h.bounds.packet(len), verify, checksum_ok(ip), what);
}
