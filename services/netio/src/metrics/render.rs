//! A [`Snapshot`] as text: OpenMetrics 1.0.0 (written by `prometheus-client`'s encoder) or
//! the classic Prometheus text format 0.0.4 (written here: `prometheus-client` writes only
//! OpenMetrics).
//!
//! Both group the samples into families in the order of their first sample, with the
//! names, label names, help and label values made valid as the formats ask. They differ in
//! a counter's family name (`x` in OpenMetrics, `x_total` in the classic format, where the
//! `# TYPE` line must name the samples it types), in how values are written, and in the
//! closing `# EOF` (OpenMetrics only).

use std::fmt::Write as _;

use anyhow::anyhow;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Kind, Sample, Snapshot};

/// A text exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The classic Prometheus text format 0.0.4: counters typed as `name_total`, no `# EOF`.
    Prometheus,
    /// OpenMetrics 1.0.0: counter families named without `_total`, ending with `# EOF`.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` a body in this format is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format a request's `Accept` header value asks for: OpenMetrics if it names
    /// `application/openmetrics-text` (version 1.0.0 or none) with a quality above zero
    /// and at least that of any `text/plain`; the classic format otherwise (no header,
    /// `*/*`, `text/plain`).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        let mut open = 0.0_f64;
        let mut text = 0.0_f64;
        for range in accept.split(',') {
            let mut params = range.split(';').map(str::trim);
            let media = params.next().unwrap_or_default().to_ascii_lowercase();
            let (mut q, mut version_ok) = (1.0_f64, true);
            for p in params {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                match k.trim().to_ascii_lowercase().as_str() {
                    "q" => q = v.trim().parse().unwrap_or(0.0),
                    "version" => version_ok = v.trim() == "1.0.0",
                    _ => {}
                }
            }
            match media.as_str() {
                "application/openmetrics-text" if version_ok => open = open.max(q),
                "text/plain" => text = text.max(q),
                _ => {}
            }
        }
        if open > 0.0 && open >= text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }
}

/// Renders a snapshot in `format`.
///
/// # Errors
///
/// Only if `prometheus-client`'s encoder fails (it writes into a `String`, so it does not).
pub fn render(snapshot: &Snapshot, format: Format) -> anyhow::Result<String> {
    match format {
        Format::Prometheus => Ok(classic(snapshot)),
        Format::OpenMetrics => {
            let mut registry = Registry::default();
            registry.register_collector(Box::new(SnapshotCollector(families(snapshot))));
            let mut out = String::new();
            prometheus_client::encoding::text::encode(&mut out, &registry)
                .map_err(|_| anyhow!("encoding the metrics failed"))?;
            Ok(out)
        }
    }
}

/// One family: its name (without `_total`), its first sample (kind and help) and members.
#[derive(Debug)]
struct Family {
    name: String,
    kind: Kind,
    help: String,
    members: Vec<Sample>,
}

/// The samples grouped by sanitized name, in the order of their first sample; samples of
/// another kind than their family's first are left out.
fn families(snapshot: &Snapshot) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for sample in snapshot {
        let mut name = metric_name(&sample.name);
        if sample.kind == Kind::Counter
            && let Some(stem) = name.strip_suffix("_total").filter(|s| !s.is_empty())
        {
            name = stem.to_owned();
        }
        match out.iter_mut().find(|f| f.name == name) {
            Some(f) if f.kind == sample.kind => f.members.push(sample.clone()),
            Some(_) => tracing::debug!(name, "metrics: sample of another kind left out"),
            None => out.push(Family {
                name,
                kind: sample.kind,
                help: sample.help.clone(),
                members: vec![sample.clone()],
            }),
        }
    }
    out
}

/// The classic text format 0.0.4.
fn classic(snapshot: &Snapshot) -> String {
    let mut out = String::new();
    for f in families(snapshot) {
        let (name, kind) = match f.kind {
            Kind::Counter => (format!("{}_total", f.name), "counter"),
            Kind::Gauge => (f.name.clone(), "gauge"),
        };
        let _ = writeln!(out, "# HELP {name} {}", escape(&f.help, false));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in &f.members {
            out.push_str(&name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    let _ = write!(out, "{sep}{}=\"{}\"", label_name(k), escape(v, true));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", value(s.value));
        }
    }
    out
}

/// A value as the classic format writes it (Go's `ParseFloat` reads it back).
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}

