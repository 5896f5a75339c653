//! The stream node's datagram handling: data fragments, deployments and control.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::net::{IpAddr, SocketAddr};

use super::admission::{Cost, median};
use super::{Event, Fate, Meter, Mode, Output, Placement, Stream, StreamNode};
use crate::control::ControlMessage;
use crate::envelope::{Envelope, Request, Status};
use crate::format::shipped::{FlightRecord, ImageFrame};
use crate::rudp::{self, HEADER_LEN, Header, Kind, Reassembler};
use crate::spec::{Fields, Spec};
use crate::stream::{Message, Needs};

/// The size of a trial message when a spec gives none.
const TRIAL_SIZE: u32 = 1000;
/// The fragment size trials count packets by.
const TRIAL_FRAGMENT: u32 = 1400;

/// A spec's handlers as the node runs them.
fn build(spec: Spec) -> Stream {
    let deployment = spec.deployment();
    let (mode, prefix) = match deployment.needs() {
        Needs::Prefix(n) => (Mode::CutThrough, n),
        Needs::Whole => (Mode::Whole, usize::MAX),
    };
    Stream {
        spec,
        deployment,
        mode,
        prefix,
        placement: Placement::Node,
        cost: Cost::default(),
        fates: super::Fates::default(),
        overrun_reported: false,
    }
}

/// A message like the stream's: generated from its declared fields, else zeros.
fn trial_message(spec: &Spec) -> Vec<u8> {
    let len = spec.size.unwrap_or(TRIAL_SIZE) as usize;
    let made = match spec.fields {
        Some(Fields::Image) => ImageFrame::generate(1, 0, 1, len).ok(),
        Some(Fields::Flight) => FlightRecord::generate(1, 0, 1, len).ok(),
        None => None,
    };
    made.unwrap_or_else(|| alloc::vec![0; len])
}

impl StreamNode {
    /// Takes one UDP datagram that arrived from `src` for the node's `port` (its data or
    /// control port; any other is ignored), timing handlers with `meter`.
    pub fn handle_datagram(
        &mut self,
        now: sansio::Instant,
        src: SocketAddr,
        port: u16,
        payload: &[u8],
        meter: &mut dyn Meter,
    ) {
        if port == self.cfg.data_port {
            self.data(now, src.ip(), payload, meter);
        } else if port == self.cfg.control_port {
            self.control(src, payload, meter);
        }
    }

    /// Deploys `spec` for `stream` (replacing what it had), admitted by trial runs timed
    /// with `meter`: on the node if its cost fits the allowance, else on the host (its
    /// deploy request queued for it), else refused. Also what a deploy request does.
    ///
    /// # Errors
    ///
    /// Why it was refused (also an [`Event::Refused`]).
    pub fn deploy(
        &mut self,
        stream: u16,
        spec: Spec,
        meter: &mut dyn Meter,
    ) -> Result<(Placement, u64), String> {
        if !self.streams.contains_key(&stream) && self.streams.len() >= self.cfg.max_streams {
            return Err(self.refuse(
                stream,
                format!("{} streams deployed already", self.cfg.max_streams),
            ));
        }
        let mut s = build(spec);
        let cost = self.trial(&mut s, meter);
        s.cost = Cost::from_trial(cost);
        let allowance = self.allowance_ns();
        let placement = match allowance {
            Some(a) if cost > a => match self.cfg.host {
                Some(_) => Placement::Host,
                None => {
                    return Err(self.refuse(
                        stream,
                        format!("cost {cost} ns per packet exceeds the headroom of {a} ns, and no host is configured"),
                    ));
                }
            },
            _ => Placement::Node,
        };
        if placement == Placement::Host {
            self.send_host_control(stream, Request::Deploy(s.spec.to_string()));
            self.stats.deployed_host += 1;
        } else {
            self.stats.deployed_node += 1;
        }
        s.placement = placement;
        self.streams.insert(stream, s);
        self.events.push_back(Event::Deployed {
            stream,
            placement,
            cost_ns: cost,
            allowance_ns: allowance,
        });
        Ok((placement, cost))
    }

    fn refuse(&mut self, stream: u16, why: String) -> String {
        self.events.push_back(Event::Refused {
            stream,
            why: why.clone(),
        });
        why
    }

