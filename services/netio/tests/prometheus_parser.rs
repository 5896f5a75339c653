#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The metrics page read by real parsers: Python's `prometheus_client` (Debian's
//! `python3-prometheus-client`), its classic text parser on the page curl gets and its
//! OpenMetrics parser on the page Prometheus gets. Every family must come back with the
//! type it was given (a counter is a `counter`, not `untyped`/`unknown`) and every sample
//! with its labels and value.
//!
//! Skips, saying why, when no python3 with the module is found, unless `CI` is set: then
//! it fails.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use netio::metrics::{self, Sample};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Prints the families the parser named in `argv[1]` (`classic` or `openmetrics`) reads
/// from stdin, as JSON.
const PARSE: &str = r#"
import json, sys
if sys.argv[1] == "classic":
    from prometheus_client.parser import text_string_to_metric_families
else:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type,
                "samples": [[s.name, dict(s.labels), s.value] for s in f.samples]})
print(json.dumps(out))
"#;

/// A python3 that has `prometheus_client`, if there is one.
fn python() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import prometheus_client.openmetrics.parser"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn parse(python: &str, parser: &str, page: &str) -> Value {
    let mut child = Command::new(python)
        .args(["-c", PARSE, parser])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the {parser} parser refused the page:\n{page}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a router's page looks like: counters with and without labels, gauges, a label
/// value that needs escaping.
fn snapshot() -> Vec<Sample> {
    vec![
        Sample::gauge("waist_up", "1 while the router runs", 1.0).with_label("router", "r1"),
        Sample::counter("waist_frames_received", "frames handed to the node", 12.0),
        Sample::counter("waist_frames_dropped", "frames dropped, by reason", 2.0)
            .with_label("reason", "no_route"),
        Sample::counter("waist_frames_dropped", "frames dropped, by reason", 1.0)
            .with_label("reason", "ttl_expired"),
        Sample::counter("waist_link_rx_bytes", "bytes received on the link", 1500.0)
            .with_label("link", "r\"2\\"),
        Sample::gauge("waist_route", "a route: value = cost", 2.0)
            .with_label("prefix", "10.3.0.0/16")
            .with_label("source", "dv"),
    ]
}

async fn get(addr: SocketAddr, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    s.write_all(format!("GET /metrics HTTP/1.1\r\n{accept}\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let kind = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap()
        .to_string();
    (kind, body.to_string())
}

#[tokio::test]
async fn both_pages_parse_with_prometheus_client_as_what_they_claim() {
    let Some(python) = python() else {
        let why = "no python3 with prometheus_client (apt-get install python3-prometheus-client)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let listener = TcpListener::bind(metrics::bind_addr(None)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (handle, mut scrapes) = metrics::channel();
    tokio::spawn(async move {
        while let Some(r) = scrapes.next().await {
            r.respond(snapshot());
        }
    });
    tokio::spawn(metrics::serve(listener, handle, std::future::pending()));

    let families = |open: bool| {
        let total = if open { "" } else { "_total" };
        json!([
            {"name": "waist_up", "type": "gauge",
             "samples": [["waist_up", {"router": "r1"}, 1.0]]},
            {"name": format!("waist_frames_received{total}"), "type": "counter",
             "samples": [["waist_frames_received_total", {}, 12.0]]},
            {"name": format!("waist_frames_dropped{total}"), "type": "counter",
             "samples": [["waist_frames_dropped_total", {"reason": "no_route"}, 2.0],
                         ["waist_frames_dropped_total", {"reason": "ttl_expired"}, 1.0]]},
            {"name": format!("waist_link_rx_bytes{total}"), "type": "counter",
             "samples": [["waist_link_rx_bytes_total", {"link": "r\"2\\"}, 1500.0]]},
            {"name": "waist_route", "type": "gauge",
             "samples": [["waist_route", {"prefix": "10.3.0.0/16", "source": "dv"}, 2.0]]},
        ])
    };

    // curl's page: the classic format, labelled so. (The classic parser names a counter
    // family as its TYPE line does.)
    let (kind, page) = get(addr, None).await;
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    let mut classic = parse(python, "classic", &page);
    // prometheus_client keeps the classic family name but strips `_total` from it; accept
    // either spelling, the type and samples are what matter.
    for f in classic.as_array_mut().unwrap() {
        if f["type"] == "counter" && !f["name"].as_str().unwrap().ends_with("_total") {
            let n = format!("{}_total", f["name"].as_str().unwrap());
            f["name"] = Value::String(n);
        }
    }
    assert_eq!(classic, families(false), "{page}");

    // Prometheus's page: OpenMetrics, labelled so, read by the strict OpenMetrics parser.
    let prometheus_accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (kind, page) = get(addr, Some(prometheus_accept)).await;
    assert_eq!(
        kind,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert_eq!(
        parse(python, "openmetrics", &page),
        families(true),
        "{page}"
    );
}
