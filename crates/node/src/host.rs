//! The end-host side of the node's protocols, for tools that talk to routers over a link.
//!
//! * **SNAP ping** (SNAP paper, Fig. 1): [`SnapPinger`] builds the paper's ping as an IPv4
//!   packet (protocol 254), or an IPv6 one (next header 254) for a pinger at an IPv6
//!   address, and, when the packet comes back, runs it in its own VM — a SNAP
//!   packet executes at every SNAP node it reaches, the endpoints included — to take the
//!   delivery it makes at the source: the sequence number, the round-trip time and the
//!   resource bound the packet still had. [`SnapPinger::with_program`] sends a compiled
//!   PLAN ping instead (Fig. 2, from [`snap_vm::plan`]); its replies read the same.
//! * **ESP queries**: `esp_proto::endpoint::Endpoint` builds ESP packets (dedicated or
//!   piggybacked, reflected back with RB) and parses answers, aborts included; a node's
//!   local delivery is the reflector (§2.5), so a query addressed to a router comes back
//!   from it. Nothing is written twice here.
//!
//! ```
//! use waist_node::host::SnapPinger;
//! use waist_node::{Config, Instant, Node, routes::prefix};
//!
//! // A SNAP router at 10.0.0.2 answers pings addressed to it.
//! let mut c = Config::router([10, 0, 0, 2].into(), 1);
//! c.snap = true;
//! let mut router = Node::new(c, Instant::ZERO)?;
//! router.add_route(prefix([10, 0, 0, 1].into(), 32)?, 0);
//!
//! let mut pinger = SnapPinger::new([10, 0, 0, 1], 7);
//! let mut request = pinger.request([10, 0, 0, 2], 1, Instant::ZERO, 16)?;
//! router.handle_packet(Instant::ZERO, 0, &mut request);
//! let (_, reply) = router.poll_transmit_owned().expect("the ping turns round");
//! let r = pinger.handle_reply(Instant::from_micros(250), &reply)?;
//! assert_eq!((r.seq, r.target, r.rtt_us), (1, [10, 0, 0, 2].into(), 250));
//! assert_eq!(r.rb, 14); // one unit spent at the router, one on arrival back here
//!
//! // The same over IPv6, to a router with an IPv6 address only.
//! let (us, them): (std::net::IpAddr, std::net::IpAddr) = ("fd00::1".parse()?, "fd00::2".parse()?);
//! let mut c = Config::router(them, 1);
//! c.snap = true;
//! let mut router = Node::new(c, Instant::ZERO)?;
//! router.add_route(prefix(us, 128)?, 0);
//! let mut pinger = SnapPinger::new(us, 7);
//! let mut request = pinger.request(them, 2, Instant::ZERO, 16)?;
//! assert_eq!(request[0] >> 4, 6);
//! router.handle_packet(Instant::ZERO, 0, &mut request);
//! let (_, reply) = router.poll_transmit_owned().expect("the ping turns round");
//! let r = pinger.handle_reply(Instant::from_micros(90), &reply)?;
//! assert_eq!((r.seq, r.target, r.rtt_us, r.rb), (2, them, 90, 14));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same ping compiled from PLAN (the paper's Fig. 2): `p` runs at the target and sends
//! `r` back to the source, which delivers the payload to our port.
//!
//! ```
//! use snap_vm::plan::{Options, compile};
//! use waist_node::host::SnapPinger;
//! use waist_node::{Config, Instant, Node, routes::prefix};
//!
//! let fig2 = "fun r(w:blob, n:int) = deliverUDP(w, n)
//!             fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)";
//! let opts = Options { fold_bound: 4, services: vec![], entry: "p".into() };
//! let compiled = compile(fig2, &opts)?;
//!
//! let mut c = Config::router([10, 0, 0, 2].into(), 1);
//! c.snap = true;
//! let mut router = Node::new(c, Instant::ZERO)?;
//! router.add_route(prefix([10, 0, 0, 1].into(), 32)?, 0);
//!
//! let mut pinger = SnapPinger::with_program([10, 0, 0, 1], 7, &compiled)?;
//! let mut request = pinger.request([10, 0, 0, 2], 1, Instant::ZERO, 16)?;
//! router.handle_packet(Instant::ZERO, 0, &mut request);
//! let (_, reply) = router.poll_transmit_owned().expect("the ping turns round");
//! let r = pinger.handle_reply(Instant::from_micros(250), &reply)?;
//! assert_eq!((r.seq, r.target, r.rtt_us), (1, [10, 0, 0, 2].into(), 250));
//! assert_eq!(r.rb, 14);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::net::IpAddr;

