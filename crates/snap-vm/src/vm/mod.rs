//! The interpreter (paper §VI.C–E): executes a received packet in place and returns what
//! it sends and delivers, never performing I/O itself.
//!
//! On arrival the resource bound is decremented (a packet with none left is dropped), then
//! instructions run from the entry point. Safety checks are interleaved with execution, as
//! the paper does, rather than verified up front: branch offsets (including computed ones)
//! must be positive, `mktup n` must be followed by `n − 1` non-`mktup` positions, a packet
//! may send at most as many packets as the node has interfaces and deliver at most once
//! (then it exits), a child gets only resource bound its parent gives up, and every heap
//! reference is checked to lie inside the packet's heap. A broken rule is a [`Fault`]: the
//! packet stops; what it already sent stands. Types are not checked where safety does not
//! need it: confusing an integer for a pointer gives a wrong answer, never an unsafe one.

mod arrival;
mod exec;
mod frame;
mod micro;
mod send;
mod services;

use alloc::vec::Vec;
use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arrival::{Arrival, arrive};
use exec::{Exec, Registers};
use frame::FrameLimits;
pub(crate) use frame::header as frame_header;
pub(crate) use frame::payload_words as payload_words_of;
pub use frame::{Frame, Scratch};
pub use micro::{Limits, MicroOutcome, MicroProgram, MicroTop};
pub use services::{Service, ServiceSet, Services};

use crate::op::Op;
use crate::value::Word;
use crate::wire::{FLAG_IPV6, HEADER_LEN, HEADER_LEN_V6, Packet, WireError};

/// What a node tells its VM about itself. A node with an IPv6 address too (or only) says
/// so with [`Vm::set_address6`]: IPv6 packets see that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// The node's IPv4 address (`here`, `ishere`, and where `forw` stops, for IPv4
    /// packets; 0.0.0.0 on a node without one).
    pub address: [u8; 4],
    /// Interfaces: the most packets one packet may send here.
    pub ifaces: u32,
    /// Link MTU; the working buffer may grow to 4 × MTU.
    pub mtu: usize,
}

/// Why a packet stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An opcode no instruction has.
    UnknownOpcode {
        /// The instruction index.
        pc: u32,
        /// The opcode byte.
        opcode: u8,
    },
    /// A branch (immediate or computed) that does not go forward, or lands past the code.
    BadBranch {
        /// The instruction index.
        pc: u32,
        /// The offset.
        offset: i64,
    },
    /// `mktup` inside the `n − 1` positions after an earlier `mktup n`.
    MktupSpacing {
        /// The instruction index.
        pc: u32,
    },
    /// Popped or read below the stack's bottom.
    StackUnderflow,
    /// A heap reference outside the heap.
    HeapBounds,
    /// A heap object with an unknown tag, or a tuple nested too deep to deliver.
    BadObject,
    /// Integer division or remainder by zero.
    DivideByZero,
    /// More sends than the node has interfaces.
    SendLimit,
    /// A child asked for more resource bound than the packet has.
    ResourceBound,
    /// A child entry point outside the code.
    BadEntry,
    /// The working buffer would pass 4 × MTU.
    BufferLimit,
    /// `calls` named no service the node has.
    NoService,
    /// A service failed.
    Service,
    /// A service pushed more than one value.
    ServicePush,
    /// A service allocated more than its allowance.
    ServiceAlloc,
    /// A send to, or an `snet` of, an address of the other family than the packet's (a
    /// packet never changes family: its IP framing could not carry both).
    AddressFamily,
    /// A send or a delivery (`forw`, `forwto`, `send`, `demux`) in a bare run
    /// ([`MicroProgram::run`]), which has no packet to send or deliver.
    Network,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::UnknownOpcode { pc, opcode } => {
                write!(f, "instruction {pc}: unknown opcode {opcode}")
            }
            Fault::BadBranch { pc, offset } => {
                write!(
                    f,
                    "instruction {pc}: branch offset {offset} does not go forward inside the code"
                )
            }
            Fault::MktupSpacing { pc } => {
                write!(f, "instruction {pc}: mktup too soon after another mktup")
            }
            Fault::StackUnderflow => f.write_str("stack underflow"),
            Fault::HeapBounds => f.write_str("heap reference outside the heap"),
            Fault::BadObject => f.write_str("malformed heap object"),
            Fault::DivideByZero => f.write_str("division by zero"),
            Fault::SendLimit => f.write_str("more sends than the node has interfaces"),
            Fault::ResourceBound => f.write_str("child asked for more resource bound than left"),
            Fault::BadEntry => f.write_str("child entry point outside the code"),
            Fault::BufferLimit => f.write_str("working buffer would pass 4 × MTU"),
            Fault::NoService => f.write_str("no such service"),
            Fault::Service => f.write_str("service failed"),
            Fault::ServicePush => f.write_str("service pushed more than one value"),
            Fault::ServiceAlloc => f.write_str("service allocated past its allowance"),
            Fault::AddressFamily => f.write_str("address of the other family than the packet's"),
            Fault::Network => f.write_str("send or delivery without a packet (microcode)"),
        }
    }
}

