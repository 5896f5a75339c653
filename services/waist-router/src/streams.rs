//! `[streams]` and `[[stream]]`: the router as the network-processor paper's overlay node.
//! Stream datagrams for the router's own addresses (UDP 7400, control 7401) run through
//! the handlers deployed for their stream, admitted by measured headroom.
//!
//! ```toml
//! [streams]                        # absent: such datagrams are delivered like any other
//! rate_pps = 100000                # packet rate the router is provisioned for
//! share_percent = 50               # of each packet's budget (10⁹/rate ns) for handlers
//! overrun_messages = 16            # messages over the headroom before a move to the host
//! admission = true                 # false: admit every deployment on the router
//! through = false                  # true: also take deployed streams passing through
//! host = "10.9.0.10"               # the `waist stream host` process for streams not admitted
//! control_from = ["10.1.0.10"]     # who may send control envelopes (absent: anyone)
//! presets = ["to 10.3.0.10:7400 | mirror"]   # what a Select control message chooses among
//!
//! [[stream]]                       # deployed at start (then changed by control messages)
//! id = 7
//! spec = "to 10.3.0.10:7400 10.4.0.10:7400 | fields flight | multicast 0=status==2 1=all"
//! ```
//!
//! The spec grammar is `stream_handlers::spec`'s; an error in it names the file, the line
//! and the key.

use std::net::IpAddr;

use netio::config::{ConfigError, Source};
use serde::{Deserialize, Serialize};
use stream_handlers::node::{Admission, NodeConfig};
use stream_handlers::spec::Spec;
use toml::Spanned;
use waist_node::StreamsConfig;

/// `[streams]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StreamsSection {
    /// Packets per second the router is provisioned for (default 100 000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_pps: Option<Spanned<u32>>,
    /// Percent of each packet's budget handlers may use (default 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_percent: Option<Spanned<u8>>,
    /// Messages in a row over the headroom before a stream moves to the host (default 16).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overrun_messages: Option<Spanned<u32>>,
    /// Admission by headroom (default true); false admits everything here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<bool>,
    /// Take streams passing through too (default false): a datagram to another address's
    /// port 7400 carrying a stream deployed here runs through its handlers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through: Option<bool>,
    /// The host process's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Spanned<String>>,
    /// Who may send control envelopes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_from: Option<Vec<Spanned<String>>>,
    /// Deployments `Select` chooses among, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub presets: Vec<Spanned<String>>,
}

/// `[[stream]]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSection {
    /// The stream id (the RUDP header's).
    pub id: Spanned<u16>,
    /// Its deployment, in the spec grammar.
    pub spec: Spanned<String>,
}

fn addr(source: &Source, s: &Spanned<String>) -> Result<IpAddr, ConfigError> {
    s.get_ref()
        .parse()
        .map_err(|e| source.error_for(s, format!("not an IP address: {e}")))
}

fn spec(source: &Source, s: &Spanned<String>) -> Result<Spec, ConfigError> {
    s.get_ref()
        .parse()
        .map_err(|e: stream_handlers::spec::SpecError| source.error_for(s, e.to_string()))
}