/// Feeds the families to `prometheus-client`'s encoder at scrape time.
#[derive(Debug)]
struct SnapshotCollector(Vec<Family>);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let metric_type = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let help = escape(&f.help, false);
            let mut metric = encoder.encode_descriptor(&f.name, &help, None, metric_type)?;
            for sample in &f.members {
                let labels: Vec<(String, String)> = sample
                    .labels
                    .iter()
                    .map(|(k, v)| (label_name(k), escape(v, true)))
                    .collect();
                if labels.is_empty() {
                    encode_value(&mut metric, sample)?;
                } else {
                    encode_value(&mut metric.encode_family(&labels)?, sample)?;
                }
            }
        }
        Ok(())
    }
}

/// Writes one sample's value line (the family's labels, if any, are in `metric`).
fn encode_value(metric: &mut MetricEncoder<'_>, sample: &Sample) -> Result<(), std::fmt::Error> {
    match sample.kind {
        Kind::Counter => metric.encode_counter::<NoLabelSet, f64, f64>(&sample.value, None),
        Kind::Gauge => metric.encode_gauge(&sample.value),
    }
}

/// A valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, other characters replaced by `_`.
pub(super) fn metric_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`, other characters replaced by `_`.
fn label_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn sanitize(name: &str, allowed: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| if allowed(c) { c } else { '_' }));
    out
}

/// Escapes `\` and newlines (and `"` in label values) as the exposition formats ask.
fn escape(text: &str, quote: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quote => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        vec![
            Sample::counter("rx_packets_total", "Packets received.", 5.0).with_label("link", "a"),
            Sample::gauge("rx_packets", "wrong kind", 1.0),
            Sample::counter("rx_packets", "ignored help", 7.0).with_label("link", "b\"\\\n"),
            Sample::gauge("1 bad-name", "Line one\nline two", 2.5).with_label("bad label", "v"),
        ]
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let text = render(&snapshot(), Format::OpenMetrics).unwrap();
        let expected = "# HELP rx_packets Packets received.\n\
                        # TYPE rx_packets counter\n\
                        rx_packets_total{link=\"a\"} 5.0\n\
                        rx_packets_total{link=\"b\\\"\\\\\\n\"} 7.0\n\
                        # HELP _1_bad_name Line one\\nline two\n\
                        # TYPE _1_bad_name gauge\n\
                        _1_bad_name{bad_label=\"v\"} 2.5\n\
                        # EOF\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn the_classic_format_types_counters_by_their_total_name() {
        let text = render(&snapshot(), Format::Prometheus).unwrap();
        let expected = "# HELP rx_packets_total Packets received.\n\
                        # TYPE rx_packets_total counter\n\
                        rx_packets_total{link=\"a\"} 5\n\
                        rx_packets_total{link=\"b\\\"\\\\\\n\"} 7\n\
                        # HELP _1_bad_name Line one\\nline two\n\
                        # TYPE _1_bad_name gauge\n\
                        _1_bad_name{bad_label=\"v\"} 2.5\n";
        assert_eq!(text, expected);
        let odd = vec![
            Sample::gauge("g", "h", f64::INFINITY),
            Sample::gauge("g", "h", f64::NAN).with_label("k", "v"),
        ];
        assert_eq!(
            render(&odd, Format::Prometheus).unwrap(),
            "# HELP g h\n# TYPE g gauge\ng +Inf\ng{k=\"v\"} NaN\n"
        );
    }

    #[test]
    fn accept_headers_choose_the_format() {
        let f = |a: &str| Format::negotiate(Some(a));
        assert_eq!(Format::negotiate(None), Format::Prometheus);
        assert_eq!(f("*/*"), Format::Prometheus);
        assert_eq!(f("text/plain"), Format::Prometheus);
        // What Prometheus 2.x sends.
        assert_eq!(
            f(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            ),
            Format::OpenMetrics
        );
        assert_eq!(f("application/openmetrics-text"), Format::OpenMetrics);
        assert_eq!(
            f("Application/OpenMetrics-Text; version=1.0.0; q=0.6"),
            Format::OpenMetrics
        );
        // Asked for, but less than the classic format, refused, or only a version we do
        // not write.
        assert_eq!(
            f("application/openmetrics-text;q=0.2,text/plain;q=0.9"),
            Format::Prometheus
        );
        assert_eq!(f("application/openmetrics-text;q=0"), Format::Prometheus);
        assert_eq!(
            f("application/openmetrics-text;version=0.0.1"),
            Format::Prometheus
        );
    }
}
