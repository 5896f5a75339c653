//! Shared by the criterion bench (`benches/snap.rs`) and the callgrind driver
//! (`examples/snap_per_packet.rs`), so both measure the same code.
//!
//! # Per packet: SNAP ping beside plain IPv4 forwarding
//!
//! [`PingStep`] runs Fig. 1's ping (7 instructions; stack `[payload :: port 7 :: 0]`, the
//! payload a heap byte array) through one node, and [`Ipv4Step`] forwards a plain IPv4
//! packet of the same total size (20-byte header + filler). Both do the same buffer
//! handling per packet:
//!
//! 1. take the node's reused receive buffer (`mem::take`, capacity packet + 64 bytes) and
//!    copy the packet's template into it (`clear` + `extend_from_slice`: one `memcpy` of the
//!    whole packet, no allocation): the "arrival";
//! 2. move the `Vec<u8>` by value into the node: `Vm::run_into(now, iface, packet, &mut
//!    outcome)` for SNAP, with one `Outcome` reused across packets (as a node would: its
//!    `transmits` vector keeps its capacity, so the forwarding path allocates nothing;
//!    `Vm::run` would allocate and free one per packet), [`forward_ipv4`] for IP;
//! 3. get it back inside the transmit (`outcome.transmits.pop()` for SNAP; the
//!    [`Ipv4Transmit`] for IP) and keep it as the next receive buffer.
//!
//! What only the SNAP side pays, at the destination: the child packet built by copying
//! collection (`getsrc` allocates, so `forwto` cannot reuse the buffer): the VM drops the
//! received buffer and returns a fresh one of exactly the packet's length, which the step
//! replaces with a fresh receive buffer of the usual capacity (one more allocation, what a
//! node would pay to receive the next packet).
//!
//! # Per instruction: SNAP beside rbpf
//!
//! [`straight_snap`] and [`straight_ebpf`] build the same straight-line work: load 1, then
//! alternately add, xor and shift left by immediates, then exit (SNAP: `push` + `addi` /
//! `xori` / `lsli` + `exit`; eBPF: `mov64` + `add64` / `xor64` / `lsh64` + `exit`).
//! [`StraightStep`] runs the SNAP one: `Vm::run_into` consumes its packet and drops it at `exit`,
//! so each run clones the template (an allocation and a copy of the packet, freed by the
//! VM); rbpf's `execute_program` allocates its 512-byte stack per run.

use std::hint::black_box;
use std::mem;

use esp_proto::wire::{addresses, decrement_ttl};
use snap_vm::op::Op;
use snap_vm::program::Program;
use snap_vm::value::Word;
use snap_vm::vm::{End, NodeConfig, Outcome, Stats, Vm};

/// Payload sizes of the per-packet cases (bytes).
pub(crate) const PAYLOADS: [usize; 5] = [4, 64, 256, 1024, 1400];
/// The pinging node.
pub(crate) const A: [u8; 4] = [10, 0, 0, 1];
/// The pinged node.
pub(crate) const B: [u8; 4] = [10, 0, 0, 2];
/// An intermediate node on the way.
pub(crate) const R: [u8; 4] = [10, 0, 0, 3];
/// Spare capacity of a receive buffer (pushes grow the stack in place).
const HEADROOM: usize = 64;
/// The link MTU the nodes are configured with.
const MTU: usize = 1500;
/// The ping's demux port.
const PORT: i32 = 7;

/// Fig. 1's ping from [`A`] to [`B`] with `payload` bytes, on its outward trip.
pub(crate) fn ping(payload: usize) -> Program {
    let bytes: Vec<u8> = (0..payload).map(|i| i as u8).collect();
    snap_vm::paper::ping(A, B, PORT as u16, &bytes, 16)
}

/// An empty outcome for `Vm::run_into` to fill.
pub(crate) fn outcome() -> Outcome {
    Outcome {
        end: End::Exit,
        transmits: Vec::new(),
        delivery: None,
        stats: Stats::default(),
        rb_in: 0,
    }
}

/// A VM for the node at `address`.
pub(crate) fn node(address: [u8; 4]) -> Vm {
    Vm::new(NodeConfig {
        address,
        ifaces: 4,
        mtu: MTU,
    })
}

/// Where a ping packet is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where {
    /// At an intermediate node: `forw` sends it on (the buffer-reuse fast path).
    Hop,
    /// At the destination: `forw` falls through, `bne` (not taken), `push 1`, `getsrc`
    /// (allocates), `forwto` (the packet leaves in its own buffer with a fresh header).
    Turn,
    /// The reply back at the source: `forw` falls through, `bne` (taken), `demux` delivers
    /// the payload (the packet stays; the step takes a fresh receive buffer).
    Return,
}

