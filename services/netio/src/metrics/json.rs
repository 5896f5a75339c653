//! The JSON view of a daemon that gives no status of its own: its samples, one object
//! each, named as the classic text format exposes them.

use serde_json::{Map, Value, json};

use super::render::metric_name;
use super::{Kind, Snapshot};

/// `{"samples": [{"name", "type", "help", "labels": {…}, "value"}, …]}`: every sample of
/// `snapshot` in order, a counter named with its `_total` suffix (as it is exposed) and
/// `type` `"counter"` or `"gauge"`. A value that is not finite is `null`.
///
/// ```
/// use netio::metrics::{Sample, samples_json};
///
/// let v = samples_json(&vec![Sample::counter("waist_frames_forwarded", "h", 3.0).with_label("link", "a")]);
/// assert_eq!(v["samples"][0]["name"], "waist_frames_forwarded_total");
/// assert_eq!(v["samples"][0]["labels"]["link"], "a");
/// assert_eq!(v["samples"][0]["value"], 3.0);
/// ```
pub fn samples_json(snapshot: &Snapshot) -> Value {
    let samples: Vec<Value> = snapshot
        .iter()
        .map(|s| {
            let mut name = metric_name(&s.name);
            let kind = match s.kind {
                Kind::Counter => {
                    if !name.ends_with("_total") {
                        name.push_str("_total");
                    }
                    "counter"
                }
                Kind::Gauge => "gauge",
            };
            let labels: Map<String, Value> = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({
                "name": name,
                "type": kind,
                "help": s.help,
                "labels": labels,
                "value": s.value,
            })
        })
        .collect();
    json!({ "samples": samples })
}
