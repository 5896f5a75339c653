//! What the router's metrics endpoint shows, rendered at each scrape from the node's and
//! the links' counters: frames by fate (drops by reason), the stages' work, each link's
//! traffic, liveness (`waist_link_up`, `waist_link_refused`) and emulation, and the routing
//! table as `waist_route` samples (one per route, labelled by prefix, link and source; the
//! value is the cost), which `waist route show` reads. A static prefix has one sample per
//! link it lists, with `rank` (0 = first choice) and `state` (`active`: carrying it,
//! `backup`: up but not first, `down`).

use netio::metrics::{Sample, Snapshot};

use crate::Router;

fn counter(name: &str, help: &str, v: u64) -> Sample {
    Sample::counter(name, help, v as f64)
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
    let link_name = |i: usize| {
        r.links()
            .get(i)
            .map_or_else(|| i.to_string(), |l| l.name().to_string())
    };
    let routes = r.node().routes();
    for (p, links) in routes.statics() {
        let chosen = routes.static_choice(p);
        for (rank, &i) in links.iter().enumerate() {
            let state = if chosen == Some(i) {
                "active"
            } else if routes.link_up(i) {
                "backup"
            } else {
                "down"
            };
            out.push(
                Sample::gauge(
                    "waist_route",
                    "a route: value = cost (0 for static routes)",
                    0.0,
                )
                .with_label("prefix", p.to_string())
                .with_label("link", link_name(usize::from(i)))
                .with_label("source", "static")
                .with_label("rank", rank.to_string())
                .with_label("state", state),
            );
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
            let dest = match route.dest {
                fastpath::dv::Dest::Router(id) => format!("{}/32", std::net::Ipv4Addr::from(id)),
                fastpath::dv::Dest::V4(p) => p.to_string(),
                fastpath::dv::Dest::V6(p) => p.to_string(),
            };
            out.push(
                Sample::gauge(
                    "waist_route",
                    "a route: value = cost (0 for static routes)",
                    f64::from(route.cost),
                )
                .with_label("prefix", dest)
                .with_label("link", link_name(usize::from(i)))
                .with_label("source", "dv"),
            );
        }
    }
    out
}