impl Where {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Where::Hop => "snap_hop",
            Where::Turn => "snap_turn",
            Where::Return => "snap_return",
        }
    }
}

/// One SNAP ping packet per call through a node (module doc: the buffer handling).
pub(crate) struct PingStep {
    vm: Vm,
    out: Outcome,
    template: Vec<u8>,
    buf: Vec<u8>,
}

impl PingStep {
    /// # Panics
    ///
    /// If the packet does not take the expected path.
    pub(crate) fn new(at: Where, payload: usize) -> PingStep {
        let mut template = ping(payload).to_bytes().expect("ping fits");
        if at == Where::Return {
            // The reply as the destination sends it back.
            let out = node(B).run(0, 0, template);
            assert_eq!(out.end, End::Forwarded, "{out:?}");
            template = out.transmits.into_iter().next().expect("reply").packet;
        }
        let vm = node(match at {
            Where::Hop => R,
            Where::Turn => B,
            Where::Return => A,
        });
        let mut s = PingStep {
            vm,
            out: outcome(),
            buf: Vec::with_capacity(template.len() + HEADROOM),
            template,
        };
        // Check the path once before anything is measured.
        let mut probe = s.template.clone();
        probe.reserve(HEADROOM);
        let out = s.vm.run(0, 0, probe);
        if at == Where::Return {
            assert_eq!(out.end, End::Delivered, "{out:?}");
            assert_eq!(out.stats.executed, 3);
            assert!(out.transmits.is_empty());
            let d = out.delivery.as_ref().expect("delivered");
            assert_eq!(d.port, PORT);
            let bytes: Vec<u8> = (0..payload).map(|i| i as u8).collect();
            assert_eq!(d.value, snap_vm::vm::Delivered::Bytes(bytes));
        } else {
            assert_eq!(out.end, End::Forwarded, "{out:?}");
            let (executed, dst) = match at {
                Where::Hop => (1, B),
                _ => (5, A),
            };
            assert_eq!(out.stats.executed, executed);
            assert_eq!(out.transmits.len(), 1);
            assert_eq!(out.transmits[0].dst, dst);
            assert_eq!(out.transmits[0].packet.len(), s.template.len());
            assert_eq!(out.stats.allocated, if at == Where::Hop { 0 } else { 2 });
        }
        for _ in 0..3 {
            black_box(s.step());
        }
        s
    }

    /// Bytes of the packet.
    pub(crate) fn len(&self) -> usize {
        self.template.len()
    }

    /// One packet as a node handles it: arrival copy, the forwarding fast path
    /// (`Vm::try_forward`), else `Vm::run_into`; keep the transmitted buffer.
    #[inline]
    pub(crate) fn step(&mut self) -> End {
        let mut buf = mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&self.template);
        let buf = match self.vm.try_forward(buf) {
            Ok(t) => {
                self.buf = t.packet;
                return End::Forwarded;
            }
            Err(buf) => buf,
        };
        self.vm.run_into(0, 0, buf, &mut self.out);
        self.buf = match self.out.transmits.pop() {
            Some(t) if t.packet.capacity() >= self.template.len() + HEADROOM => t.packet,
            _ => Vec::with_capacity(self.template.len() + HEADROOM),
        };
        self.out.end
    }
}

/// A forwarded IPv4 packet: where to, and the packet (moved, not copied).
pub(crate) struct Ipv4Transmit {
    pub(crate) dst: [u8; 4],
    pub(crate) packet: Vec<u8>,
}

/// Plain IPv4 forwarding of a packet taken by value: check the fixed header (version, IHL,
/// total length) and read the destination (`esp_proto::wire::addresses`), decrement the
/// TTL with the incremental checksum update (`decrement_ttl`, RFC 1624), and hand the
/// packet back inside its transmit. `Err` gives the packet back when it is dropped.
#[inline]
pub(crate) fn forward_ipv4(mut packet: Vec<u8>) -> Result<Ipv4Transmit, Vec<u8>> {
    let dst = match addresses(&packet) {
        Ok((_, std::net::IpAddr::V4(d))) => d.octets(),
        _ => return Err(packet),
    };
    match decrement_ttl(&mut packet) {
        Ok(ttl) if ttl > 0 => Ok(Ipv4Transmit { dst, packet }),
        _ => Err(packet),
    }
}

