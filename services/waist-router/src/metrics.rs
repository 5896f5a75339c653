//! What the router's metrics endpoint shows, read at each request from the node's and the
//! links' counters.
//!
//! The metrics page (`GET /metrics`): frames by fate (drops by reason), the stages' work,
//! each link's traffic, liveness (`waist_link_up`, `waist_link_refused_total`) and
//! emulation, and the routing table as `waist_route` samples (one per route, labelled by
//! prefix, link and source; the value is the cost). A static prefix has one sample per
//! link it lists, with `rank` (0 = first choice) and `state` (`active`: carrying it,
//! `backup`: up but not first, `down`). With ESP, the microcode's counters
//! (`waist_esp_microcode_*`: runs by kind, refusals by reason, aborts, failures,
//! instructions executed) and each installed instruction's runs
//! (`waist_esp_installed_runs{opcode,name}`).
//!
//! The JSON view (`GET /api/status`): the same routes, links and counters as a
//! [`Status`], which `waist route show` and `waist status` read.

use std::collections::BTreeMap;

use netio::metrics::{Responder, Sample, Snapshot};

use crate::Router;
use crate::status::{LinkStatus, RouteStatus, Status};

fn counter(name: &str, help: &str, v: u64) -> Sample {
    Sample::counter(name, help, v as f64)
}

/// Answers one request of the endpoint: the status for the JSON view, the samples for a
/// scrape.
pub(crate) fn answer(responder: Responder, r: &Router) {
    if responder.wants_status() {
        match serde_json::to_value(status(r)) {
            Ok(v) => responder.respond_status(v),
            Err(e) => {
                tracing::warn!(error = %e, "status: cannot encode");
                responder.respond(snapshot(r));
            }
        }
    } else {
        responder.respond(snapshot(r));
    }
}

/// The samples of `r` now.
pub(crate) fn snapshot(r: &Router) -> Snapshot {
    let s = r.node().stats();
    let d = s.dropped;
    let mut out = vec![
        Sample::gauge("waist_up", "1 while the router runs", 1.0).with_label("router", r.name()),
    ];
    for (name, help, v) in s.named() {
        out.push(counter(&format!("waist_{name}"), help, v));
    }
    out.push(counter(
        "waist_unclaimed",
        "packets for the router that no one took",
        r.unclaimed(),
    ));
    for (reason, v) in d.by_reason() {
        out.push(
            counter("waist_frames_dropped", "frames dropped, by reason", v)
                .with_label("reason", reason),
        );
    }
    for l in r.links().iter() {
        out.extend(l.samples("waist"));
    }
    stream_samples(r, &mut out);
    micro_samples(r, &mut out);
    for route in routes(r) {
        let mut sample = Sample::gauge(
            "waist_route",
            "a route: value = cost (0 for static routes)",
            f64::from(route.cost),
        )
        .with_label("prefix", route.prefix)
        .with_label("link", route.link)
        .with_label("source", route.source);
        if let (Some(rank), Some(state)) = (route.rank, route.state) {
            sample = sample
                .with_label("rank", rank.to_string())
                .with_label("state", state);
        }
        out.push(sample);
    }
    out
}

/// The stream handlers' counters, headroom and, per stream, its placement and cost.
fn stream_samples(r: &Router, out: &mut Vec<Sample>) {
    let Some(sn) = r.node().streams() else { return };
    for (name, help, v) in sn.stats().named() {
        out.push(counter(&format!("waist_stream_{name}"), help, v));
    }
    if let Some(a) = sn.allowance_ns() {
        out.push(Sample::gauge(
            "waist_stream_headroom_ns",
            "what handlers may spend per packet, ns (the budget's share less forwarding's cost)",
            a as f64,
        ));
    }
    for st in sn.streams() {
        let placement = match st.placement {
            stream_handlers::node::Placement::Node => "router",
            stream_handlers::node::Placement::Host => "host",
        };
        let mode = match st.mode {
            stream_handlers::node::Mode::CutThrough => "cut-through",
            stream_handlers::node::Mode::Whole => "whole",
        };
        out.push(
            Sample::gauge(
                "waist_stream_cost_ns",
                "a stream's measured handler cost per packet, ns",
                st.cost_ns as f64,
            )
            .with_label("stream", st.stream.to_string())
            .with_label("placement", placement)
            .with_label("mode", mode),
        );
    }
}