use snap_vm::ip::{FramingError, decapsulate, encapsulate};
use snap_vm::paper::ping;
use snap_vm::plan::Compiled;
use snap_vm::plan::ast::Ty;
use snap_vm::program::Program;
use snap_vm::value::Value;
use snap_vm::vm::{Delivered, NodeConfig, Vm};
use snap_vm::wire::Packet;

use crate::Instant;
use crate::snap::LOCAL_IFACE;

/// Bytes of the ping payload before the target: sequence number, send time.
const PAYLOAD_HEAD: usize = 4 + 8;

/// Why a ping could not be built or a reply read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingError {
    /// The packet is not a SNAP packet in IP (or cannot be framed as one).
    Framing(FramingError),
    /// A target of the other address family than the pinger's.
    MixedFamilies,
    /// A SNAP packet, but not a reply to this pinger's ping (it delivered nothing to our
    /// port, or something else).
    NotAReply,
    /// The ping program does not fit the packet format.
    TooLarge,
    /// A compiled program whose entry function does not take a ping's arguments
    /// `(w: blob, n: int)` (the payload and the port its reply delivers it to).
    EntryParams,
}

impl fmt::Display for PingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PingError::Framing(e) => write!(f, "not a SNAP packet: {e}"),
            PingError::MixedFamilies => {
                f.write_str("the target and our address are of different families")
            }
            PingError::NotAReply => f.write_str("not a reply to our ping"),
            PingError::TooLarge => f.write_str("ping program too large"),
            PingError::EntryParams => f.write_str(
                "the compiled program's entry function must take (w: blob, n: int): \
                 the payload and the port to deliver it to",
            ),
        }
    }
}

impl core::error::Error for PingError {}

impl From<FramingError> for PingError {
    fn from(e: FramingError) -> Self {
        PingError::Framing(e)
    }
}

/// What a ping reply says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingReply {
    /// The request's sequence number.
    pub seq: u32,
    /// The address that was pinged.
    pub target: IpAddr,
    /// Microseconds from the request to `now` at [`SnapPinger::handle_reply`].
    pub rtt_us: u64,
    /// Resource bound left after the reply ran here (each SNAP node spends one).
    pub rb: u16,
}

/// Builds SNAP pings and reads their replies. See the [module docs](self).
#[derive(Debug)]
pub struct SnapPinger {
    vm: Vm,
    src: IpAddr,
    port: u16,
    /// A compiled ping and its entry index, or `None` for Fig. 1.
    compiled: Option<(Program, u16)>,
}

impl SnapPinger {
    /// A pinger at `src` (IPv4 or IPv6: its pings are of that family), whose replies
    /// deliver to local port `port`.
    pub fn new(src: impl Into<IpAddr>, port: u16) -> SnapPinger {
        let src = src.into();
        let (v4, v6) = match src {
            IpAddr::V4(a) => (a.octets(), None),
            IpAddr::V6(a) => ([0; 4], Some(a.octets())),
        };
        let mut vm = Vm::new(NodeConfig {
            address: v4,
            ifaces: 1,
            mtu: 65_535,
        });
        vm.set_address6(v6);
        SnapPinger {
            vm,
            src,
            port,
            compiled: None,
        }
    }