impl core::error::Error for Fault {}

/// How a packet's execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `exit`, or it ran past the last instruction.
    Exit,
    /// `forw` or `forwto` sent it on.
    Forwarded,
    /// `demux` delivered it.
    Delivered,
    /// A safety rule stopped it.
    Fault(Fault),
    /// It arrived with no resource bound left and was dropped unexecuted.
    NoResource,
    /// It is not a well-formed SNAP packet.
    Malformed(WireError),
}

/// A packet to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to, if IPv4 (the packet's destination field; zero for an IPv6 packet: see
    /// [`destination`](Self::destination)).
    pub dst: [u8; 4],
    /// The whole SNAP packet.
    pub packet: Vec<u8>,
}

impl Transmit {
    fn to(dst: IpAddr, packet: Vec<u8>) -> Transmit {
        Transmit {
            dst: ipv4_or_zero(dst),
            packet,
        }
    }

    /// Where to, of either family (the packet's destination).
    pub fn destination(&self) -> IpAddr {
        Packet::wrap(&self.packet[..]).dst_addr()
    }
}

/// The IPv4 address, or zero for an IPv6 one (the IPv4 fields of IPv6 packets).
fn ipv4_or_zero(a: IpAddr) -> [u8; 4] {
    match a {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(_) => [0; 4],
    }
}

/// A value delivered to a local port.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivered {
    /// A small integer.
    Int(i32),
    /// An IPv4 address.
    Addr([u8; 4]),
    /// An IPv6 address.
    Addr6([u8; 16]),
    /// A float.
    Float(f32),
    /// A wide integer.
    Wide(i64),
    /// A byte array. Delivered by `demux` from the packet heap, it is the packet's own
    /// buffer (its capacity at most 4 × MTU), so delivering it allocates nothing.
    Bytes(Vec<u8>),
    /// A tuple.
    Tuple(Vec<Delivered>),
}

/// What `demux` handed to the node.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The local port.
    pub port: i32,
    /// The value.
    pub value: Delivered,
    /// The packet's IPv4 source (zero for an IPv6 packet: see [`src6`](Self::src6)).
    pub src: [u8; 4],
    /// The packet's IPv6 source, for an IPv6 packet.
    pub src6: Option<[u8; 16]>,
}

impl Delivery {
    /// The packet's source, of either family.
    pub fn source(&self) -> IpAddr {
        match self.src6 {
            Some(a) => a.into(),
            None => self.src.into(),
        }
    }
}

/// What an execution used, to compare with the verifier's bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed.
    pub executed: u32,
    /// Deepest stack.
    pub max_depth: u32,
    /// Heap words allocated.
    pub allocated: u32,
    /// Packets sent (forw, forwto, send).
    pub sends: u32,
}

/// Everything a packet did at this node.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How it ended.
    pub end: End,
    /// Packets to send, in order.
    pub transmits: Vec<Transmit>,
    /// At most one delivery.
    pub delivery: Option<Delivery>,
    /// What it used.
    pub stats: Stats,
    /// Resource bound it arrived with.
    pub rb_in: u16,
}

impl Outcome {
    pub(crate) fn ended(end: End) -> Outcome {
        Outcome {
            end,
            transmits: Vec::new(),
            delivery: None,
            stats: Stats::default(),
            rb_in: 0,
        }
    }
}

/// A node's SNAP virtual machine: its config and services, and reusable scratch space.
#[derive(Debug)]
pub struct Vm {
    config: NodeConfig,
    address6: Option<[u8; 16]>,
    /// The node's services.
    pub services: Services,
    /// Working space reused across packets; its spare buffer is one a packet left here,
    /// for the next child (see [`SPARE_LIMIT`]).
    scratch: Scratch,
}

/// The largest buffer a VM keeps for building children in, in units of the MTU: a buffer
/// that arrived with a packet the VM did not send on is kept (if larger than the one it
/// has and no larger than this), so a turnaround reuses it instead of allocating.
const SPARE_LIMIT: usize = 4;

