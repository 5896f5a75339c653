//! The client's transparent TCP fallback (§2.6): one `compat::Connection` fetching an
//! object from a Trickles server (it must stay Trickles, its request answered from the
//! SYN) and from a TCP-only server (smoltcp's socket; it must switch to TCP and deliver
//! the same bytes), over lossy, reordering links; the data written before `connect`
//! arrives in both cases.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trickles::Instant;
use trickles::client::Client;
use trickles::compat::{CompatConfig, Connection, Mode};
use trickles::conn::{Addr, FourTuple};
use trickles::ip;
use trickles::sim::compat::{FallbackOutcome, Peer, Script, Write, run_fallback, stream_of};
use trickles::sim::{LinkConfig, Transfer};

/// 5 ms one way with up to 2 ms of jitter (packets overtake each other), `loss_ppm` both
/// ways.
fn lossy(seed: u64, loss_ppm: u32) -> Transfer {
    let mut t = Transfer::new(0, 5_000);
    t.link = LinkConfig::with_delay(5_000).jitter(2_000);
    t.loss_fwd_ppm = loss_ppm;
    t.loss_rev_ppm = loss_ppm;
    t.seed = seed;
    t.time_limit_us = 120_000_000;
    t
}

fn check(o: &FallbackOutcome, script: &Script, len: u64, what: &str) {
    assert!(o.complete, "{what}: incomplete {o:?}");
    assert!(o.byte_exact, "{what}: bytes differ");
    assert_eq!(o.received, len, "{what}");
    assert!(!o.reset, "{what}");
    assert_eq!(o.server_stream, stream_of(script), "{what}: client stream");
}

#[test]
fn trickles_server_keeps_trickles_and_answers_the_syn() {
    for seed in 1..=4 {
        let len = 200_000;
        let script = Script::fetch(len, 3_000);
        let o = run_fallback(&lossy(seed, 20_000), Peer::Trickles, &script);
        check(&o, &script, len, &format!("seed {seed}"));
        assert_eq!(o.mode, Mode::Trickles, "seed {seed}");
        assert_eq!(o.plain_tcp_at_server, 0, "seed {seed}");
        // The SYN carried the request, the bytes written before `connect` included.
        assert_eq!(o.syn_data, len.to_be_bytes(), "seed {seed}");
    }
}

#[test]
fn tcp_only_server_gets_tcp_byte_exact() {
    for seed in 1..=4 {
        let len = 200_000;
        let script = Script::fetch(len, 3_000);
        let o = run_fallback(&lossy(seed, 20_000), Peer::Tcp, &script);
        check(&o, &script, len, &format!("seed {seed}"));
        assert_eq!(o.mode, Mode::Tcp, "seed {seed}");
        // The TCP server ignored the SYN's data; the stream it read starts with the
        // request, not with the Trickles message the SYN carried.
        assert_eq!(o.server_stream.get(..8), Some(&len.to_be_bytes()[..]));
    }
}

#[test]
fn both_servers_read_the_same_stream_from_requests_before_connect() {
    let len: u64 = 50_000;
    let l = len.to_be_bytes();
    let script = Script {
        before: vec![
            Write::Request(l[..2].to_vec()),
            Write::Data(l[2..5].to_vec()),
            Write::Request(b"second request".to_vec()),
        ],
        connect: l[5..].to_vec(),
        after: vec![
            Write::Request(b"after".to_vec()),
            Write::Data(vec![7; 2_000]),
        ],
    };
    let expected = stream_of(&script);
    // `send_data` before `connect` and the first request precede `connect`'s data, later
    // requests follow it.
    assert_eq!(expected.get(..8), Some(&l[..]));
    assert_eq!(expected.get(8..22), Some(&b"second request"[..]));
    for peer in [Peer::Trickles, Peer::Tcp] {
        for seed in 1..=2 {
            let o = run_fallback(&lossy(seed, 10_000), peer, &script);
            check(&o, &script, len, &format!("{peer:?} seed {seed}"));
        }
    }
}

#[test]
fn trickles_answers_a_round_trip_before_tcp() {
    // Loss-free, no jitter: 10 ms round trip. Trickles' first byte comes one round trip
    // after the SYN; TCP's needs the handshake first, two round trips.
    let mut t = lossy(1, 0);
    t.link = LinkConfig::with_delay(5_000);
    let script = Script::fetch(10_000, 0);
    let tr = run_fallback(&t, Peer::Trickles, &script);
    let tcp = run_fallback(&t, Peer::Tcp, &script);
    check(&tr, &script, 10_000, "trickles");
    check(&tcp, &script, 10_000, "tcp");
    let (a, b) = (
        tr.first_byte_us.unwrap_or(0),
        tcp.first_byte_us.unwrap_or(0),
    );
    assert!((10_000..11_000).contains(&a), "trickles first byte at {a}");
    assert!((20_000..21_000).contains(&b), "tcp first byte at {b}");
}

