//! A whole Trickles server host and its client demultiplexer, speaking IP packets.
//!
//! One `Service` running the HTTP application over a `MemStore` (queue capacity 8), one
//! `Demux` on the client side. The input is a sequence of chunks `op`, `len` (one byte)
//! and `len` bytes of `body`; by `op % 6`:
//!
//! 0. the Demux's pending packets go to the service;
//! 1. `body` goes to the service as a packet — as it is, or (odd first byte) as the TCP
//!    segment of a well-formed IPv4 packet from the client, so the transport sees it;
//! 2. the service answers its queue; every response packet goes to the Demux;
//! 3. `body` goes to the Demux as a packet, as it is or behind a server IP header;
//! 4. the clock advances by `body[0]` ms and the Demux's timers run;
//! 5. a connection opens with `body` as its request (at most four are open).
//!
//! Asserts: no panic; the service's counters account for every packet exactly once; the
//! queue never exceeds its capacity and the host's memory stays bounded; every response
//! is a well-formed IP packet from the server to the client that fits a 1500-byte MTU
//! (the MSS is `mss_for_mtu(1500)`); the Demux refuses what is not its own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trickles::app::Service;
use trickles::app::http::{HttpApp, MemStore};
use trickles::client::{ClientConfig, Demux};
use trickles::ip;
use trickles::server::Server;

#[path = "common/trickles.rs"]
mod common;
use common::{CLIENT, SERVER, START, server_config};

const CAPACITY: usize = 8;

fuzz_target!(|input: &[u8]| {
    let mut store = MemStore::new();
    store.insert("/a", (0..5000u32).map(|i| i as u8).collect());
    store.insert("/b", b"tiny".to_vec());
    let mut cfg = server_config();
    cfg.mss = ip::mss_for_mtu(1500, &SERVER);
    let app = HttpApp::new(&[9; 16], store);
    let mut host: Service<_, u8> = Service::new(Server::new(cfg), app, CAPACITY);
    let ccfg = ClientConfig {
        mss: cfg.mss,
        ..ClientConfig::default()
    };
    let mut demux = Demux::new(ccfg, CLIENT, 3);
    let mut now = START;
    let _ = demux.open(now, SERVER, 80, b"GET /a HTTP/1.1\r\n\r\n");
    let memory_bound = host.memory_bytes() + CAPACITY * 16 * 1024;
    let mut rest = input;
    while let Some((&op, tail)) = rest.split_first() {
        let Some((&len, tail)) = tail.split_first() else {
            break;
        };
        let n = usize::from(len).min(tail.len());
        let (body, tail) = tail.split_at(n);
        rest = tail;
        match op % 6 {
            0 => {
                while let Some((_, p)) = demux.poll_transmit() {
                    let _ = host.handle_packet(now, &p, 0);
                }
            }
            1 => {
                let packet = match body.first() {
                    Some(b) if b % 2 == 1 => {
                        ip::wrap(&CLIENT, &SERVER, &body[1..]).unwrap_or_default()
                    }
                    _ => body.to_vec(),
                };
                let _ = host.handle_packet(now, &packet, 1);
            }
            2 => {
                let mut out = Vec::new();
                host.serve(&mut |p, _| out.push(p.to_vec()));
                for p in out {
                    assert!(
                        p.len() <= 1500,
                        "a {}-byte response exceeds the MTU",
                        p.len()
                    );
                    let parsed = ip::parse(&p).expect("responses are well-formed IP packets");
                    assert_eq!((parsed.src, parsed.dst), (SERVER, CLIENT));
                    let _ = demux.handle_packet(now, &p);
                }
            }
            3 => {
                let packet = match body.first() {
                    Some(b) if b % 2 == 1 => {
                        ip::wrap(&SERVER, &CLIENT, &body[1..]).unwrap_or_default()
                    }
                    _ => body.to_vec(),
                };
                let _ = demux.handle_packet(now, &packet);
            }
            4 => {
                now = now.saturating_add(u64::from(body.first().copied().unwrap_or(1)) * 1000);
                demux.handle_timeout(now);
            }
            _ => {
                if demux.len() < 4 {
                    let _ = demux.open(now, SERVER, 80, body);
                }
            }
        }
        let s = host.stats();
        assert_eq!(
            s.packets,
            s.bad_ip + s.not_tcp + s.fragments + s.rejected.total() + s.queue_full + s.events,
            "every packet counted once"
        );
        assert!(host.queued() <= CAPACITY);
        assert!(
            host.memory_bytes() <= memory_bound,
            "{} > {memory_bound}",
            host.memory_bytes()
        );
    }
});