/// The streams' config, checked; `None` without a `[streams]` section.
///
/// # Errors
///
/// A located error: a bad value, a bad spec, a stream declared twice, `[[stream]]`
/// without `[streams]`.
pub fn plan(
    source: &Source,
    section: Option<&Spanned<StreamsSection>>,
    streams: &[StreamSection],
) -> Result<Option<StreamsConfig>, ConfigError> {
    let Some(spanned) = section else {
        return match streams.first() {
            Some(s) => Err(source.error_for(&s.id, "a [[stream]] needs a [streams] section")),
            None => Ok(None),
        };
    };
    let s = spanned.get_ref();
    let mut a = Admission::default();
    if let Some(r) = &s.rate_pps {
        if *r.get_ref() == 0 {
            return Err(source.error_for(r, "a packet rate of at least 1 per second"));
        }
        a.rate_pps = *r.get_ref();
    }
    if let Some(p) = &s.share_percent {
        if !(1..=100).contains(p.get_ref()) {
            return Err(source.error_for(p, "a share from 1 to 100 percent"));
        }
        a.share_percent = *p.get_ref();
    }
    if let Some(o) = &s.overrun_messages {
        if *o.get_ref() == 0 {
            return Err(source.error_for(o, "at least 1 message"));
        }
        a.overrun_messages = *o.get_ref();
    }
    let mut node = NodeConfig {
        admission: s.admission.unwrap_or(true).then_some(a),
        host: s.host.as_ref().map(|h| addr(source, h)).transpose()?,
        control_from: s
            .control_from
            .as_ref()
            .map(|l| {
                l.iter()
                    .map(|x| addr(source, x))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?,
        ..NodeConfig::default()
    };
    node.presets = s
        .presets
        .iter()
        .map(|p| spec(source, p))
        .collect::<Result<_, _>>()?;
    let mut deploy: Vec<(u16, Spec)> = Vec::new();
    for st in streams {
        let id = *st.id.get_ref();
        if deploy.iter().any(|d| d.0 == id) {
            return Err(source.error_for(&st.id, format!("stream {id} declared twice")));
        }
        deploy.push((id, spec(source, &st.spec)?));
    }
    if deploy.len() > node.max_streams {
        return Err(source.error_at(
            None,
            format!("more than {} [[stream]] sections", node.max_streams),
        ));
    }
    Ok(Some(StreamsConfig {
        node,
        deploy,
        through: s.through.unwrap_or(false),
    }))
}

/// The config of a stream host (`waist stream host`): a node at `addr` with one link
/// (`link`, in the one link notation, e.g. `udp:LOCAL=PEER`) to its router, everything
/// routed over it, and stream handlers that admit every deployment. The router hands it
/// the streams it has no headroom for; it runs them on the same code and sends their
/// output back through the router.
pub fn host_config(name: &str, addr: IpAddr, link: &str) -> String {
    let default = if addr.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
    format!(
        "[node]\nname = {name:?}\naddresses = [\"{addr}\"]\n\n[streams]\nadmission = false\n\n\
         [[link]]\nname = \"router\"\non = {link:?}\n\n[[route]]\nprefix = \"{default}\"\nlink = \"router\"\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        streams: Option<Spanned<StreamsSection>>,
        #[serde(default)]
        stream: Vec<StreamSection>,
    }

    fn plan_of(text: &str) -> Result<Option<StreamsConfig>, ConfigError> {
        let s = Source::new("r1.toml", text);
        let f: File = s.parse()?;
        plan(&s, f.streams.as_ref(), &f.stream)
    }

    #[test]
    fn a_section_builds_the_stream_node_config() {
        let c = plan_of(
            r#"
[streams]
rate_pps = 200000
host = "10.9.0.10"
control_from = ["10.1.0.10"]

[[stream]]
id = 7
spec = "to 10.3.0.10:7400 10.4.0.10:7400 | mirror"
"#,
        );
        let c = c.ok().flatten().expect("a streams config");
        assert_eq!(c.node.admission.map(|a| a.rate_pps), Some(200_000));
        assert_eq!(c.node.host, "10.9.0.10".parse().ok());
        assert_eq!(c.deploy.len(), 1);
        assert_eq!(plan_of("").ok().flatten(), None);
    }

    #[test]
    fn a_host_config_is_a_router_config_that_admits_everything() {
        let text = host_config(
            "sh",
            "10.9.0.10".parse().expect("a"),
            "udp:127.0.0.1:1=127.0.0.1:2",
        );
        let s = Source::new("host.toml", text);
        let f: crate::config::RouterFile = s.parse().expect("parses");
        let p = crate::config::plan(&s, &f).expect("plans");
        let streams = p.node.streams.expect("streams on");
        assert_eq!(streams.node.admission, None);
        assert_eq!(p.node.routes.len(), 1);
    }

    #[test]
    fn errors_name_line_and_key() {
        for (text, line, what) in [
            ("[streams]\nrate_pps = 0\n", 2, "packet rate"),
            ("[streams]\nhost = \"nowhere\"\n", 2, "not an IP address"),
            (
                "[streams]\n[[stream]]\nid = 1\nspec = \"to 1.2.3.4:1 | zap\"\n",
                4,
                "unknown clause",
            ),
            (
                "[[stream]]\nid = 1\nspec = \"to 1.2.3.4:1\"\n",
                2,
                "needs a [streams] section",
            ),
            (
                "[streams]\n[[stream]]\nid = 1\nspec = \"to 1.2.3.4:1\"\n[[stream]]\nid = 1\nspec = \"to 1.2.3.4:1\"\n",
                6,
                "declared twice",
            ),
        ] {
            let e = plan_of(text).expect_err(text).to_string();
            assert!(e.contains(&format!("r1.toml:{line}")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