#[test]
fn heavy_loss_still_falls_back_and_delivers() {
    let script = Script::fetch(30_000, 500);
    for seed in 5..=8 {
        let o = run_fallback(&lossy(seed, 100_000), Peer::Tcp, &script);
        check(&o, &script, 30_000, &format!("seed {seed}"));
        assert_eq!(o.mode, Mode::Tcp);
    }
}

fn tuple() -> FourTuple {
    FourTuple {
        client_addr: Addr::V4([10, 0, 0, 1]),
        client_port: 40000,
        server_addr: Addr::V4([10, 0, 0, 2]),
        server_port: 80,
    }
}

#[test]
fn the_syn_ack_a_plain_client_rejects_switches_the_wrapper_to_tcp() {
    // Without the fallback, the Trickles client rejects the SYN-ACK: this is what the
    // wrapper is for.
    let mut conn = Connection::new(CompatConfig::default(), tuple(), 9).unwrap();
    conn.connect(Instant::ZERO, &10u64.to_be_bytes());
    let syn = conn.poll_transmit().unwrap();
    let (_, _, seg) = ip::unwrap(&syn).unwrap();
    let isn = u32::from_be_bytes([seg[4], seg[5], seg[6], seg[7]]);
    assert_eq!(conn.isn(), Some(isn));
    let mut client = Client::new(Default::default(), tuple(), isn);
    client.connect(Instant::ZERO, &10u64.to_be_bytes());
    let synack = synack_for(isn);
    let (_, _, synack_seg) = ip::unwrap(&synack).unwrap();
    assert!(
        client
            .handle_segment(Instant::from_micros(10), synack_seg)
            .is_err()
    );
    assert_eq!(
        conn.handle_packet(Instant::from_micros(10), &synack),
        Ok(())
    );
    assert_eq!(conn.mode(), Mode::Tcp);
    // The socket acknowledges the SYN-ACK and sends the request again over TCP.
    let mut sent = Vec::new();
    while let Some(p) = conn.poll_transmit() {
        let (_, _, s) = ip::unwrap(&p).unwrap();
        let header = usize::from(s[12] >> 4) * 4;
        sent.extend_from_slice(&s[header..]);
    }
    assert_eq!(sent, 10u64.to_be_bytes());
}

/// A SYN-ACK from 10.0.0.2:80 acknowledging `isn`, without the Trickles option.
fn synack_for(isn: u32) -> Vec<u8> {
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{IpAddress, TcpControl, TcpPacket, TcpRepr, TcpSeqNumber};
    let repr = TcpRepr {
        src_port: 80,
        dst_port: 40000,
        control: TcpControl::Syn,
        seq_number: TcpSeqNumber(1000),
        ack_number: Some(TcpSeqNumber(isn as i32) + 1),
        window_len: 65535,
        window_scale: None,
        max_seg_size: Some(1460),
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload: &[],
    };
    let mut seg = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut seg[..]),
        &IpAddress::v4(10, 0, 0, 2),
        &IpAddress::v4(10, 0, 0, 1),
        &ChecksumCapabilities::default(),
    );
    ip::wrap(&Addr::V4([10, 0, 0, 2]), &Addr::V4([10, 0, 0, 1]), &seg).unwrap()
}

/// smoltcp listening on 10.0.0.2:80; returns the packets it answers `syn` with.
fn listener_answers(syn: &[u8]) -> Vec<Vec<u8>> {
    listener_at(
        smoltcp::wire::IpCidr::new(smoltcp::wire::IpAddress::v4(10, 0, 0, 2), 24),
        syn,
    )
}

/// smoltcp listening on port 80 of `cidr`'s address; returns its answers to `syn`.
fn listener_at(cidr: smoltcp::wire::IpCidr, syn: &[u8]) -> Vec<Vec<u8>> {
    use smoltcp::iface::{Config, Interface, SocketSet};
    use smoltcp::socket::tcp;
    use smoltcp::time::Instant;
    use smoltcp::wire::HardwareAddress;
    use trickles::sim::tcp::SimDevice;
    let mut device = SimDevice::new(1500);
    let mut iface = Interface::new(Config::new(HardwareAddress::Ip), &mut device, Instant::ZERO);
    iface.update_ip_addrs(|a| {
        let _ = a.push(cidr);
    });
    let mut socket = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 4096]),
        tcp::SocketBuffer::new(vec![0; 4096]),
    );
    socket.listen(80).unwrap();
    let mut sockets = SocketSet::new(Vec::new());
    let handle = sockets.add(socket);
    device.push_received(syn.to_vec());
    iface.poll(Instant::from_millis(1), &mut device, &mut sockets);
    let socket = sockets.get::<tcp::Socket<'_>>(handle);
    // The SYN's data is not the stream's: nothing to read.
    assert_eq!(socket.recv_queue(), 0);
    device.take_transmitted()
}

/// The TCP flags and acknowledgment number of an IPv4 packet.
fn flags_ack(packet: &[u8]) -> (u8, u32) {
    let (_, _, seg) = ip::unwrap(packet).unwrap();
    (
        seg[13],
        u32::from_be_bytes([seg[8], seg[9], seg[10], seg[11]]),
    )
}

