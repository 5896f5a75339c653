//! Server applications on `netsim` links, driven through the event queue (§3).
//!
//! [`run_app`] connects one client to a server whose application is any [`Application`]:
//! segments go through an [`EventQueue`], and the application answers each event's
//! [`Minisocket`] — at once, or every `service_interval_us` so events wait in the queue as
//! they would behind a busy application. A [`Failover`] replaces the server mid-transfer
//! with a fresh replica (same keys, empty replay filter, a new application instance, no
//! memory of anything), optionally migrating the queued minisockets to it (extract →
//! install under a [`MigrationKey`]).
//!
//! The client sends the run's requests: the first with the SYN, the others with
//! [`Client::request`]; what it reads is the server's output stream.

use alloc::boxed::Box;
use alloc::vec::Vec;

use netsim::{Instant, LinkConfig, Node, Outbox, Simulator};

pub use super::pipeline::PipelineApp;
use super::{CLIENT_ADDR, SERVER_ADDR, flush_client, frame, unframe};
pub use crate::app::Application;
pub use crate::app::object::ObjectApp;
use crate::app::{EventQueue, MigrationKey, Minisocket};
use crate::client::{Client, ClientConfig, ClientStats};
use crate::conn::{Addr, FourTuple};
use crate::server::{Server, ServerConfig};

/// Server-side counters of an application run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppServerStats {
    /// Segments received.
    pub segments: u64,
    /// Events queued.
    pub events: u64,
    /// Segments refused by the transport (MAC, replay, …) or a full queue.
    pub refused: u64,
    /// Response segments sent.
    pub responses: u64,
    /// Minisockets moved to the replacement server at a failover.
    pub migrated: u64,
    /// Minisockets lost at a failover (queued and not migrated).
    pub dropped: u64,
}

/// A node of an application run.
pub enum AppHost {
    /// The server: engine, event queue and application.
    Server {
        /// The engine.
        server: Box<Server>,
        /// Events waiting for the application.
        queue: EventQueue,
        /// The application.
        app: Box<dyn Application>,
        /// Serve the queue every this many µs (0: at once).
        interval_us: u64,
        /// When the queue is next served.
        deadline: Option<u64>,
        /// Counters.
        stats: AppServerStats,
    },
    /// The client.
    Client {
        /// The engine.
        client: Box<Client>,
        /// Interface it sends on.
        iface: usize,
        /// The server's output, as read.
        received: Vec<u8>,
        /// `(µs, bytes read so far)` at each read that made progress.
        progress: Vec<(u64, u64)>,
    },
}

impl AppHost {
    fn serve_queue(&mut self, out: &mut Outbox) {
        if let AppHost::Server {
            server,
            queue,
            app,
            stats,
            ..
        } = self
        {
            while let Some(msk) = queue.pop() {
                let client = msk.tuple().client_addr;
                let srv = msk.tuple().server_addr;
                let mut sink = |seg: &[u8]| {
                    stats.responses += 1;
                    out.send(0, frame(&srv, &client, seg));
                };
                app.handle(msk, server, &mut sink);
            }
        }
    }
}