impl Vm {
    /// A VM for a node.
    pub fn new(config: NodeConfig) -> Vm {
        Vm {
            config,
            address6: None,
            services: Services::new(),
            scratch: Scratch::new(),
        }
    }

    /// The node's config.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Sets the node's IPv6 address (`None`: it has none): what IPv6 packets see as
    /// `here`, where their `forw` stops, and what `ishere` also knows.
    pub fn set_address6(&mut self, address: Option<[u8; 16]>) {
        self.address6 = address;
    }

    /// The node's IPv6 address.
    pub fn address6(&self) -> Option<[u8; 16]> {
        self.address6
    }

    /// The node's address in a packet's family: IPv4 or (`ipv6`) IPv6; the family's
    /// unspecified address (which no packet is sent to) if the node has none.
    pub fn here(&self, ipv6: bool) -> IpAddr {
        if ipv6 {
            Ipv6Addr::from(self.address6.unwrap_or([0; 16])).into()
        } else {
            Ipv4Addr::from(self.config.address).into()
        }
    }

    /// Runs `packet`, which arrived on interface `iface` at `now` (time only services use).
    pub fn run(&mut self, now: u64, iface: u32, packet: Vec<u8>) -> Outcome {
        let mut out = Outcome::ended(End::Exit);
        self.run_into(now, iface, packet, &mut out);
        out
    }

    /// The forwarding fast path alone (§VI.E: most packets only route): a well-formed
    /// packet whose entry instruction is `forw` and that is not at this node leaves at once,
    /// in its own buffer, with its resource bound decremented — exactly what
    /// [`run`](Self::run) would do with it, without building an [`Outcome`]. Any other packet
    /// (including one with no resource bound left) comes back untouched, for `run`.
    ///
    /// # Errors
    ///
    /// The packet itself, when it needs the interpreter.
    #[inline]
    pub fn try_forward(&self, mut packet: Vec<u8>) -> Result<Transmit, Vec<u8>> {
        // By family, so the IPv4 hop keeps its destination as bytes.
        let dst = match packet.first().map(|b| b & FLAG_IPV6) {
            Some(0) => self.forward4_in_place(&mut packet),
            _ => self.forward6_in_place(&mut packet).map(|_| [0; 4]),
        };
        match dst {
            Some(dst) => Ok(Transmit { dst, packet }),
            None => Err(packet),
        }
    }

    /// [`try_forward`](Self::try_forward) on a packet wherever it lies, e.g. inside the IP
    /// packet a router received: if the packet only routes, its resource bound is
    /// decremented in place and its destination returned; otherwise (`None`) it is left
    /// untouched, for [`run`](Self::run).
    #[inline]
    pub fn forward_in_place(&self, packet: &mut [u8]) -> Option<IpAddr> {
        match packet.first()? & FLAG_IPV6 {
            0 => self.forward4_in_place(packet).map(IpAddr::from),
            _ => self.forward6_in_place(packet).map(IpAddr::from),
        }
    }

    /// [`forward_in_place`](Self::forward_in_place) for a SNAP packet with IPv4
    /// addresses only (`None` for one with IPv6 addresses): what a router calls for a
    /// SNAP packet that came in IPv4, small enough to inline into its transit path.
    #[inline]
    pub fn forward4_in_place(&self, packet: &mut [u8]) -> Option<[u8; 4]> {
        let h = packet.first_chunk::<HEADER_LEN>()?;
        if h[0] != crate::wire::VERSION << 4 {
            return None;
        }
        // Compared with `here` as bytes.
        let dst = [h[8], h[9], h[10], h[11]];
        if dst == self.config.address {
            return None;
        }
        self.decrement_if_forwarding(packet, HEADER_LEN)?;
        Some(dst)
    }

    /// [`forward_in_place`](Self::forward_in_place) for a SNAP packet with IPv6
    /// addresses only (`None` for one with IPv4 addresses).
    #[inline(never)]
    pub fn forward6_in_place(&self, packet: &mut [u8]) -> Option<[u8; 16]> {
        if packet.first() != Some(&(crate::wire::VERSION << 4 | FLAG_IPV6)) {
            return None;
        }
        let dst = *packet.get(40..HEADER_LEN_V6)?.first_chunk::<16>()?;
        if dst == self.address6.unwrap_or([0; 16]) {
            return None;
        }
        self.decrement_if_forwarding(packet, HEADER_LEN_V6)?;
        Some(dst)
    }

