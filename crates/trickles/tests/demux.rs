//! The client's demultiplexer against a server host, both speaking IP packets: many
//! connections at once, packets lost and reordered, connections opened and closed in any
//! order — each connection reads exactly its own object.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use proptest::prelude::*;
use trickles::Instant;
use trickles::app::Service;
use trickles::app::http::{HttpApp, MemStore};
use trickles::client::{ClientConfig, ConnId, Demux};
use trickles::conn::Addr;
use trickles::crypto::KeySchedule;
use trickles::ip;
use trickles::server::{Server, ServerConfig};

const CLIENT: Addr = Addr::V4([192, 168, 5, 1]);
const SERVER: Addr = Addr::V4([192, 168, 5, 2]);

fn object(k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 7 + k * 31) as u8 ^ (i >> 8) as u8)
        .collect()
}

/// One run: `sizes[k]` is connection k's object; `drops` and `swaps` pick packets to lose
/// and to deliver out of order; connections open `stagger` steps apart.
fn run(sizes: &[usize], drop_every: usize, swap_every: usize, stagger: usize) {
    let keys = KeySchedule::new(&[3; 16]);
    let mut store = MemStore::new();
    for (k, &len) in sizes.iter().enumerate() {
        store.insert(&format!("/o{k}"), object(k, len));
    }
    let mut cfg = ServerConfig::new(keys.key_config(1));
    cfg.mss = ip::mss_for_mtu(1500, &SERVER);
    let mut host: Service<_, ()> = Service::new(
        Server::new(cfg),
        HttpApp::new(&keys.derive(b"ucont", 0), store),
        256,
    );
    let ccfg = ClientConfig {
        mss: cfg.mss,
        ..ClientConfig::default()
    };
    let mut demux = Demux::new(ccfg, CLIENT, 11);
    let mut ids: Vec<Option<ConnId>> = vec![None; sizes.len()];
    let mut got: Vec<Vec<u8>> = vec![Vec::new(); sizes.len()];
    let mut done = vec![false; sizes.len()];
    let mut now = 1_000_000u64;
    let mut n = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    for step in 0..20_000 {
        if let Some(k) = (step % stagger.max(1) == 0)
            .then(|| step / stagger.max(1))
            .filter(|k| *k < sizes.len())
        {
            let req = format!("GET /o{k} HTTP/1.1\r\nHost: s\r\n\r\n");
            ids[k] = Some(
                demux
                    .open(Instant::from_micros(now), SERVER, 80, req.as_bytes())
                    .unwrap(),
            );
        }
        now += 2_000;
        demux.handle_timeout(Instant::from_micros(now));
        let mut to_server = Vec::new();
        while let Some((_, p)) = demux.poll_transmit() {
            to_server.push(p);
        }
        for p in to_server {
            n += 1;
            if drop_every > 0 && n.is_multiple_of(drop_every) {
                continue;
            }
            let _ = host.handle_packet(Instant::from_micros(now), &p, ());
        }
        let mut to_client = Vec::new();
        host.serve(&mut |p, ()| to_client.push(p.to_vec()));
        if swap_every > 0 {
            for i in (1..to_client.len()).step_by(swap_every) {
                to_client.swap(i - 1, i);
            }
        }
        for p in to_client {
            n += 1;
            if drop_every > 0 && n.is_multiple_of(drop_every) {
                continue;
            }
            let _ = demux.handle_packet(Instant::from_micros(now), &p);
        }
        for k in 0..sizes.len() {
            let Some(id) = ids[k] else { continue };
            if done[k] {
                continue;
            }
            loop {
                let r = demux.read(id, &mut buf);
                if r == 0 {
                    break;
                }
                got[k].extend_from_slice(&buf[..r]);
            }
            let c = demux.get(id).unwrap();
            if c.is_complete() && c.readable() == 0 {
                done[k] = true;
                demux.close(id);
            }
        }
        if done.iter().all(|d| *d) {
            break;
        }
    }
    assert!(done.iter().all(|d| *d), "incomplete: {done:?}");
    assert!(demux.is_empty());
    for (k, out) in got.iter().enumerate() {
        let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(
            &out[at..],
            &object(k, sizes[k])[..],
            "connection {k} read another's bytes"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_connection_reads_its_own_object(
        sizes in prop::collection::vec(0usize..40_000, 1..8),
        drop_every in prop_oneof![Just(0usize), 7usize..40],
        swap_every in 0usize..5,
        stagger in 0usize..6,
    ) {
        run(&sizes, drop_every, swap_every, stagger);
    }
}

#[test]
fn a_hundred_connections_at_once() {
    let sizes: Vec<usize> = (0..100).map(|k| 1000 + k * 97).collect();
    run(&sizes, 0, 0, 0);
}

/// A host serving one address refuses, and counts, SYNs naming another; the right one is
/// queued as before.
#[test]
fn a_host_serving_one_address_refuses_the_others() {
    let keys = KeySchedule::new(&[3; 16]);
    let mut store = MemStore::new();
    store.insert("/o", object(0, 10));
    let mut cfg = ServerConfig::new(keys.key_config(1));
    cfg.mss = ip::mss_for_mtu(1500, &SERVER);
    let mut host: Service<_, ()> = Service::new(
        Server::new(cfg),
        HttpApp::new(&keys.derive(b"ucont", 0), store),
        16,
    );
    host.serve_only(Some(SERVER));
    let mut demux = Demux::new(ClientConfig::default(), CLIENT, 11);
    let req = b"GET /o HTTP/1.1\r\nHost: s\r\n\r\n";
    let other = Addr::V4([192, 168, 5, 3]);
    demux
        .open(Instant::from_micros(1_000), other, 80, req)
        .unwrap();
    demux
        .open(Instant::from_micros(1_000), SERVER, 80, req)
        .unwrap();
    let sent: Vec<Vec<u8>> = std::iter::from_fn(|| demux.poll_transmit().map(|(_, p)| p)).collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        host.handle_packet(Instant::from_micros(2_000), &sent[0], ()),
        Err(trickles::app::ServiceError::OtherAddress)
    );
    assert_eq!(
        host.handle_packet(Instant::from_micros(2_000), &sent[1], ()),
        Ok(())
    );
    let s = host.stats();
    assert_eq!((s.other_address, s.events), (1, 1));
}