    /// The median of timed trial runs, ns per packet.
    fn trial(&self, s: &mut Stream, meter: &mut dyn Meter) -> u64 {
        let msg = trial_message(&s.spec);
        let packets = u64::from((msg.len() as u32).div_ceil(TRIAL_FRAGMENT).max(1));
        let trials = self.cfg.admission.map_or(1, |a| a.trials.clamp(1, 64));
        let mut samples: Vec<u64> = Vec::with_capacity(trials as usize);
        for _ in 0..trials {
            let m = Message::new(0, msg.clone());
            let t0 = meter.now_ns();
            let out = s.deployment.run(m);
            let t1 = meter.now_ns();
            drop(out);
            samples.push(t1.saturating_sub(t0) / packets);
        }
        median(&mut samples)
    }

    fn send_host_control(&mut self, stream: u16, request: Request) {
        let Some(host) = self.cfg.host else { return };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let mut payload = Vec::new();
        Envelope {
            stream,
            id,
            request,
        }
        .emit(&mut payload);
        self.out.push_back(Output {
            src_port: self.cfg.control_port,
            dst: SocketAddr::new(host, self.cfg.control_port),
            payload,
        });
    }

    fn send(&mut self, dst: SocketAddr, payload: Vec<u8>) {
        self.out.push_back(Output {
            src_port: self.cfg.data_port,
            dst,
            payload,
        });
    }

    fn data(&mut self, now: sansio::Instant, src: IpAddr, packet: &[u8], meter: &mut dyn Meter) {
        let h = match Header::parse(packet) {
            Ok(h) if h.kind == Kind::Data => h,
            _ => {
                self.stats.malformed += 1;
                return;
            }
        };
        self.stats.fragments_in += 1;
        let host = self.cfg.host;
        let Some(s) = self.streams.get_mut(&h.stream) else {
            self.stats.unknown_stream += 1;
            return;
        };
        let key = (src, h.message);
        let ttl = self.cfg.reassembly.timeout;
        let known = s.fates.get(key, now.micros(), ttl);
        let fate = match known {
            Some(Fate::Cut(addrs)) => {
                // Cut-through, decided: the fragment as it is, to each destination.
                copies(
                    &mut self.out,
                    &mut self.stats,
                    self.cfg.data_port,
                    addrs,
                    packet,
                );
                return;
            }
            Some(f) => Some(f.clone()),
            // A message's fate is fixed by the first of its fragments to arrive.
            None if s.placement == Placement::Host => Some(Fate::Host),
            None if s.mode == Mode::Whole || s.prefix > usize::from(h.size) => Some(Fate::Whole),
            None => None,
        };
        if let (Some(f), None) = (&fate, known) {
            let f = f.clone();
            s.fates.remember(key, f, now.micros());
        }
        match fate {
            Some(Fate::Host) => {
                if let Some(host) = host {
                    self.stats.to_host += 1;
                    self.send(SocketAddr::new(host, self.cfg.data_port), packet.to_vec());
                }
            }
            Some(Fate::Whole) => self.whole(now, src, h, packet, meter),
            // Handled above.
            Some(Fate::Cut(_)) => {}
            None if h.index == 0 => self.decide(now, src, h, packet, meter),
            None => self.hold(now, src, h, packet),
        }
    }

