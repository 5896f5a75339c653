//! Stream-handlers paper Fig. 5: data throughput at the intermediate node for each stream
//! handler, the host against the IXP.
//!
//! **Paper.** §4, Fig. 5 (its bars are not in the text of our copy; these are its claims):
//! the IXP performs at least slightly better than the host for most handlers; IXP mirroring
//! is only slightly affected by message size, while the host mirroring 50 kB messages to
//! two destinations drops 7%; destination-customised multicast of 50 kB messages to two
//! clients is 25% faster on the IXP; for computationally intensive handlers such as format
//! translation the host is more efficient as sizes grow.
//!
//! **Ours.** [`ixp_model::path::deployment_load`] for each handler and size: on the IXP,
//! route, mirror and filter run on the Rx side, multicast is an Rx-side mirror composed with
//! Tx-side per-destination filters, delta and format run in transit on the assembled
//! message; on the host every handler runs at user level on the assembled message. The
//! node's throughput is the message size over its busiest resource's time per message
//! (input wire, output wire, receive thread, in-transit context, transmit thread, host CPU).
//! Mirror and multicast go to two destinations. Costs are the same parameters as Fig. 4's.

use std::io::Write;

use anyhow::Context;
use ixp_model::path::{Machines, deployment_load};
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::{ByteSwap, CustomMulticast, Delta, Filter, Mirror};
use stream_handlers::{Field, Predicate, StreamHandler};

use crate::common::Options;
use crate::plot::{self, Chart, Series};

/// Message sizes swept, bytes.
pub const SIZES: [u64; 4] = [100, 1_000, 10_000, 50_000];

/// The handlers of Fig. 5.
pub const HANDLERS: [&str; 6] = ["route", "mirror", "filter", "multicast", "delta", "format"];

/// The handler named `name` (one of [`HANDLERS`]), built fresh.
pub fn handler(name: &str) -> Option<Box<dyn StreamHandler>> {
    let f = Field::new(0, 2);
    Some(match name {
        "route" => Box::new(crate::ixp_fig4::router()),
        "mirror" => Box::new(Mirror::new(vec![1, 2])),
        "filter" => Box::new(Filter::new(Predicate::Lt(f, 0x8000))),
        "multicast" => Box::new(CustomMulticast::new(
            vec![1, 2],
            vec![(1, Predicate::Lt(f, 0x8000)), (2, Predicate::Ge(f, 0x4000))],
        )),
        "delta" => Box::new(Delta::paper(1)),
        "format" => Box::new(ByteSwap),
        _ => return None,
    })
}

/// How the IXP deploys `name`.
pub fn ixp_deployment(name: &str) -> Option<Deployment> {
    let f = Field::new(0, 2);
    Some(match name {
        "multicast" => CustomMulticast::new(
            vec![1, 2],
            vec![(1, Predicate::Lt(f, 0x8000)), (2, Predicate::Ge(f, 0x4000))],
        )
        .deployment(),
        "delta" | "format" => Deployment::single(Point::InTransit, handler(name)?),
        _ => Deployment::single(Point::RxSide, handler(name)?),
    })
}

/// One handler at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The handler.
    pub handler: &'static str,
    /// Message size, bytes.
    pub size: u64,
    /// Host throughput, Mb/s of input (handler at user level, as the paper measured).
    pub host: f64,
    /// Host throughput with the handler in the kernel (no crossings, no copies), Mb/s.
    pub kernel: f64,
    /// IXP throughput, Mb/s of input.
    pub ixp: f64,
    /// The host's bottleneck resource.
    pub host_limit: &'static str,
    /// The IXP's bottleneck resource.
    pub ixp_limit: &'static str,
    /// The host CPU's busy share at the host's throughput, percent.
    pub host_cpu: f64,
    /// The busiest NP context's share at the IXP's throughput, percent.
    pub np_busiest: f64,
}

impl Row {
    /// IXP throughput over the host's.
    pub fn ratio(&self) -> f64 {
        if self.host > 0.0 {
            self.ixp / self.host
        } else {
            0.0
        }
    }
}

fn limit(l: &ixp_model::path::NodeLoad) -> &'static str {
    let b = l.bottleneck_ns();
    [
        (l.wire_in, "wire in"),
        (l.wire_out, "wire out"),
        (l.np_rx, "Rx thread"),
        (l.np_transit, "transit ctx"),
        (l.np_tx, "Tx thread"),
        (l.host, "host CPU"),
    ]
    .into_iter()
    .find(|x| x.0 >= b)
    .map_or("-", |x| x.1)
}