    /// If `packet` (a header of `header_len` bytes) is whole, has resource bound left and
    /// its first instruction is `forw` on a node with interfaces: its resource bound
    /// decremented in place.
    #[inline]
    fn decrement_if_forwarding(&self, packet: &mut [u8], header_len: usize) -> Option<()> {
        let h = packet.first_chunk::<HEADER_LEN>()?;
        let be16 = |i: usize| usize::from(u16::from_be_bytes([h[i], h[i + 1]]));
        let (code, entry, rb) = (be16(16), be16(14), be16(12));
        let len = header_len + 4 * (code + be16(18) + be16(20));
        let at = header_len + 4 * entry;
        let first = packet.get(at..at + 4);
        if len != packet.len()
            || entry >= code
            || rb == 0
            || first != Some(&Word::new(Op::Forw as u8, 0).0.to_be_bytes()[..])
            || self.config.ifaces == 0
        {
            return None;
        }
        if let Some(f) = packet.get_mut(12..14) {
            f.copy_from_slice(&(rb as u16 - 1).to_be_bytes());
        }
        Some(())
    }

    /// [`run`](Self::run), writing into `out` (cleared first) so a node that reuses one
    /// `Outcome` allocates nothing per packet on the forwarding path.
    pub fn run_into(&mut self, now: u64, iface: u32, mut packet: Vec<u8>, out: &mut Outcome) {
        out.transmits.clear();
        out.delivery = None;
        out.stats = Stats::default();
        out.rb_in = 0;
        let Some(Arrival {
            rb,
            entry,
            port,
            src,
            dst,
            heap_at,
            stack_at,
        }) = arrive(&mut packet, out)
        else {
            return;
        };
        let header_len = crate::wire::header_len(dst.is_ipv6());
        let here = self.here(dst.is_ipv6());
        // The common case first (§VI.E): a packet whose first instruction is `forw` and that
        // is not yet at its destination leaves at once, in its own buffer, untouched but for
        // the resource bound already decremented.
        let first = packet
            .get(header_len + 4 * usize::from(entry)..)
            .and_then(|b| b.first_chunk::<4>())
            .map(|w| u32::from_be_bytes(*w));
        let forw_first = first == Some(Word::new(Op::Forw as u8, 0).0);
        if forw_first && dst != here && self.config.ifaces > 0 {
            out.stats = Stats {
                executed: 1,
                max_depth: ((packet.len() - stack_at) / 4) as u32,
                allocated: 0,
                sends: 1,
            };
            out.end = End::Forwarded;
            out.transmits.push(Transmit::to(dst, packet));
            return;
        }
        let scratch = &mut self.scratch;
        scratch.stack.clear();
        let (front, stack_bytes) = packet.split_at(stack_at);
        let code = front
            .get(header_len..heap_at)
            .unwrap_or_default()
            .as_chunks::<4>()
            .0;
        let heap = front.get(heap_at..).unwrap_or_default().as_chunks::<4>().0;
        scratch.stack.extend(
            stack_bytes
                .as_chunks::<4>()
                .0
                .iter()
                .map(|w| u32::from_be_bytes(*w)),
        );
        // Each instruction pushes at most one value, and runs at most once; the stack must
        // also fit the 16-bit length field and, with the packet, the 4 × MTU buffer.
        let max_len = (4 * self.config.mtu).max(packet.len());
        let depth = scratch.stack.len();
        let stack_limit = (depth + code.len() + 1)
            .min(usize::from(u16::MAX))
            .min(depth + (max_len - packet.len()) / 4);
        scratch.stack.reserve(code.len() + 1);
        let limits = FrameLimits {
            stack: stack_limit,
            extra: max_len / 4,
            max_len,
        };
        let mut frame = Frame::new(code, heap, scratch, limits, packet.len(), src, port);
        let at = Registers {
            iface,
            rb,
            entry,
            dst,
            here,
            here6: self.address6,
        };
        let mut exec = Exec::new(out, &self.config, &mut self.services, now, at, false);
        // At its destination an entry `forw` only falls through (the ping's and every
        // compiled PLAN program's first instruction): count it and start after it.
        let end = if forw_first && dst == here {
            exec.pc += 1;
            exec.run(&mut frame, 1)
        } else {
            exec.run(&mut frame, 0)
        };
        let (dirty, max_depth, allocated) = (frame.dirty, frame.max_depth, frame.extra.len());
        out.stats.max_depth = max_depth;
        out.stats.allocated = allocated as u32;
        out.end = match end {
            Ok(Stop::End(end)) => {
                self.keep_spare(packet);
                end
            }
            Ok(Stop::DeliverBytes { port, at, len }) => {
                out.delivery = Some(Delivery {
                    port,
                    value: Delivered::Bytes(self.bytes_of(packet, heap_at + at, len)),
                    src: ipv4_or_zero(src),
                    src6: ipv6_of(src),
                });
                End::Delivered
            }
            Ok(stop @ (Stop::Reuse(to, rb) | Stop::ReuseAsChild(to, rb))) => {
                // §VI.D's best case: the packet leaves in its own buffer; only the header
                // changes, and the stack if the program changed it.
                if dirty {
                    write_stack(&mut packet, stack_at, &self.scratch.stack);
                }
                let mut p = Packet::wrap(&mut packet[..]);
                // Of the packet's family: the VM sends to no other.
                p.set_dst_addr(to);
                // All that is left: less than arrived if the program sent children.
                p.set_rb(rb);
                p.set_stack_len(self.scratch.stack.len() as u16);
                if matches!(stop, Stop::ReuseAsChild(..))
                    && let Some(h) = packet.first_chunk_mut::<HEADER_LEN>()
                {
                    // Exactly the header `child` would write: the other fields (source,
                    // port, entry, section lengths) are the packet's own, the flags but
                    // the family and the reserved bytes zero (and an IPv6 packet's IPv4
                    // words).
                    h[0] = crate::wire::VERSION << 4 | (h[0] & FLAG_IPV6);
                    h[1] = 0;
                    h[22] = 0;
                    h[23] = 0;
                    if to.is_ipv6() {
                        h[4..12].fill(0);
                    }
                }
                out.transmits.push(Transmit::to(to, packet));
                End::Forwarded
            }
            Err(fault) => {
                self.keep_spare(packet);
                End::Fault(fault)
            }
        };
    }

