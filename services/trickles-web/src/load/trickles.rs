//! The Trickles half of a run: one UDP link to the server (`netio`'s [`Links`], the link
//! `udp:ANY=SERVER`), one [`Demux`], a new connection per request (see the module docs of
//! [`load`](super)).
//!
//! Each round queues every packet the connections have for the link and flushes it once
//! (requests of one size leave as GSO runs), then takes the batches waiting (recvmmsg with
//! GRO, each slot split back into datagrams), a bounded number per round.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant as StdInstant;

use anyhow::Context;
use netio::clock::Clock;
use netio::link::{Batch, LinkOptions, LinkSpec, Links};
use trickles::Instant;
use trickles::client::{ClientConfig, ConnId, Demux};
use trickles::conn::Addr;

use super::{
    Budget, LINK_MTU, LoadConfig, Report, SERVER_PORT, SOCKET_BUFFER, cpu_seconds, request_bytes,
};

/// Most receive calls (each a batch of datagrams) between two looks at the timers and
/// the connections' output.
const RECV_CALLS: usize = 8;

/// The one interface of the run's [`Links`].
const IFACE: usize = 0;

/// One outstanding Trickles request.
struct Outstanding {
    started: Instant,
    bytes: u64,
}

/// The connections of a run, what they read and what they finished.
struct Clients {
    demux: Demux,
    live: HashMap<ConnId, Outstanding>,
    output: Vec<u8>,
    report: Report,
}

impl Clients {
    /// Hands the datagrams of the batch just received to the connections at `now`; reads
    /// what they delivered and retires the complete ones. Returns the datagrams handled.
    fn take(&mut self, batch: &mut Batch, now: Instant) -> usize {
        let mut n = 0;
        for packet in batch.frames() {
            n += 1;
            let Ok(id) = self.demux.handle_packet(now, packet) else {
                continue;
            };
            if let Some(o) = self.live.get_mut(&id) {
                loop {
                    let r = self.demux.read(id, &mut self.output);
                    if r == 0 {
                        break;
                    }
                    o.bytes += r as u64;
                }
            }
            if self.demux.get(id).is_some_and(|c| c.is_complete()) {
                finish(&mut self.demux, &mut self.live, id, true, &mut self.report);
            }
        }
        n
    }
}

/// The run's link: UDP from any local port (buffers of [`SOCKET_BUFFER`], as large as the
/// system allows: a server's bursts to a thousand clients must not overflow it) to
/// `server` only.
async fn open_link(server: SocketAddr, start: StdInstant) -> anyhow::Result<Links> {
    let any: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let spec = LinkSpec::Udp {
        local: any,
        peer: Some(server),
    };
    let options = LinkOptions {
        // No MTU of our own: a datagram is taken whatever its length.
        mtu: usize::from(u16::MAX),
        buffer: SOCKET_BUFFER,
        ..LinkOptions::default()
    };
    let mut links = Links::new();
    links.add("trickles", &spec, &options, start).await?;
    Ok(links)
}

