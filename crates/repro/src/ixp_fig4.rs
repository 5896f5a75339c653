//! Stream-handlers paper Fig. 4: source-to-destination latency with application-level
//! (content-based) routing at an intermediate host against at the IXP.
//!
//! **Paper.** §4, Fig. 4: 100 B to 100 kB messages through an intermediate node that routes
//! on content; latency timestamped at source and destination: host 36 µs … 16.4 ms, IXP
//! 34 µs … 11.9 ms; "for smaller data sizes, application-level routing can be performed
//! equally efficiently on the IXP as on the host, as message sizes increase, IXP-side data
//! routing can reduce delays on the data path by more than 25%".
//!
//! **Ours.** [`ixp_model::path::latency_ns`]: the source host's user-level RUDP sends the
//! message as 1400-byte packets over 100 Mb/s; the IXP routes on the Rx side (a
//! [`ContentRouter`] on the first packet) and forwards each packet once it is in SDRAM;
//! the host receives every packet through its kernel into user space, routes the assembled
//! message and sends it down again; the destination host receives at user level. Every cost
//! is a named parameter of `HandlerCosts` (the chip's `Params` plus runtime instruction
//! counts), `HostParams` or `PathParams`; none is set per row.

use std::io::Write;

use anyhow::Context;
use ixp_model::path::{Machines, Node, latency_ns, stream_ns};
use stream_handlers::Field;
use stream_handlers::deploy::{Deployment, Point};
use stream_handlers::handlers::ContentRouter;

use crate::common::Options;
use crate::plot::{self, Chart, Series};

/// The paper's message sizes, bytes, with its host and IXP latencies, µs (Fig. 4).
pub const PAPER: [(u64, f64, f64); 6] = [
    (100, 36.0, 34.0),
    (1_000, 83.0, 82.0),
    (1_500, 132.0, 132.0),
    (10_000, 896.0, 854.0),
    (50_000, 6_800.0, 5_600.0),
    (100_000, 16_400.0, 11_900.0),
];

/// One message size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// Message size, bytes.
    pub size: u64,
    /// Paper, host-side routing, µs.
    pub paper_host: f64,
    /// Paper, IXP-side routing, µs.
    pub paper_ixp: f64,
    /// Ours, host-side routing, µs.
    pub host: f64,
    /// Ours, IXP-side routing, µs.
    pub ixp: f64,
    /// Ours, host-side routing, per-message time of a back-to-back stream, µs.
    pub host_stream: f64,
    /// Ours, IXP-side routing, per-message time of a back-to-back stream, µs.
    pub ixp_stream: f64,
}

impl Row {
    /// Our host latency's deviation from the paper's, percent.
    pub fn host_dev(&self) -> f64 {
        dev(self.host, self.paper_host)
    }

    /// Our IXP latency's deviation from the paper's, percent.
    pub fn ixp_dev(&self) -> f64 {
        dev(self.ixp, self.paper_ixp)
    }

    /// Our host stream time's deviation from the paper's latency, percent.
    pub fn host_stream_dev(&self) -> f64 {
        dev(self.host_stream, self.paper_host)
    }

    /// Our IXP stream time's deviation from the paper's latency, percent.
    pub fn ixp_stream_dev(&self) -> f64 {
        dev(self.ixp_stream, self.paper_ixp)
    }

    /// How much IXP routing cuts the host's latency, percent (ours).
    pub fn reduction(&self) -> f64 {
        100.0 * (1.0 - self.ixp / self.host)
    }
}

fn dev(ours: f64, paper: f64) -> f64 {
    100.0 * (ours - paper) / paper
}

/// The routing handler both nodes run: route on a 2-byte field at offset 0.
pub fn router() -> ContentRouter {
    let mut r = ContentRouter::new(Field::new(0, 2), Some(1), 16);
    r.routes.extend((0..8).map(|k| (k, 1 + (k % 3) as u16)));
    r
}

/// Our latencies for one size.
pub fn measure(m: &Machines, size: u64, paper_host: f64, paper_ixp: f64) -> Row {
    let ixp = Deployment::single(Point::RxSide, Box::new(router())).work_by_point(size);
    let host = Deployment::single(Point::HostUser, Box::new(router())).work_by_point(size);
    Row {
        size,
        paper_host,
        paper_ixp,
        host: latency_ns(m, Node::Host, &host, size) / 1e3,
        ixp: latency_ns(m, Node::Np, &ixp, size) / 1e3,
        host_stream: stream_ns(m, Node::Host, &host, size) / 1e3,
        ixp_stream: stream_ns(m, Node::Np, &ixp, size) / 1e3,
    }
}