/// An IPv4 packet of `total` bytes from [`A`] to [`B`] (TTL 64, protocol 17, checksum
/// filled, zero filler after the 20-byte header).
pub(crate) fn ipv4_packet(total: usize) -> Vec<u8> {
    let mut p = vec![0u8; total];
    let len = u16::try_from(total).expect("fits");
    p[..12].copy_from_slice(&[
        0x45,
        0,
        (len >> 8) as u8,
        len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    p[12..16].copy_from_slice(&A);
    p[16..20].copy_from_slice(&B);
    let mut sum: u32 = p[..20]
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p
}

/// One plain IPv4 packet per call (module doc: the same buffer handling as [`PingStep`]).
pub(crate) struct Ipv4Step {
    template: Vec<u8>,
    buf: Vec<u8>,
}

impl Ipv4Step {
    /// A packet of `total` bytes.
    ///
    /// # Panics
    ///
    /// If it is not forwarded.
    pub(crate) fn new(total: usize) -> Ipv4Step {
        let template = ipv4_packet(total);
        let mut s = Ipv4Step {
            buf: Vec::with_capacity(total + HEADROOM),
            template,
        };
        assert_eq!(s.step(), Some(B));
        s
    }

    /// One packet: arrival copy, [`forward_ipv4`], keep the transmitted buffer.
    #[inline]
    pub(crate) fn step(&mut self) -> Option<[u8; 4]> {
        let mut buf = mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&self.template);
        match forward_ipv4(buf) {
            Ok(t) => {
                self.buf = t.packet;
                Some(t.dst)
            }
            Err(p) => {
                self.buf = p;
                None
            }
        }
    }
}

/// Immediates of the straight-line programs' `i`-th operation: (kind, immediate), kind 0
/// add, 1 xor, 2 shift left.
fn straight_op(i: usize) -> (usize, i32) {
    let k = i % 3;
    let imm = match k {
        0 => 3 + (i % 11) as i32,
        1 => 0x55 + (i % 7) as i32,
        _ => 1 + (i % 3) as i32,
    };
    (k, imm)
}

/// The SNAP straight-line program: `push 1`, `ops` operations, `exit` (`ops + 2`
/// instructions, all executed).
pub(crate) fn straight_snap(ops: usize) -> Vec<u8> {
    let mut code = vec![Word::new(Op::Push as u8, 1)];
    for i in 0..ops {
        let (k, imm) = straight_op(i);
        let op = [Op::Addi, Op::Xori, Op::Lsli][k];
        code.push(Word::new(op as u8, imm));
    }
    code.push(Word::new(Op::Exit as u8, 0));
    Program {
        src: A,
        dst: B,
        rb: 16,
        code,
        ..Program::default()
    }
    .to_bytes()
    .expect("fits")
}

/// The eBPF straight-line program, assembled by `rbpf::assembler`: `mov64 r0, 1`, `ops`
/// operations, `exit`.
pub(crate) fn straight_ebpf(ops: usize) -> Vec<u8> {
    let mut src = String::from("mov64 r0, 1\n");
    for i in 0..ops {
        let (k, imm) = straight_op(i);
        let op = ["add64", "xor64", "lsh64"][k];
        src.push_str(&format!("{op} r0, {imm}\n"));
    }
    src.push_str("exit\n");
    rbpf::assembler::assemble(&src).expect("assembles")
}

/// Instructions a straight-line program of `ops` operations executes.
pub(crate) const fn straight_len(ops: usize) -> usize {
    ops + 2
}

/// Runs the SNAP straight-line program, one packet per call.
pub(crate) struct StraightStep {
    vm: Vm,
    out: Outcome,
    template: Vec<u8>,
}

impl StraightStep {
    /// # Panics
    ///
    /// If the program does not run to `exit` executing every instruction.
    pub(crate) fn new(ops: usize) -> StraightStep {
        let mut s = StraightStep {
            vm: node(B),
            out: outcome(),
            template: straight_snap(ops),
        };
        let out = s.vm.run(0, 0, s.template.clone());
        assert_eq!(out.end, End::Exit);
        assert_eq!(out.stats.executed as usize, straight_len(ops));
        black_box(s.step());
        s
    }

    /// One run: clone the template (the VM consumes it and drops it at `exit`),
    /// `Vm::run_into` with a reused outcome.
    #[inline]
    pub(crate) fn step(&mut self) -> u32 {
        self.vm.run_into(0, 0, self.template.clone(), &mut self.out);
        self.out.stats.executed
    }
}

/// Checks that rbpf runs `prog` (a straight-line program) to completion.
///
/// # Panics
///
/// If it does not.
pub(crate) fn check_ebpf(prog: &[u8]) -> u64 {
    let vm = rbpf::EbpfVmNoData::new(Some(prog)).expect("verifies");
    vm.execute_program().expect("runs")
}