/// The Trickles half: see the module docs.
pub async fn run_trickles(cfg: &LoadConfig, server: SocketAddr) -> anyhow::Result<Report> {
    let mut links = open_link(server, StdInstant::now())
        .await
        .context("UDP link")?;
    let local = links
        .get(IFACE)
        .and_then(netio::link::Link::local_addr)
        .context("the link's local address")?;
    let local = Addr::from(local.ip());
    let server_ip = Addr::from(server.ip());
    // Delayed acknowledgments are asked for by default, as trickles-get does.
    let ccfg = ClientConfig {
        mss: trickles::ip::mss_for_mtu(LINK_MTU, &server_ip),
        // IP-in-UDP: the UDP checksum covers the inner packet (as trickles-get's link).
        checksum: trickles::wire::Checksum::Trusted,
        ..ClientConfig::default()
    };
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let mut clients = Clients {
        demux: Demux::new(ccfg, local, u64::from_le_bytes(seed)),
        live: HashMap::with_capacity(cfg.concurrency),
        output: vec![0u8; 1 << 18],
        report: Report::default(),
    };
    let request = request_bytes(&cfg.path, false);
    let stall_us = cfg.stall.as_micros() as u64;

    let cpu0 = cpu_seconds();
    // The run's one clock: the connections' time, from the start of the run.
    let clock = Clock::monotonic();
    let start = clock.origin();
    let budget = Budget::new(cfg, start);
    let end = Instant::from_micros(u64::try_from(cfg.duration.as_micros()).unwrap_or(u64::MAX));
    let mut batch = Batch::new();
    let mut next_scan = Instant::ZERO;
    let mut sleep = std::pin::pin!(tokio::time::sleep_until(budget.end.into()));

    loop {
        let wall = StdInstant::now();
        let now = clock.at(wall);
        if now >= end {
            break;
        }
        let Clients { demux, live, .. } = &mut clients;
        while live.len() < cfg.concurrency && budget.claim() {
            let id = demux
                .open(now, server_ip, SERVER_PORT, &request)
                .map_err(|e| anyhow::anyhow!("open: {e}"))?;
            live.insert(
                id,
                Outstanding {
                    started: now,
                    bytes: 0,
                },
            );
        }
        if live.is_empty() {
            break;
        }
        while let Some((_, packet)) = demux.poll_transmit() {
            links.send(IFACE, &packet, wall);
        }
        links.flush();

        let mut got = 0;
        for _ in 0..RECV_CALLS {
            match links.try_recv_batch(IFACE, &mut batch) {
                Ok(_) => got += clients.take(&mut batch, now).max(1),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // Loopback ICMP port unreachable (server gone or not yet there): counted.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => return Err(e).context("recv"),
            }
        }

        // The receive calls took time: the timers' turn reads the clock again.
        let now = clock.now();
        let Clients {
            demux,
            live,
            report,
            ..
        } = &mut clients;
        if demux.poll_timeout().is_some_and(|d| d <= now) {
            demux.handle_timeout(now);
        }
        if now >= next_scan {
            // Stalled or reset connections: counted as errors, replaced.
            let dead: Vec<ConnId> = live
                .iter()
                .filter(|(id, o)| {
                    now.saturating_since(o.started) > stall_us
                        || demux.get(**id).is_none_or(|c| c.is_reset())
                })
                .map(|(id, _)| *id)
                .collect();
            for id in dead {
                finish(demux, live, id, false, report);
            }
            next_scan = now.saturating_add(100_000);
        }
        if got == 0 {
            let deadline = [demux.poll_timeout(), Some(next_scan), Some(end)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(end);
            if deadline > now {
                sleep.as_mut().reset(clock.deadline(deadline).into());
                tokio::select! {
                    _ = links.recv(&mut batch) => {
                        clients.take(&mut batch, clock.now());
                    }
                    () = &mut sleep => {}
                }
            }
        }
    }
    let mut report = clients.report;
    report.seconds = clock.origin().elapsed().as_secs_f64();
    report.cpu = (cpu_seconds() - cpu0) / report.seconds.max(1e-9);
    Ok(report)
}

/// Retires connection `id`: a completed response (`ok`) of the right length is counted,
/// anything else is an error.
fn finish(
    demux: &mut Demux,
    live: &mut HashMap<ConnId, Outstanding>,
    id: ConnId,
    ok: bool,
    report: &mut Report,
) {
    let Some(o) = live.remove(&id) else {
        return;
    };
    if let Some(client) = demux.close(id) {
        let s = client.stats();
        report.timeouts += s.timeouts;
        report.losses += s.losses;
    }
    if ok && report.response_len == 0 {
        report.response_len = o.bytes;
    }
    if ok && o.bytes == report.response_len {
        report.requests += 1;
        report.bytes += o.bytes;
    } else {
        report.errors += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tests::config;
    use crate::load::{Target, run};
    use trickles::app::object::object_byte;
    use trickles::app::{Application, Minisocket, Service, UcontKey, UserContinuation};
    use trickles::crypto::KeySchedule;
    use trickles::server::{EventKind, Server, ServerConfig};

    /// Answers every GET with the same `len`-byte synthetic object (as `ObjectApp`, whose
    /// request is the length itself).
    struct Fixed {
        key: UcontKey,
        len: u64,
    }

    impl Application for Fixed {
        fn handle(&mut self, mut msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8])) {
            if msk.kind() == EventKind::Close {
                return;
            }
            let (conn, len) = (msk.binding(), self.len);
            let ucont = msk.user_continuation().to_vec();
            let sealed = if ucont.is_empty() {
                let output = UserContinuation::Output {
                    valid_start: 0,
                    valid_end: len,
                    skip_to: len,
                    follows: None,
                    app: &[],
                };
                self.key.seal(&conn, &output).unwrap()
            } else {
                assert!(self.key.open(&conn, &ucont).is_ok());
                ucont
            };
            msk.set_ucont_all(&sealed);
            let _ = msk.send_with(
                server,
                &mut |range, allowed, out| {
                    let end = range.start.saturating_add(allowed as u64).min(len);
                    out.extend((range.start.min(end)..end).map(object_byte));
                    end >= len
                },
                sink,
            );
        }
    }

    /// An in-process Trickles server over IP-in-UDP serving `len`-byte objects, on a
    /// `udp:127.0.0.1:0` link.
    async fn trickles_server(len: u64) -> SocketAddr {
        let spec = LinkSpec::Udp {
            local: "127.0.0.1:0".parse().unwrap(),
            peer: None,
        };
        let mut links = Links::new();
        links
            .add("web", &spec, &LinkOptions::default(), StdInstant::now())
            .await
            .unwrap();
        let addr = links.get(IFACE).unwrap().local_addr().unwrap();
        let keys = KeySchedule::new(&[7; 16]);
        let mut cfg = ServerConfig::new(keys.key_config(0));
        cfg.mss = trickles::ip::mss_for_mtu(LINK_MTU, &Addr::from(addr.ip()));
        let app = Fixed {
            key: UcontKey::new(&keys.derive(b"ucont", 0)),
            len,
        };
        let mut service: Service<Fixed, SocketAddr> = Service::new(Server::new(cfg), app, 1024);
        let clock = Clock::monotonic();
        tokio::spawn(async move {
            let mut batch = Batch::new();
            loop {
                links.recv(&mut batch).await;
                let t = StdInstant::now();
                let now = clock.at(t);
                for (peer, packet) in batch.datagrams() {
                    let _ = service.handle_packet(now, packet, peer);
                }
                service.serve(&mut |p, peer| links.send_to(IFACE, peer, p, t));
                links.flush();
            }
        });
        addr
    }

    #[tokio::test]
    async fn trickles_requests_complete_and_are_counted() {
        let server = trickles_server(5000).await;
        let r = run(&config(Target::Trickles(server), 8, 40)).await.unwrap();
        assert_eq!((r.requests, r.errors), (40, 0), "{r:?}");
        assert_eq!(r.response_len, 5000);
        assert_eq!(r.bytes, 40 * 5000);
        assert!(r.seconds > 0.0 && r.requests_per_s() > 0.0);
    }

    #[tokio::test]
    async fn trickles_without_a_server_counts_stalls_as_errors() {
        // A bound socket that never answers.
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let mut cfg = config(Target::Trickles(addr), 2, 4);
        cfg.stall = std::time::Duration::from_millis(200);
        let r = run(&cfg).await.unwrap();
        assert_eq!((r.requests, r.errors), (0, 4), "{r:?}");
        drop(socket);
    }
}