/// Prints the table, writes `ixp-fig4.csv` and `.png`.
pub fn run(opts: &Options, out: &mut dyn Write) -> anyhow::Result<Vec<Row>> {
    let m = Machines::default();
    writeln!(
        out,
        "Stream handlers Fig. 4: source-to-destination latency, content-based routing at the \
         host vs at the IXP (100 Mb/s, {}-byte RUDP packets)",
        m.path.rudp_payload
    )?;
    writeln!(
        out,
        "latency = one message alone, source send call to destination delivery; \
         stream = per-message time of back-to-back messages (the bottleneck's busy time)"
    )?;
    writeln!(
        out,
        "{:>7} | {:>6} {:>7} {:>6} {:>7} {:>6} | {:>6} {:>7} {:>6} {:>7} {:>6} | {:>5}",
        "size",
        "paper",
        "latency",
        "dev%",
        "stream",
        "dev%",
        "paper",
        "latency",
        "dev%",
        "stream",
        "dev%",
        "cut%"
    )?;
    writeln!(
        out,
        "{:>7} | {:^38} | {:^38} |",
        "bytes", "host-side routing (µs)", "IXP-side routing (µs)"
    )?;
    let rows: Vec<Row> = PAPER
        .iter()
        .map(|&(s, h, i)| measure(&m, s, h, i))
        .collect();
    for r in &rows {
        writeln!(
            out,
            "{:>7} | {:>6.0} {:>7.0} {:>+6.0} {:>7.0} {:>+6.0} | {:>6.0} {:>7.0} {:>+6.0} {:>7.0} {:>+6.0} | {:>5.1}",
            r.size,
            r.paper_host,
            r.host,
            r.host_dev(),
            r.host_stream,
            r.host_stream_dev(),
            r.paper_ixp,
            r.ixp,
            r.ixp_dev(),
            r.ixp_stream,
            r.ixp_stream_dev(),
            r.reduction()
        )?;
    }
    let over: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            [
                ("host latency", r.size, r.host_dev()),
                ("IXP latency", r.size, r.ixp_dev()),
                ("host stream", r.size, r.host_stream_dev()),
                ("IXP stream", r.size, r.ixp_stream_dev()),
            ]
        })
        .filter(|x| x.2.abs() > 10.0)
        .map(|(n, s, d)| format!("{n} {s} B {d:+.0}%"))
        .collect();
    writeln!(
        out,
        "deviations above 10%: {}",
        if over.is_empty() {
            "none".into()
        } else {
            over.join(", ")
        }
    )?;
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("creating {}", opts.dir.display()))?;
    let csv = opts.dir.join("ixp-fig4.csv");
    let mut f =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(
        f,
        "size_bytes,paper_host_us,ours_host_latency_us,ours_host_stream_us,paper_ixp_us,ours_ixp_latency_us,ours_ixp_stream_us"
    )?;
    for r in &rows {
        writeln!(
            f,
            "{},{},{:.1},{:.1},{},{:.1},{:.1}",
            r.size, r.paper_host, r.host, r.host_stream, r.paper_ixp, r.ixp, r.ixp_stream
        )?;
    }
    let pts = |g: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| ((r.size as f64).log10(), g(r).log10()))
            .collect()
    };
    let chart = Chart {
        title: "Stream handlers Fig. 4: latency, routing at host vs IXP".into(),
        x_label: "log10(message bytes)".into(),
        y_label: "log10(latency in µs)".into(),
        log_y: false,
        series: vec![
            Series {
                label: "host latency (ours)".into(),
                points: pts(|r| r.host),
                dashed: false,
            },
            Series {
                label: "IXP latency (ours)".into(),
                points: pts(|r| r.ixp),
                dashed: false,
            },
            Series {
                label: "host stream (ours)".into(),
                points: pts(|r| r.host_stream),
                dashed: false,
            },
            Series {
                label: "IXP stream (ours)".into(),
                points: pts(|r| r.ixp_stream),
                dashed: false,
            },
            Series {
                label: "host (paper)".into(),
                points: pts(|r| r.paper_host),
                dashed: true,
            },
            Series {
                label: "IXP (paper)".into(),
                points: pts(|r| r.paper_ixp),
                dashed: true,
            },
        ],
    };
    let png = opts.dir.join("ixp-fig4.png");
    plot::draw(&chart, &png)?;
    writeln!(out, "wrote {} and {}", png.display(), csv.display())?;
    Ok(rows)
}
