//! The demo's fast-path part: a source-hash route cache and threaded indices.

use std::io::Write;

use anyhow::Context;
use fastpath::Lookup;
use fastpath::apps::route::RouteCache;
use fastpath::assign::RandomAssigner;
use fastpath::lpm::Prefix;
use fastpath::sim::Network;
use fastpath::threaded::{Forward, Label, MAX_HOP_LIMIT};

use repro::common::SplitMix;

/// Honest flows, and the packets they send between them.
const FLOWS: usize = 8;
const PACKETS: usize = 10_000;

/// A route cache in front of 100 routes, then distance-vector routing computing threaded
/// indices on a small mesh, before and after a link fails.
///
/// # Errors
///
/// If writing fails, a cached answer differs from the table's, or routing does not converge
/// to the shortest paths.
pub fn run(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nFast path (SIGCOMM'95, trading packet headers for packet processing): source hashing, threaded indices"
    )?;
    route_cache(out)?;
    threaded(out)?;
    writeln!(
        out,
        " (reproductions: waist repro fastpath-model | fastpath-table4 | fastpath-table5 | fastpath-fig4 | fastpath-fig5)"
    )?;
    Ok(())
}

/// Per-flow (hits, misses) of one run; `liar` sends one packet after each of flow 0's,
/// carrying flow 0's index.
fn route_run(
    mut router: RouteCache<u16>,
    flows: &[([u8; 4], [u8; 4], fastpath::SourceHash)],
    liar: Option<([u8; 4], [u8; 4])>,
) -> anyhow::Result<Vec<(u64, u64)>> {
    let mut counts = vec![(0, 0); flows.len() + 1];
    let mut rng = SplitMix(0xf10);
    for _ in 0..PACKETS {
        let f = (rng.next_u64() % flows.len() as u64) as usize;
        let (dst, src, hash) = flows[f];
        let mut send = vec![(f, dst, src)];
        if let (0, Some((ldst, lsrc))) = (f, liar) {
            send.push((flows.len(), ldst, lsrc));
        }
        for (who, dst, src) in send {
            let (hop, lookup) = router.route(hash, dst, src, 0);
            let hop = hop.copied();
            anyhow::ensure!(
                hop == router.route_uncached(dst).copied(),
                "the cache answered {dst:?} differently from the LPM table"
            );
            let c = &mut counts[who];
            if lookup == Lookup::Hit {
                c.0 += 1
            } else {
                c.1 += 1
            }
        }
    }
    Ok(counts)
}

fn route_cache(out: &mut dyn Write) -> anyhow::Result<()> {
    let mut router = RouteCache::new(8)?;
    router.add_route(Prefix::new([10, 0, 0, 0], 8)?, 1u16);
    for i in 0..90u8 {
        router.add_route(Prefix::new([10, i, 0, 0], 16)?, 2 + u16::from(i % 7));
    }
    for i in 0..9u8 {
        router.add_route(Prefix::new([10, 11 * i, 1, 0], 24)?, 9);
    }
    let flows: Vec<_> = (0..FLOWS as u8)
        .map(|f| {
            let src = [192, 168, 0, f + 1];
            let hash = RandomAssigner::new(u64::from(u32::from_be_bytes(src)), 7).next_index();
            ([10, 13 * f, 1, 9], src, hash)
        })
        .collect();
    writeln!(
        out,
        " 1. Source hashing: a route cache of {} slots over an LPM table of {} routes; {FLOWS} flows each pick a random index once",
        router.cache().capacity(),
        router.table().len()
    )?;
    let honest = route_run(router.clone(), &flows, None)?;
    let (hits, misses) = honest.iter().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
    let bits = router.cache().capacity().trailing_zeros() as u8;
    let shared: Vec<String> = (0..FLOWS)
        .flat_map(|a| (a + 1..FLOWS).map(move |b| (a, b)))
        .filter(|&(a, b)| flows[a].2.low_bits(bits) == flows[b].2.low_bits(bits))
        .map(|(a, b)| format!("flows {a} and {b} drew the same slot and evict each other"))
        .collect();
    writeln!(
        out,
        "    {PACKETS} packets: {hits} hits, {misses} misses ({}); every next hop equals the uncached LPM answer",
        if shared.is_empty() {
            "one per flow".to_string()
        } else {
            shared.join("; ")
        }
    )?;
    let lied = route_run(router, &flows, Some(([10, 50, 1, 9], [192, 168, 0, 66])))?;
    anyhow::ensure!(
        honest[1..FLOWS] == lied[1..FLOWS],
        "the liar changed other flows' hits"
    );
    let others: u64 = honest[1..FLOWS].iter().map(|c| c.0).sum();
    writeln!(
        out,
        "    a liar flow reuses flow 0's index: liar {} hits / {} misses, flow 0 {} → {} hits; flows 1–{} unchanged ({others} hits); answers still exact",
        lied[FLOWS].0,
        lied[FLOWS].1,
        honest[0].0,
        lied[0].0,
        FLOWS - 1
    )?;
    Ok(())
}

