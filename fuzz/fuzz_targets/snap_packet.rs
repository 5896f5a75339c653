//! Arbitrary bytes as a SNAP packet at a node with a few interfaces and the ESS services.
//!
//! Asserts, for any input: running it never panics; if the bytes parse as a program the
//! verifier accepts, the run stays within the verifier's bounds (instructions, stack depth,
//! heap words, sends, delivery); the transmits' resource bounds sum to less than the bound
//! the packet arrived with (paper §IV.A.3); every transmit is a well-formed SNAP packet,
//! addressed as it says, linear in the packet (no larger than the packet, plus a stack grown
//! by one value per instruction, plus max(packet, 4 × MTU) bytes of allocations), of the
//! packet's address family, and running it at the next node never panics either. Nodes
//! are dual-stack (10.0.0.n and fd00::n), so IPv6 packets run as IPv4 ones do.
#![no_main]

use ess::{EssConfig, HashKey};
use libfuzzer_sys::fuzz_target;
use snap_vm::program::Program;
use snap_vm::service::EssService;
use snap_vm::verify::verify;
use snap_vm::vm::{End, NodeConfig, Vm};
use snap_vm::wire::Packet;

/// fd00::`n`.
fn six(n: u8) -> [u8; 16] {
    let mut a = [0; 16];
    a[0] = 0xfd;
    a[15] = n;
    a
}

fn node(config: NodeConfig) -> Vm {
    let n = config.address[3];
    let mut vm = Vm::new(config);
    vm.set_address6(Some(six(n)));
    let store = EssConfig::new(4, 100, 1, HashKey::from_seed(1)).expect("valid config");
    for s in EssService::trio(store, HashKey::from_seed(2)) {
        vm.services.register(Box::new(s));
    }
    vm
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the node: its address (10.0.0.1–4 and fd00::1–4), interfaces (1–4), MTU and
    // the interface the packet came in on; the rest is the packet.
    let Some((&sel, packet)) = data.split_first() else {
        return;
    };
    let config = NodeConfig {
        address: [10, 0, 0, 1 + (sel & 3)],
        ifaces: u32::from((sel >> 2) & 3) + 1,
        mtu: [68, 576, 1500, 9000][usize::from((sel >> 4) & 3)],
    };
    let iface = u32::from(sel >> 6);
    let out = node(config.clone()).run(u64::from(sel), iface, packet.to_vec());

    if let Ok(program) = Program::from_bytes(packet)
        && let Ok(b) = verify(&program, &config)
    {
        let s = out.stats;
        assert!(s.executed <= b.instructions, "{s:?} {b:?}");
        assert!(s.max_depth <= b.stack_depth, "{s:?} {b:?}");
        assert!(s.allocated <= b.heap_words, "{s:?} {b:?}");
        assert!(s.sends <= b.sends, "{s:?} {b:?}");
        assert!(out.delivery.is_none() || b.delivers, "{b:?}");
    }

    if matches!(out.end, End::Malformed(_) | End::NoResource) {
        assert!(out.transmits.is_empty() && out.delivery.is_none());
        return;
    }
    assert!(out.transmits.len() as u32 <= config.ifaces, "send limit");
    let code_words = Packet::new_checked(packet).map_or(0, |p| usize::from(p.code_len()));
    let limit = packet.len() + 4 * (code_words + 1) + packet.len().max(4 * config.mtu);
    let ipv6 = Packet::new_checked(packet).map(|p| p.is_ipv6());
    let mut given = 0u32;
    for t in &out.transmits {
        let p = Packet::new_checked(&t.packet[..]).expect("a transmit is a SNAP packet");
        // `dst` is the IPv4 destination field, zero for an IPv6 packet (whose bytes at that
        // offset are something else); `destination()` covers both families.
        if p.is_ipv6() {
            assert_eq!(t.dst, [0; 4]);
        } else {
            assert_eq!(p.dst(), t.dst);
        }
        assert_eq!(p.dst_addr(), t.destination());
        assert_eq!(Ok(p.is_ipv6()), ipv6, "a packet never changes family");
        assert!(Program::from_bytes(&t.packet).is_ok());
        assert!(t.packet.len() <= limit, "{} > {limit}", t.packet.len());
        given += u32::from(p.rb());
        let last = match t.destination() {
            std::net::IpAddr::V4(a) => a.octets()[3],
            std::net::IpAddr::V6(a) => a.octets()[15],
        };
        let next = NodeConfig {
            address: [10, 0, 0, last],
            ..config.clone()
        };
        let _ = node(next).run(1, 0, t.packet.clone());
    }
    assert!(
        given < u32::from(out.rb_in),
        "children got {given} of {}",
        out.rb_in
    );
});