    /// The `len` bytes at byte `start` of `packet` (a packet that stays here), delivered:
    /// in the packet's own buffer, moved to its front, if that buffer is no larger than a
    /// spare the VM would keep (so a delivery allocates nothing); else copied out.
    #[inline(never)]
    fn bytes_of(&mut self, mut packet: Vec<u8>, start: usize, len: usize) -> Vec<u8> {
        if start.saturating_add(len) <= packet.len()
            && packet.capacity() <= SPARE_LIMIT.saturating_mul(self.config.mtu.max(HEADER_LEN_V6))
        {
            packet.copy_within(start..start + len, 0);
            packet.truncate(len);
            packet
        } else {
            let bytes = packet.get(start..start + len).unwrap_or_default().to_vec();
            self.keep_spare(packet);
            bytes
        }
    }

    /// Keeps `buf` (a packet that stays here) for building the next child in, if it is
    /// larger than the spare buffer the VM has and within [`SPARE_LIMIT`].
    fn keep_spare(&mut self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap > self.scratch.spare.capacity()
            && cap <= SPARE_LIMIT.saturating_mul(self.config.mtu.max(HEADER_LEN_V6))
        {
            self.scratch.spare = buf;
        }
    }
}

/// The IPv6 address, if it is one.
fn ipv6_of(a: IpAddr) -> Option<[u8; 16]> {
    match a {
        IpAddr::V4(_) => None,
        IpAddr::V6(a) => Some(a.octets()),
    }
}

/// Replaces the packet's stack (from byte `stack_at`) with `stack`: the words that fit where
/// the old stack was are overwritten in place, the rest appended.
#[inline]
fn write_stack(packet: &mut Vec<u8>, stack_at: usize, stack: &[u32]) {
    packet.truncate(stack_at.saturating_add(4 * stack.len()));
    let old = packet
        .get_mut(stack_at..)
        .unwrap_or_default()
        .as_chunks_mut::<4>()
        .0;
    let n = old.len();
    for (dst, w) in old.iter_mut().zip(stack) {
        *dst = w.to_be_bytes();
    }
    for w in stack.get(n..).unwrap_or_default() {
        packet.extend_from_slice(&w.to_be_bytes());
    }
}

/// How the interpreter loop stopped.
enum Stop {
    /// Done; transmits and delivery already recorded.
    End(End),
    /// `forw`/`forwto` with nothing allocated: send the packet's own buffer to this address
    /// with this resource bound.
    Reuse(IpAddr, u16),
    /// `forw`/`forwto` whose child would be the packet's heap unchanged (only unreachable
    /// objects allocated): send the packet's own buffer with the child's header.
    ReuseAsChild(IpAddr, u16),
    /// `demux` of a byte array inside the packet heap, checked: deliver the `len` bytes at
    /// byte `at` of the heap to `port`.
    DeliverBytes {
        /// The demux port.
        port: i32,
        /// Byte offset of the payload in the packet heap.
        at: usize,
        /// Bytes.
        len: usize,
    },
}