/// Our throughputs for `name` at `size`.
pub fn measure(m: &Machines, name: &'static str, size: u64) -> Option<Row> {
    let ixp = deployment_load(m, &ixp_deployment(name)?, size);
    let host = deployment_load(
        m,
        &Deployment::single(Point::HostUser, handler(name)?),
        size,
    );
    let kernel = deployment_load(
        m,
        &Deployment::single(Point::HostKernel, handler(name)?),
        size,
    );
    Some(Row {
        handler: name,
        size,
        host: host.throughput_mbps(size),
        kernel: kernel.throughput_mbps(size),
        ixp: ixp.throughput_mbps(size),
        host_limit: limit(&host),
        ixp_limit: limit(&ixp),
        host_cpu: 100.0 * host.host / host.bottleneck_ns(),
        np_busiest: 100.0 * ixp.np_rx.max(ixp.np_transit).max(ixp.np_tx) / ixp.bottleneck_ns(),
    })
}

fn find<'a>(rows: &'a [Row], h: &str, s: u64) -> Option<&'a Row> {
    rows.iter().find(|r| r.handler == h && r.size == s)
}

/// Prints the table and the paper's claims beside ours; writes `ixp-fig5.csv` and `.png`.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let m = Machines::default();
    writeln!(
        out,
        "Stream handlers Fig. 5: throughput at the intermediate node (Mb/s of input, 100 Mb/s \
         ports), host vs IXP; mirror and multicast to two destinations"
    )?;
    writeln!(
        out,
        "CPU % = host CPU busy share at the host's rate; ctx % = busiest NP context's share at \
         the IXP's rate (100: the bottleneck); kernel = the host with the handler in its kernel \
         (no crossings or copies), a reference"
    )?;
    writeln!(
        out,
        "{:>10} {:>7} {:>8} {:>8} {:>9} {:>7} {:>12} {:>12} {:>7} {:>7} {:>7}",
        "handler",
        "size",
        "host",
        "IXP",
        "IXP/host",
        "winner",
        "host limit",
        "IXP limit",
        "CPU %",
        "ctx %",
        "kernel"
    )?;
    let mut rows = Vec::new();
    for name in HANDLERS {
        for size in SIZES {
            let Some(r) = measure(&m, name, size) else {
                continue;
            };
            writeln!(
                out,
                "{:>10} {:>7} {:>8.1} {:>8.1} {:>9.2} {:>7} {:>12} {:>12} {:>7.0} {:>7.0} {:>7.1}",
                r.handler,
                r.size,
                r.host,
                r.ixp,
                r.ratio(),
                if r.ratio() >= 1.0 { "IXP" } else { "host" },
                r.host_limit,
                r.ixp_limit,
                r.host_cpu,
                r.np_busiest,
                r.kernel
            )?;
            rows.push(r);
        }
    }
    let get = |h, s| find(&rows, h, s).cloned();
    if let (Some(hm), Some(hr), Some(mc), Some(m1), Some(m50)) = (
        get("mirror", 50_000),
        get("route", 50_000),
        get("multicast", 50_000),
        get("mirror", 1_000),
        get("mirror", 50_000),
    ) {
        writeln!(out, "claims (paper → ours):")?;
        writeln!(
            out,
            "  host mirroring 50 kB to two destinations drops 7% → drops {:.1}% against routing",
            100.0 * (1.0 - hm.host / hr.host)
        )?;
        writeln!(
            out,
            "  IXP mirroring only slightly affected by size → {:.1} Mb/s at 1 kB, {:.1} at 50 kB",
            m1.ixp, m50.ixp
        )?;
        writeln!(
            out,
            "  customised multicast, 50 kB, two clients: IXP +25% → IXP {:+.1}%",
            100.0 * (mc.ratio() - 1.0)
        )?;
    }
    let fmt: Vec<String> = SIZES
        .iter()
        .filter_map(|&s| get("format", s))
        .map(|r| format!("{} B {:.2}", r.size, r.ratio()))
        .collect();
    writeln!(
        out,
        "  format favours the host as sizes grow → IXP/host {}",
        fmt.join(", ")
    )?;
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("creating {}", opts.dir.display()))?;
    let csv = opts.dir.join("ixp-fig5.csv");
    let mut f =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(
        f,
        "handler,size_bytes,host_mbps,ixp_mbps,host_limit,ixp_limit"
    )?;
    for r in &rows {
        writeln!(
            f,
            "{},{},{:.2},{:.2},{},{}",
            r.handler, r.size, r.host, r.ixp, r.host_limit, r.ixp_limit
        )?;
    }
    let series = HANDLERS
        .iter()
        .map(|&h| Series {
            label: format!("{h}: IXP / host"),
            points: rows
                .iter()
                .filter(|r| r.handler == h)
                .map(|r| ((r.size as f64).log10(), r.ratio()))
                .collect(),
            dashed: false,
        })
        .collect();
    let png = opts.dir.join("ixp-fig5.png");
    plot::draw(
        &Chart {
            title: "Stream handlers Fig. 5: IXP throughput over host throughput".into(),
            x_label: "log10(message bytes)".into(),
            y_label: "IXP / host throughput".into(),
            log_y: false,
            series,
        },
        &png,
    )?;
    writeln!(out, "wrote {} and {}", png.display(), csv.display())?;
    Ok(rows)
}