    /// A pinger at `src` sending the compiled PLAN program `compiled` (e.g. the paper's
    /// Fig. 2) instead of Fig. 1, with replies delivering to local port `port`. Each
    /// request's stack is the entry function's arguments, the 16-byte ping payload as a
    /// blob and `port`, with the entry index on top (see [`snap_vm::plan`]); the program
    /// must deliver the payload back to that port at the source, as Fig. 2 does.
    ///
    /// # Errors
    ///
    /// [`PingError::EntryParams`] unless the entry function takes `(blob, int)`.
    pub fn with_program(
        src: impl Into<IpAddr>,
        port: u16,
        compiled: &Compiled,
    ) -> Result<SnapPinger, PingError> {
        if compiled.entry_params != [Ty::Blob, Ty::Int] {
            return Err(PingError::EntryParams);
        }
        let mut p = SnapPinger::new(src, port);
        p.compiled = Some((compiled.program.clone(), compiled.entry_index));
        Ok(p)
    }

    /// Whether requests carry a compiled program ([`with_program`](Self::with_program))
    /// rather than Fig. 1.
    pub fn is_compiled(&self) -> bool {
        self.compiled.is_some()
    }

    /// The IP packet (IPv4 or IPv6, the pinger's family) of ping number `seq` to `dst`,
    /// sent at `now`, with resource bound `rb` (one unit per SNAP node on the way out and
    /// back).
    ///
    /// # Errors
    ///
    /// [`PingError::MixedFamilies`] for a target of the other family;
    /// [`PingError::TooLarge`] or [`PingError::Framing`] (not expected for a ping).
    pub fn request(
        &self,
        dst: impl Into<IpAddr>,
        seq: u32,
        now: Instant,
        rb: u16,
    ) -> Result<Vec<u8>, PingError> {
        let dst = dst.into();
        let mut payload = Vec::with_capacity(PAYLOAD_HEAD + 16);
        payload.extend_from_slice(&seq.to_be_bytes());
        payload.extend_from_slice(&now.micros().to_be_bytes());
        match dst {
            IpAddr::V4(a) => payload.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => payload.extend_from_slice(&a.octets()),
        }
        let program = match &self.compiled {
            None => {
                let mut p = ping([0; 4], [0; 4], self.port, &payload, rb);
                p.set_addrs(self.src, dst)
                    .map_err(|_| PingError::MixedFamilies)?;
                p
            }
            Some((compiled, entry_index)) => {
                let mut p = compiled.clone();
                p.set_addrs(self.src, dst)
                    .map_err(|_| PingError::MixedFamilies)?;
                (p.port, p.rb) = (self.port, rb);
                let w = p.heap_bytes(&payload);
                p.stack = vec![
                    w,
                    Value::int(i32::from(self.port)),
                    Value::int(i32::from(*entry_index)),
                ];
                p
            }
        };
        let snap = program.to_bytes().map_err(|_| PingError::TooLarge)?;
        Ok(encapsulate(&snap)?)
    }