/// The label's index at each router from `src` to `dst`, as a packet rewrites it.
fn trace_labels(net: &Network, src: usize, dst: usize) -> anyhow::Result<Vec<(usize, u32)>> {
    let first = net.router(src).index_of(u32::try_from(dst)?);
    let mut label = Label::threaded(first.context("no index")?, MAX_HOP_LIMIT);
    let (mut at, mut hops) = (src, Vec::new());
    loop {
        hops.push((at, label.index));
        match net.router(at).table().forward(label)? {
            Forward::Deliver if at == dst => return Ok(hops),
            Forward::Deliver => anyhow::bail!("delivered at R{at}, not R{dst}"),
            Forward::Send { iface, out_label } => {
                let link = net.links()[usize::from(iface)];
                at = if link.a == at { link.b } else { link.a };
                label = out_label;
            }
        }
    }
}

/// Runs until every route's cost is the shortest path's (or 60 s pass); returns the time.
fn converge(net: &mut Network) -> anyhow::Result<u64> {
    let start = net.now();
    while net.now() - start < 60_000 {
        net.run_for(10);
        let d = net.shortest_paths();
        let exact = (0..net.len()).all(|i| {
            (0..net.len()).all(|j| {
                let route = net.router(i).route(j as u32).map(|r| u32::from(r.cost));
                d[i][j].is_none_or(|c| route == Some(c))
            })
        });
        if exact {
            return Ok(net.now() - start);
        }
    }
    anyhow::bail!("distance vector did not converge in 60 s")
}

fn threaded(out: &mut dyn Write) -> anyhow::Result<()> {
    let links = [
        (0, 1, 1),
        (1, 2, 1),
        (2, 5, 1),
        (0, 3, 2),
        (3, 4, 2),
        (4, 5, 2),
        (1, 4, 2),
    ];
    let mut net = Network::new(6, &links, 16);
    let ms = converge(&mut net)?;
    writeln!(
        out,
        " 2. Threaded indices: {} routers, {} links, distance vector; every route = the shortest path after {ms} ms",
        net.len(),
        links.len()
    )?;
    for pass in 0..2 {
        if pass == 1 {
            net.set_link(1, None);
            let ms = converge(&mut net)?;
            writeln!(out, "    link R1–R2 down: reconverged in {ms} ms")?;
        }
        let hops = trace_labels(&net, 0, 5)?;
        let path: Vec<usize> = hops.iter().map(|h| h.0).collect();
        let cost = net.path_cost(&path).context("path over a down link")?;
        let shortest = net.shortest_paths()[0][5];
        anyhow::ensure!(
            Some(cost) == shortest,
            "R0 → R5 cost {cost}, not {shortest:?}"
        );
        let shown: Vec<String> = hops.iter().map(|(r, i)| format!("R{r}[#{i}]")).collect();
        writeln!(
            out,
            "    R0 → R5, the label rewritten to the next router's index at each hop: {}  cost {cost} = shortest",
            shown.join(" → ")
        )?;
    }
    Ok(())
}