/// The ESP microcode's counters (with ESP on): runs by kind, refusals by reason, aborts,
/// failures, SNAP instructions executed, and each installed instruction's runs.
fn micro_samples(r: &Router, out: &mut Vec<Sample>) {
    if r.node().config().esp.is_none() {
        return;
    }
    let micro = r.node().micro();
    let s = micro.stats();
    for (kind, v) in [("inline", s.inline_runs), ("installed", s.installed_runs)] {
        out.push(
            counter(
                "waist_esp_microcode_runs",
                "ESP microcode runs (to a verdict or an abort), inline or installed",
                v,
            )
            .with_label("kind", kind),
        );
    }
    for (reason, v) in [
        ("off", s.refused_off),
        ("iface", s.refused_iface),
        ("malformed", s.refused_malformed),
        ("verify", s.refused_verify),
        ("operands", s.refused_operands),
        ("unknown_opcode", s.unknown_opcode),
    ] {
        out.push(
            counter(
                "waist_esp_microcode_refused",
                "ESP microcode refused, by reason (the packet goes on with Err)",
                v,
            )
            .with_label("reason", reason),
        );
    }
    out.push(counter(
        "waist_esp_microcode_aborted",
        "ESP microcode runs that aborted (missing state, store full)",
        s.aborted,
    ));
    out.push(counter(
        "waist_esp_microcode_failed",
        "ESP microcode runs that broke a rule as they ran (fault, short stack, bad verdict)",
        s.failed,
    ));
    out.push(counter(
        "waist_esp_microcode_instructions",
        "SNAP instructions executed by ESP microcode, all runs together",
        s.instructions,
    ));
    for (opcode, i) in micro.installed() {
        out.push(
            counter(
                "waist_esp_installed_runs",
                "runs of an installed ESP instruction since it was installed",
                i.runs,
            )
            .with_label("opcode", opcode.to_string())
            .with_label("name", i.name.clone()),
        );
    }
}

/// The status of `r` now.
pub(crate) fn status(r: &Router) -> Status {
    let s = r.node().stats();
    let mut counters: BTreeMap<String, u64> = s
        .named()
        .into_iter()
        .map(|(name, _, v)| (name.to_string(), v))
        .collect();
    counters.insert("unclaimed".into(), r.unclaimed());
    Status {
        router: r.name().to_string(),
        routes: routes(r),
        links: r
            .links()
            .iter()
            .map(|l| LinkStatus {
                name: l.name().to_string(),
                kind: match l.kind() {
                    netio::config::LinkKind::Udp => "udp",
                    netio::config::LinkKind::Tun => "tun",
                }
                .to_string(),
                local: l.local_addr().map(|a| a.to_string()),
                peer: l.peer().map(|a| a.to_string()),
                up: l.is_up(),
                counters: l.counters().into(),
            })
            .collect(),
        counters,
        dropped: s
            .dropped
            .by_reason()
            .into_iter()
            .map(|(reason, v)| (reason.to_string(), v))
            .collect(),
    }
}

/// Every route of `r`: the static ones (one per link they list, in rank order), then the
/// reachable ones distance vector learned.
fn routes(r: &Router) -> Vec<RouteStatus> {
    let link = |i: u16| r.links().get(usize::from(i));
    let link_name = |i: u16| link(i).map_or_else(|| i.to_string(), |l| l.name().to_string());
    let next_hop = |i: u16| link(i).and_then(|l| l.peer()).map(|a| a.to_string());
    let mut out = Vec::new();
    let table = r.node().routes();
    for (p, links) in table.statics() {
        let chosen = table.static_choice(p);
        for (rank, &i) in links.iter().enumerate() {
            let state = if chosen == Some(i) {
                "active"
            } else if table.link_up(i) {
                "backup"
            } else {
                "down"
            };
            out.push(RouteStatus {
                prefix: p.to_string(),
                link: link_name(i),
                next_hop: next_hop(i),
                cost: 0,
                source: "static".into(),
                rank: Some(rank),
                state: Some(state.into()),
            });
        }
    }
    if let Some(dv) = r.node().dv() {
        let infinity = dv.config().infinity;
        for route in dv.routes() {
            let (fastpath::threaded::NextHop::Neighbour(i), true) =
                (route.next_hop, route.cost < infinity)
            else {
                continue;
            };
            let prefix = match route.dest {
                fastpath::dv::Dest::Router(id) => format!("{}/32", std::net::Ipv4Addr::from(id)),
                fastpath::dv::Dest::V4(p) => p.to_string(),
                fastpath::dv::Dest::V6(p) => p.to_string(),
            };
            out.push(RouteStatus {
                prefix,
                link: link_name(i),
                next_hop: next_hop(i),
                cost: u32::from(route.cost),
                source: "dv".into(),
                rank: None,
                state: None,
            });
        }
    }
    out
}