    /// Reads a packet that came back at `now`: runs it here, as every SNAP node does, and
    /// returns what it delivered to our port.
    ///
    /// # Errors
    ///
    /// [`PingError`] if it is not a SNAP packet delivering a ping payload to our port.
    pub fn handle_reply(&mut self, now: Instant, packet: &[u8]) -> Result<PingReply, PingError> {
        let snap = decapsulate(packet)?;
        let rb_in = Packet::new_checked(snap)
            .map_err(|_| PingError::NotAReply)?
            .rb();
        let o = self.vm.run(now.micros(), LOCAL_IFACE, snap.to_vec());
        let d = o.delivery.ok_or(PingError::NotAReply)?;
        let Delivered::Bytes(b) = d.value else {
            return Err(PingError::NotAReply);
        };
        let target = match b.get(PAYLOAD_HEAD..) {
            Some(&[a, b, c, d]) => Some(IpAddr::from([a, b, c, d])),
            Some(t) => <[u8; 16]>::try_from(t).ok().map(IpAddr::from),
            None => None,
        };
        let (Some(s), Some(t), Some(target), true) = (
            b.first_chunk::<4>(),
            b.get(4..12).and_then(|t| <[u8; 8]>::try_from(t).ok()),
            target,
            d.port == i32::from(self.port),
        ) else {
            return Err(PingError::NotAReply);
        };
        Ok(PingReply {
            seq: u32::from_be_bytes(*s),
            target,
            rtt_us: now.micros().saturating_sub(u64::from_be_bytes(t)),
            rb: rb_in.saturating_sub(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_that_is_not_ours_is_refused() {
        let mut p = SnapPinger::new([10, 0, 0, 1], 7);
        assert!(matches!(
            p.handle_reply(Instant::ZERO, &[0x45]),
            Err(PingError::Framing(_))
        ));
        // Our own request, arriving back unanswered (still outbound) delivers nothing.
        let req = p
            .request([10, 0, 0, 1], 3, Instant::ZERO, 4)
            .unwrap_or_default();
        let other = SnapPinger::new([10, 0, 0, 1], 8).request([10, 0, 0, 9], 1, Instant::ZERO, 4);
        assert_eq!(
            p.handle_reply(Instant::ZERO, &other.unwrap_or_default()),
            Err(PingError::NotAReply)
        );
        assert!(!req.is_empty());
        // A target of the other family.
        let six: IpAddr = core::net::Ipv6Addr::LOCALHOST.into();
        assert_eq!(
            p.request(six, 1, Instant::ZERO, 4).err(),
            Some(PingError::MixedFamilies)
        );
        assert_eq!(
            SnapPinger::new(six, 7)
                .request([10, 0, 0, 1], 1, Instant::ZERO, 4)
                .err(),
            Some(PingError::MixedFamilies)
        );
    }

    fn compile(source: &str) -> Compiled {
        let opts = snap_vm::plan::Options {
            fold_bound: 1,
            services: Vec::new(),
            entry: "p".into(),
        };
        snap_vm::plan::compile(source, &opts).expect("compiles")
    }

    const FIG2: &str = "fun r(w:blob, n:int) = deliverUDP(w, n)\n\
                        fun p(w:blob, n:int) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)";

    #[test]
    fn a_compiled_program_must_take_a_payload_and_a_port() {
        for wrong in [
            "fun r(w:blob, n:int) = deliverUDP(w, n)\n\
             fun p(n:int, w:blob) = OnRemote(|r|(w, n), getSrc(), getRB(), defaultRoute)",
            "fun p(w:blob) = deliverUDP(w, 7)",
            "fun p(w:blob, n:int, x:int) = deliverUDP(w, n + x)",
        ] {
            assert_eq!(
                SnapPinger::with_program([10, 0, 0, 1], 7, &compile(wrong)).err(),
                Some(PingError::EntryParams),
                "{wrong}"
            );
        }
        let p = SnapPinger::with_program([10, 0, 0, 1], 7, &compile(FIG2));
        assert!(p.is_ok_and(|p| p.is_compiled()));
        assert!(!SnapPinger::new([10, 0, 0, 1], 7).is_compiled());
        assert!(alloc::format!("{}", PingError::EntryParams).contains("(w: blob, n: int)"));
    }

    #[test]
    fn a_compiled_request_carries_payload_port_and_entry_index() {
        let compiled = compile(FIG2);
        let p = SnapPinger::with_program([10, 0, 0, 1], 9, &compiled).unwrap();
        let req = p
            .request([10, 0, 0, 2], 5, Instant::from_micros(77), 12)
            .unwrap();
        let got = Program::from_bytes(decapsulate(&req).unwrap()).unwrap();
        assert_eq!(got.code, compiled.program.code);
        assert_eq!(
            (got.src, got.dst, got.rb),
            ([10, 0, 0, 1], [10, 0, 0, 2], 12)
        );
        let mut want = compiled.program.clone();
        let mut payload = Vec::new();
        payload.extend_from_slice(&5u32.to_be_bytes());
        payload.extend_from_slice(&77u64.to_be_bytes());
        payload.extend_from_slice(&[10, 0, 0, 2]);
        let w = want.heap_bytes(&payload);
        assert_eq!(got.heap, want.heap);
        assert_eq!(
            got.stack,
            [w, Value::int(9), Value::int(compiled.entry_index.into())]
        );
    }
}