    /// Runs the handlers on the first fragment; sends it and the fragments that waited.
    fn decide(
        &mut self,
        now: sansio::Instant,
        src: IpAddr,
        h: Header,
        packet: &[u8],
        meter: &mut dyn Meter,
    ) {
        let allowance = self.allowance_ns();
        let limit = self.cfg.admission.map_or(u32::MAX, |a| a.overrun_messages);
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return;
        };
        // The handlers read only their prefix (`Needs::Prefix`): only it is copied.
        let body = packet.get(HEADER_LEN..).unwrap_or_default();
        let body = body.get(..s.prefix).unwrap_or(body).to_vec();
        let t0 = meter.now_ns();
        let outs = s.deployment.run(Message::new(0, body));
        let t1 = meter.now_ns();
        let addrs: Vec<SocketAddr> = outs
            .iter()
            .filter_map(|m| s.spec.dests.get(usize::from(m.dest)).copied())
            .collect();
        let overran = s
            .cost
            .record(t1.saturating_sub(t0), u64::from(h.count), allowance, limit);
        s.fates
            .remember((src, h.message), Fate::Cut(addrs.clone()), now.micros());
        self.stats.messages += 1;
        self.stats.messages_out += addrs.len() as u64;
        self.forward(&addrs, packet);
        let mut waiting = Vec::new();
        // Nothing waits in the common case (fragments in order): no pass over the queue.
        if !self.held.is_empty() {
            self.held.retain(|x| {
                let mine = x.1 == src && x.2 == h.stream && x.3 == h.message;
                if mine {
                    waiting.push(x.4.clone());
                }
                !mine
            });
        }
        for p in waiting {
            self.forward(&addrs, &p);
        }
        if overran {
            self.overrun(h.stream);
        }
    }

    fn forward(&mut self, addrs: &[SocketAddr], packet: &[u8]) {
        copies(
            &mut self.out,
            &mut self.stats,
            self.cfg.data_port,
            addrs,
            packet,
        );
    }

    fn hold(&mut self, now: sansio::Instant, src: IpAddr, h: Header, packet: &[u8]) {
        if self.held.len() >= self.cfg.max_held {
            self.held.pop_front();
            self.stats.held_dropped += 1;
        }
        self.held
            .push_back((now.micros(), src, h.stream, h.message, packet.to_vec()));
    }

    /// Reassembles; runs the handlers on a whole message; sends its copies fragmented.
    fn whole(
        &mut self,
        now: sansio::Instant,
        src: IpAddr,
        h: Header,
        packet: &[u8],
        meter: &mut dyn Meter,
    ) {
        let cfg = self.cfg.reassembly;
        if !self.reassemblers.contains_key(&(src, h.stream))
            && self.reassemblers.len() >= self.cfg.max_streams.saturating_mul(4)
        {
            self.stats.reassembly_refused += 1;
            return;
        }
        let r = self
            .reassemblers
            .entry((src, h.stream))
            .or_insert_with(|| Reassembler::new(cfg));
        let done = match r.handle_fragment(now, packet) {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(_) => {
                self.stats.reassembly_refused += 1;
                return;
            }
        };
        let allowance = self.allowance_ns();
        let limit = self.cfg.admission.map_or(u32::MAX, |a| a.overrun_messages);
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return;
        };
        let t0 = meter.now_ns();
        let outs = s.deployment.run(Message::new(0, done.payload));
        let t1 = meter.now_ns();
        let overran = s.cost.record(
            t1.saturating_sub(t0),
            u64::from(done.fragments),
            allowance,
            limit,
        );
        self.stats.messages += 1;
        let mut sends = Vec::new();
        for m in outs {
            let Some(&dst) = s.spec.dests.get(usize::from(m.dest)) else {
                continue;
            };
            let Ok(frags) =
                rudp::fragment(h.stream, done.message, done.first_seq, &m.payload, h.size)
            else {
                continue;
            };
            self.stats.messages_out += 1;
            sends.extend(frags.into_iter().map(|f| (dst, f)));
        }
        for (dst, f) in sends {
            self.stats.fragments_out += 1;
            self.send(dst, f);
        }
        if overran {
            self.overrun(h.stream);
        }
    }

    /// A stream over its allowance for too long: to the host if there is one.
    fn overrun(&mut self, stream: u16) {
        let allowance_ns = self.allowance_ns().unwrap_or(0);
        let host = self.cfg.host.is_some();
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let cost_ns = s.cost.ns_per_packet;
        if !host {
            if !s.overrun_reported {
                s.overrun_reported = true;
                self.stats.overruns += 1;
                self.events.push_back(Event::Overrun {
                    stream,
                    cost_ns,
                    allowance_ns,
                    moved: false,
                });
            }
            return;
        }
        s.placement = Placement::Host;
        let spec = s.spec.to_string();
        self.stats.overruns += 1;
        self.events.push_back(Event::Overrun {
            stream,
            cost_ns,
            allowance_ns,
            moved: true,
        });
        self.send_host_control(stream, Request::Deploy(spec));
    }

    fn control(&mut self, src: SocketAddr, payload: &[u8], meter: &mut dyn Meter) {
        let env = match Envelope::parse(payload) {
            Ok(e) => e,
            Err(e) => {
                self.stats.control_refused += 1;
                // Answer what can be answered: a header that names a request.
                if let (Some(h), true) = (payload.get(..10), payload.starts_with(b"SH")) {
                    let stream = u16::from_be_bytes([h[4], h[5]]);
                    let id = u32::from_be_bytes([h[6], h[7], h[8], h[9]]);
                    self.reply(src, stream, id, Status::Refused, e.to_string());
                }
                return;
            }
        };
        if matches!(env.request, Request::Reply(..)) {
            // The host's answer to a request this node forwarded: nothing to do.
            return;
        }
        if let Some(allowed) = &self.cfg.control_from
            && !allowed.contains(&src.ip())
        {
            self.stats.control_refused += 1;
            self.reply(
                src,
                env.stream,
                env.id,
                Status::Refused,
                format!("control from {} is not allowed", src.ip()),
            );
            return;
        }
        let (status, detail) = match self.request(env.stream, env.request, meter) {
            Ok(x) => {
                self.stats.control_applied += 1;
                x
            }
            Err(why) => {
                self.stats.control_refused += 1;
                (Status::Refused, why)
            }
        };
        self.reply(src, env.stream, env.id, status, detail);
    }

    fn reply(&mut self, to: SocketAddr, stream: u16, id: u32, status: Status, detail: String) {
        let mut payload = Vec::new();
        Envelope {
            stream,
            id,
            request: Request::Reply(status, detail),
        }
        .emit(&mut payload);
        self.out.push_back(Output {
            src_port: self.cfg.control_port,
            dst: to,
            payload,
        });
    }

    fn placed(p: Placement, cost: u64, allowance: Option<u64>) -> (Status, String) {
        let status = match p {
            Placement::Node => Status::OnNode,
            Placement::Host => Status::OnHost,
        };
        let detail = match allowance {
            Some(a) => format!("cost {cost} ns per packet, headroom {a} ns"),
            None => format!("cost {cost} ns per packet"),
        };
        (status, detail)
    }

    /// One request; its reply's status and detail, or why it was refused.
    fn request(
        &mut self,
        stream: u16,
        request: Request,
        meter: &mut dyn Meter,
    ) -> Result<(Status, String), String> {
        let m = match request {
            Request::Deploy(text) => {
                let spec: Spec = text
                    .parse()
                    .map_err(|e: crate::spec::SpecError| e.to_string())?;
                let (p, cost) = self.deploy(stream, spec, meter)?;
                return Ok(Self::placed(p, cost, self.allowance_ns()));
            }
            Request::Control(m) => m,
            Request::Reply(..) => return Err("a reply is not a request".into()),
        };
        match m {
            ControlMessage::Select { handler, .. } => {
                let spec = self
                    .cfg
                    .presets
                    .get(usize::from(handler))
                    .cloned()
                    .ok_or_else(|| format!("no preset handler {handler}"))?;
                let (p, cost) = self.deploy(stream, spec, meter)?;
                Ok(Self::placed(p, cost, self.allowance_ns()))
            }
            ControlMessage::Terminate { .. } => {
                let s = self.streams.remove(&stream).ok_or("no such stream")?;
                self.reassemblers.retain(|k, _| k.1 != stream);
                self.held.retain(|h| h.2 != stream);
                if s.placement == Placement::Host {
                    self.send_host_control(stream, Request::Control(m));
                }
                self.events.push_back(Event::Terminated { stream });
                Ok((Status::Applied, "terminated".into()))
            }
            ControlMessage::SetRate { rate } => {
                let a = self
                    .cfg
                    .admission
                    .as_mut()
                    .ok_or("this node admits everything: no rate to set")?;
                a.rate_pps = rate.max(1);
                let allowance = self.allowance_ns();
                Ok((
                    Status::Applied,
                    format!("headroom now {} ns per packet", allowance.unwrap_or(0)),
                ))
            }
            _ => {
                let (handler, param) = m.param().ok_or("not a parameter")?;
                let s = self.streams.get_mut(&stream).ok_or("no such stream")?;
                s.spec
                    .apply(handler, param)
                    .map_err(|e| format!("handler {handler}: {e}"))?;
                let spec = s.spec.clone();
                let placement = s.placement;
                let cost = s.cost;
                let fates = core::mem::take(&mut s.fates);
                let mut rebuilt = build(spec);
                rebuilt.placement = placement;
                rebuilt.cost = cost;
                // Messages already under way keep the fate they were given.
                rebuilt.fates = fates;
                let text = rebuilt.spec.to_string();
                self.streams.insert(stream, rebuilt);
                if placement == Placement::Host {
                    self.send_host_control(stream, Request::Control(m));
                }
                self.events.push_back(Event::Changed {
                    stream,
                    spec: text.clone(),
                });
                Ok((Status::Applied, text))
            }
        }
    }
}

/// Queues `packet` unchanged from the data port `port` to each of `addrs`, counted. (Free
/// of `self`: the cut-through path calls it while it borrows the stream.)
fn copies(
    out: &mut alloc::collections::VecDeque<Output>,
    stats: &mut super::Stats,
    port: u16,
    addrs: &[SocketAddr],
    packet: &[u8],
) {
    for &dst in addrs {
        stats.fragments_out += 1;
        out.push_back(Output {
            src_port: port,
            dst,
            payload: packet.to_vec(),
        });
    }
}