impl Node for AppHost {
    fn handle_packet(&mut self, now: Instant, iface: usize, packet: Vec<u8>, out: &mut Outbox) {
        let serve_now = match self {
            AppHost::Server {
                server,
                queue,
                interval_us,
                deadline,
                stats,
                ..
            } => {
                stats.segments += 1;
                let Some((src, dst, tcp)) = unframe(&packet) else {
                    stats.refused += 1;
                    return;
                };
                if dst != Addr::V4(SERVER_ADDR) {
                    return;
                }
                match queue.push_segment(server, now, src, dst, tcp) {
                    Ok(()) => stats.events += 1,
                    Err(_) => stats.refused += 1,
                }
                if *interval_us > 0 && deadline.is_none() && !queue.is_empty() {
                    *deadline = Some(now.ticks() + *interval_us);
                }
                *interval_us == 0
            }
            AppHost::Client {
                client,
                iface: send_iface,
                received,
                progress,
            } => {
                let _ = iface;
                if let Some((_, _, tcp)) = unframe(&packet) {
                    let _ = client.handle_segment(now, tcp);
                }
                read_all(client, received, progress, now.ticks());
                flush_client(client, *send_iface, out);
                false
            }
        };
        if serve_now {
            self.serve_queue(out);
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        match self {
            AppHost::Client { client, iface, .. } => {
                client.handle_timeout(now);
                flush_client(client, *iface, out);
            }
            AppHost::Server { deadline, .. } => {
                if deadline.is_some_and(|d| now.ticks() >= d) {
                    *deadline = None;
                    self.serve_queue(out);
                }
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            AppHost::Client { client, .. } => client.poll_timeout(),
            AppHost::Server { deadline, .. } => deadline.map(Instant::from_ticks),
        }
    }
}

fn read_all(client: &mut Client, received: &mut Vec<u8>, progress: &mut Vec<(u64, u64)>, now: u64) {
    let mut buf = [0u8; 4096];
    let before = received.len();
    loop {
        let n = client.read(&mut buf);
        if n == 0 {
            break;
        }
        received.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    if received.len() > before {
        progress.push((now, received.len() as u64));
    }
}

/// Replace the server mid-run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failover {
    /// When (simulated µs).
    pub at_us: u64,
    /// Whether queued minisockets move to the replacement (else they are lost).
    pub migrate: bool,
}

/// One application run's conditions.
#[derive(Clone, Debug)]
pub struct AppRun {
    /// The link (one-way delay, jitter, MTU, rate).
    pub link: LinkConfig,
    /// Loss server → client, parts per million.
    pub loss_fwd_ppm: u32,
    /// Loss client → server, parts per million.
    pub loss_rev_ppm: u32,
    /// Simulator seed.
    pub seed: u64,
    /// Give up after this much simulated time.
    pub time_limit_us: u64,
    /// The client's requests: the first rides in the SYN, the others follow framed.
    pub requests: Vec<Vec<u8>>,
    /// The server application serves its queue every this many µs (0: at once).
    pub service_interval_us: u64,
    /// Replace the server during the run.
    pub failover: Option<Failover>,
    /// Send the requests after the first with [`Client::request`] (framed, each starting a
    /// packet; `true`) or as one byte stream with [`Client::send_data`] (`false`).
    pub framed: bool,
    /// More requests, queued at this simulated time (µs): a client that falls idle and
    /// speaks again.
    pub late: Option<(u64, Vec<Vec<u8>>)>,
}

impl AppRun {
    /// A loss-free run over a link of one-way `delay_us` with these requests.
    pub fn new(delay_us: u64, requests: Vec<Vec<u8>>) -> AppRun {
        AppRun {
            link: LinkConfig::with_delay(delay_us),
            loss_fwd_ppm: 0,
            loss_rev_ppm: 0,
            seed: 1,
            time_limit_us: 120_000_000,
            requests,
            service_interval_us: 0,
            failover: None,
            framed: true,
            late: None,
        }
    }
}

/// What an application run did.
#[derive(Clone, Debug)]
pub struct AppOutcome {
    /// The server's output as the client read it.
    pub received: Vec<u8>,
    /// Whether the client saw the end of the output and all its requests arrived.
    pub complete: bool,
    /// Whether the server refused the connection.
    pub reset: bool,
    /// Simulated time until completion (or the limit).
    pub elapsed_us: u64,
    /// The client's counters.
    pub client: ClientStats,
    /// The server's counters (both servers, across a failover).
    pub server: AppServerStats,
    /// The longest time without new output after the failover (µs), if one happened
    /// before completion.
    pub failover_stall_us: Option<u64>,
    /// `(µs, bytes read so far)` at each read that made progress.
    pub progress: Vec<(u64, u64)>,
}

/// Runs one client against `make_app()`'s application. `make_app` is called again for
/// the replacement server at a failover (a new instance: nothing carries over).
pub fn run_app(
    run: &AppRun,
    make_app: &dyn Fn() -> Box<dyn Application>,
    server_cfg: ServerConfig,
    client_cfg: ClientConfig,
) -> AppOutcome {
    let mut sim: Simulator<AppHost> = Simulator::new(run.seed);
    let new_server = |app| AppHost::Server {
        server: Box::new(Server::new(server_cfg)),
        queue: EventQueue::new(1024),
        app,
        interval_us: run.service_interval_us,
        deadline: None,
        stats: AppServerStats::default(),
    };
    let srv = sim.add_node(new_server(make_app()));
    let tuple = FourTuple {
        client_addr: Addr::V4(CLIENT_ADDR),
        client_port: 40000,
        server_addr: Addr::V4(SERVER_ADDR),
        server_port: 80,
    };
    let cli = sim.add_node(AppHost::Client {
        client: Box::new(Client::new(client_cfg, tuple, run.seed as u32 ^ 0xa99)),
        iface: 1,
        received: Vec::new(),
        progress: Vec::new(),
    });
    sim.connect(srv, cli, run.link.loss_ppm(run.loss_fwd_ppm));
    sim.connect(cli, srv, run.link.loss_ppm(run.loss_rev_ppm));
    sim.act(cli, |h, now, out| {
        if let AppHost::Client { client, iface, .. } = h {
            let first = run.requests.first().map(Vec::as_slice).unwrap_or_default();
            client.connect(now, first);
            for r in run.requests.iter().skip(1) {
                if run.framed {
                    client.request(r);
                } else {
                    client.send_data(r);
                }
            }
            flush_client(client, *iface, out);
        }
    });
    let limit = Instant::from_ticks(run.time_limit_us);
    let migration = MigrationKey::new(&[0x5a; 16], server_cfg.replay.horizon_us);
    let mut failed_over = None;
    let mut earlier = AppServerStats::default();
    let mut finished_at = None;
    let mut late = run.late.as_ref();
    loop {
        let now = match (sim.step(), late) {
            (Some(now), _) => now,
            // Nothing scheduled (an idle client sets no timer): on to the late requests.
            (None, Some((at, _))) => {
                sim.run_until(Instant::from_ticks(*at));
                sim.now()
            }
            (None, None) => break,
        };
        if now > limit {
            break;
        }
        if let Some((at, requests)) = late
            && now.ticks() >= *at
        {
            late = None;
            sim.act(cli, |h, _, out| {
                if let AppHost::Client { client, iface, .. } = h {
                    for r in requests {
                        if run.framed {
                            client.request(r);
                        } else {
                            client.send_data(r);
                        }
                    }
                    flush_client(client, *iface, out);
                }
            });
        }
        if let Some(f) = run.failover
            && failed_over.is_none()
            && now.ticks() >= f.at_us
        {
            failed_over = Some(now.ticks());
            let mut replacement = new_server(make_app());
            if let (AppHost::Server { queue, stats, .. }, AppHost::Server { queue: fresh, .. }) =
                (sim.node_mut(srv), &mut replacement)
            {
                let moving = queue.extract(|_| true);
                let n = moving.len() as u64;
                if f.migrate {
                    for m in moving {
                        let bytes = m.extract(&migration, now);
                        if let Ok(m) = Minisocket::install(&migration, &bytes, now)
                            && fresh.install(m).is_ok()
                        {
                            stats.migrated += 1;
                        }
                    }
                } else {
                    stats.dropped += n;
                }
                earlier = *stats;
            }
            if let AppHost::Server {
                interval_us,
                deadline,
                queue,
                ..
            } = &mut replacement
                && !queue.is_empty()
            {
                *deadline = Some(now.ticks() + (*interval_us).max(1));
            }
            *sim.node_mut(srv) = replacement;
        }
        if let AppHost::Client { client, .. } = sim.node(cli)
            && ((client.is_complete() && client.sent_all()) || client.is_reset())
        {
            finished_at = Some(now.ticks());
            break;
        }
    }
    let mut outcome = AppOutcome {
        received: Vec::new(),
        complete: false,
        reset: false,
        elapsed_us: finished_at.unwrap_or(run.time_limit_us),
        client: ClientStats::default(),
        server: AppServerStats::default(),
        failover_stall_us: None,
        progress: Vec::new(),
    };
    if let AppHost::Client {
        client,
        received,
        progress,
        ..
    } = sim.node(cli)
    {
        outcome.complete = client.is_complete() && client.sent_all();
        outcome.reset = client.is_reset();
        outcome.client = client.stats();
        outcome.received = received.clone();
        outcome.progress = progress.clone();
        if let Some(t) = failed_over {
            let end = finished_at.unwrap_or(run.time_limit_us);
            let mut last = progress
                .iter()
                .rev()
                .find(|(at, _)| *at <= t)
                .map_or(0, |(at, _)| *at);
            let mut stall = 0;
            for &(at, _) in progress.iter().filter(|(at, _)| *at > t) {
                stall = stall.max(at - last);
                last = at;
            }
            if outcome.complete {
                stall = stall.max(end.saturating_sub(last));
            }
            outcome.failover_stall_us = Some(stall);
        }
    }
    if let AppHost::Server { stats, .. } = sim.node(srv) {
        outcome.server = AppServerStats {
            segments: stats.segments + earlier.segments,
            events: stats.events + earlier.events,
            refused: stats.refused + earlier.refused,
            responses: stats.responses + earlier.responses,
            migrated: earlier.migrated,
            dropped: earlier.dropped,
        };
    }
    outcome
}