#[test]
fn a_tcp_stack_answers_the_syn_with_a_syn_ack() {
    const SYN_ACK: u8 = 0x12;
    let data = 77u64.to_be_bytes();
    // The wrapper's SYN (the socket's options, then the Trickles option, then the data).
    let mut conn = Connection::new(CompatConfig::default(), tuple(), 3).unwrap();
    conn.connect(Instant::ZERO, &data);
    let syn = conn.poll_transmit().unwrap();
    let isn = conn.isn().unwrap();
    let answers = listener_answers(&syn);
    assert_eq!(answers.len(), 1);
    assert_eq!(flags_ack(&answers[0]), (SYN_ACK, isn.wrapping_add(1)));
    // It carries an MSS option, so the server's SYN-ACK does too and uses a full MSS.
    let (_, _, seg) = ip::unwrap(&syn).unwrap();
    assert!(seg[12] >> 4 > 6, "options beyond the Trickles option");
    // The plain client's SYN (only the Trickles option) gets a SYN-ACK as well.
    let mut client = Client::new(Default::default(), tuple(), 1234);
    client.connect(Instant::ZERO, &data);
    let seg = client.poll_transmit().unwrap();
    let plain = ip::wrap(&tuple().client_addr, &tuple().server_addr, &seg).unwrap();
    let answers = listener_answers(&plain);
    assert_eq!(answers.len(), 1);
    assert_eq!(flags_ack(&answers[0]), (SYN_ACK, 1235));
}

#[test]
fn a_rst_for_the_syn_refuses_and_stray_tcp_is_ignored() {
    let mut conn = Connection::new(CompatConfig::default(), tuple(), 4).unwrap();
    assert_eq!(
        conn.handle_packet(Instant::ZERO, &synack_for(1)),
        Err(trickles::compat::CompatError::NotConnected)
    );
    conn.connect(Instant::ZERO, b"x");
    let isn = conn.isn().unwrap();
    // A SYN-ACK for another ISN is not an answer to ours.
    assert_eq!(
        conn.handle_packet(Instant::from_micros(1), &synack_for(isn.wrapping_add(5))),
        Err(trickles::compat::CompatError::UnexpectedTcp)
    );
    assert_eq!(conn.mode(), Mode::Connecting);
    // No listener: smoltcp resets the SYN, and the connection is refused.
    let mut device = trickles::sim::tcp::SimDevice::new(1500);
    let mut iface = smoltcp::iface::Interface::new(
        smoltcp::iface::Config::new(smoltcp::wire::HardwareAddress::Ip),
        &mut device,
        smoltcp::time::Instant::ZERO,
    );
    iface.update_ip_addrs(|a| {
        let _ = a.push(smoltcp::wire::IpCidr::new(
            smoltcp::wire::IpAddress::v4(10, 0, 0, 2),
            24,
        ));
    });
    let mut sockets = smoltcp::iface::SocketSet::new(Vec::new());
    device.push_received(conn.poll_transmit().unwrap());
    iface.poll(smoltcp::time::Instant::ZERO, &mut device, &mut sockets);
    let rst = device.take_transmitted().pop().unwrap();
    // RST|ACK acknowledging the SYN and its data (the Trickles message), not just the SYN.
    let (flags, ack) = flags_ack(&rst);
    assert_eq!(flags, 0x14);
    assert!(ack.wrapping_sub(isn) > 1, "{ack} {isn}");
    assert_eq!(conn.handle_packet(Instant::from_micros(2), &rst), Ok(()));
    assert!(conn.is_reset());
    assert_eq!(conn.poll_timeout(), None);
}

#[test]
fn ipv6_syn_gets_a_syn_ack_and_falls_back() {
    let (c, s) = ([0xfd; 16], [0xfe; 16]);
    let tuple = FourTuple {
        client_addr: Addr::V6(c),
        client_port: 40000,
        server_addr: Addr::V6(s),
        server_port: 80,
    };
    let mut conn = Connection::new(CompatConfig::default(), tuple, 5).unwrap();
    conn.connect(Instant::ZERO, b"hello");
    let syn = conn.poll_transmit().unwrap();
    assert_eq!(syn[0] >> 4, 6);
    let server = smoltcp::wire::Ipv6Address::from(s);
    let cidr = smoltcp::wire::IpCidr::new(smoltcp::wire::IpAddress::Ipv6(server), 64);
    let answers = listener_at(cidr, &syn);
    assert_eq!(answers.len(), 1);
    let (_, _, seg) = ip::unwrap(&answers[0]).unwrap();
    assert_eq!(seg[13], 0x12);
    assert_eq!(
        conn.handle_packet(Instant::from_micros(1), &answers[0]),
        Ok(())
    );
    assert!(conn.is_tcp());
    // The ACK of the SYN-ACK and the request, again, over TCP.
    let mut sent = Vec::new();
    while let Some(p) = conn.poll_transmit() {
        let (src, dst, s) = ip::unwrap(&p).unwrap();
        assert_eq!((src, dst), (tuple.client_addr, tuple.server_addr));
        sent.extend_from_slice(&s[usize::from(s[12] >> 4) * 4..]);
    }
    assert_eq!(sent, b"hello");
}
