//! The command-line options trickles-get and trickles-proxy share: servers named by
//! address ([`ServerAddr`]), the first hop through a network of waist routers ([`Hop`],
//! [`Via`]: a link in the one notation, `udp:LOCAL=PEER`), and the user-space emulation
//! spec ([`parse_emulation`]), and durations in seconds ([`parse_secs`]).

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use anyhow::Context as _;
use netio::config::EmulationConfig;
use netio::link::LinkSpec;

use crate::udp::{LinkConfig, PATH_MTU};

/// A server named on the command line: an IP address, with the UDP port it listens on
/// when the client sends to it directly (`127.0.0.1:7700`, `[::1]:7700`), or the bare
/// inner address behind a router (`10.2.0.80`, `fd00::80`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerAddr {
    /// The server's IP address.
    pub ip: IpAddr,
    /// Its UDP port, if given.
    pub port: Option<u16>,
}

impl ServerAddr {
    /// The UDP address to send to directly, or an error naming `option` when the port is
    /// missing.
    pub fn udp(&self, option: &str) -> anyhow::Result<SocketAddr> {
        match self.port {
            Some(port) => Ok(SocketAddr::new(self.ip, port)),
            None => anyhow::bail!(
                "{option} {}: needs a port (the server's UDP address) unless --via is given",
                self.ip
            ),
        }
    }
}

impl FromStr for ServerAddr {
    type Err = String;

    /// `IP:PORT`, `[IPv6]:PORT`, `IP` or `[IPv6]`.
    fn from_str(s: &str) -> Result<ServerAddr, String> {
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(ServerAddr {
                ip: a.ip(),
                port: Some(a.port()),
            });
        }
        let bare = s
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(s);
        bare.parse()
            .map(|ip| ServerAddr { ip, port: None })
            .map_err(|_| format!("{s:?}: expected IP, IP:PORT or [IPv6]:PORT"))
    }
}

impl std::fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(port) => SocketAddr::new(self.ip, port).fmt(f),
            None => self.ip.fmt(f),
        }
    }
}

/// The first hop of a client behind waist routers: the link `udp:LOCAL=PEER` ([`LinkSpec`],
/// the notation of every link) from the client's socket `LOCAL` (the router link's
/// `peer`) to the router link's `local` address `PEER`. The older spelling, the router's
/// address alone (`--via PEER`, with `--bind LOCAL` or any local port), is an alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Via {
    /// The client's own socket, when given (`udp:LOCAL=PEER`).
    pub local: Option<SocketAddr>,
    /// Where every datagram goes: the router link's `local` address.
    pub peer: SocketAddr,
}

impl FromStr for Via {
    type Err = String;

    /// `udp:LOCAL=PEER`, or `PEER` alone (`IP:PORT`, `[IPv6]:PORT`).
    fn from_str(s: &str) -> Result<Via, String> {
        if let Ok(peer) = s.parse::<SocketAddr>() {
            return Ok(Via { local: None, peer });
        }
        match s.parse::<LinkSpec>() {
            Ok(LinkSpec::Udp {
                local,
                peer: Some(peer),
            }) => Ok(Via {
                local: Some(local),
                peer,
            }),
            Ok(LinkSpec::Udp { local, peer: None }) => Err(format!(
                "`{s}` names only this end: udp:{local}=PEER, PEER the router link's address"
            )),
            Ok(LinkSpec::Tun { .. }) => Err(format!(
                "`{s}`: the clients reach a router over UDP: udp:LOCAL=PEER"
            )),
            Err(e) if s.starts_with("udp:") => Err(e),
            Err(_) => Err(format!(
                "`{s}`: expected udp:LOCAL=PEER or the router link's UDP address"
            )),
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.local {
            Some(local) => write!(f, "udp:{local}={}", self.peer),
            None => self.peer.fmt(f),
        }
    }
}

/// The first-hop options trickles-get and trickles-proxy share: how to reach the server
/// through a network of waist routers instead of directly.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct Hop {
    /// The first hop, a link `udp:LOCAL=PEER`: every datagram goes from this socket LOCAL
    /// (the router link's `peer`) to PEER (the router link's `local`) instead of to the
    /// server, whose address becomes the inner (IP-level) one, and the routers deliver to
    /// it (one address; replicas sharing it are picked by the network). `--via PEER`
    /// alone (with `--bind LOCAL`, or any local port) is the older spelling. Default: the
    /// `WAIST_VIA` environment variable (a containerlab export's hosts set it).
    #[arg(long, value_name = "udp:LOCAL=PEER", env = "WAIST_VIA")]
    pub via: Option<Via>,
    /// The inner source address (default: the `WAIST_SRC` environment variable, else the
    /// local socket's IP).
    #[arg(long, value_name = "IP", env = "WAIST_SRC")]
    pub src: Option<IpAddr>,
    /// Bind the local UDP socket here (a router link's `peer` names it; default: any
    /// port). With `--via udp:LOCAL=PEER`, LOCAL says it.
    #[arg(long, value_name = "UDPADDR")]
    pub bind: Option<SocketAddr>,
}

impl Hop {
    /// Checks the combination: with `--via` there is one inner server address (an
    /// anycast address: the routers pick the replica), so several servers or `--spray`
    /// are refused with a message saying why, and the local socket is named once (by
    /// `udp:LOCAL=PEER` or by `--bind`). `servers` counts the servers named.
    ///
    /// # Errors
    ///
    /// `--via` with more than one server, with `--spray`, or `--via udp:LOCAL=PEER` with
    /// `--bind`.
    pub fn check(&self, servers: usize, spray: bool) -> anyhow::Result<()> {
        let Some(via) = self.via else { return Ok(()) };
        if servers > 1 {
            anyhow::bail!(
                "--via {via}: one inner server address only (replicas behind routers share \
                 one anycast address and the network picks among them); drop the extra --server"
            );
        }
        if spray {
            anyhow::bail!(
                "--via {via}: --spray needs several server addresses, and with --via there is \
                 one (the network picks the replica)"
            );
        }
        if let (Some(_), Some(bind)) = (via.local, self.bind) {
            anyhow::bail!(
                "--via {via} names the local socket already: drop --bind {bind} (or write \
                 --via {} --bind {bind})",
                via.peer
            );
        }
        Ok(())
    }

    /// The link to `replicas` (sent to directly) or, with `--via`, to inner server
    /// `inner` through the first hop; [`Hop::check`] first.
    pub fn link_config(&self, replicas: Vec<SocketAddr>, inner: IpAddr) -> LinkConfig {
        let mut cfg = match self.via {
            Some(via) => LinkConfig {
                server: Some(inner),
                ..LinkConfig::new(vec![via.peer])
            },
            None => LinkConfig::new(replicas),
        };
        cfg.source = self.src;
        cfg.bind = self.via.and_then(|v| v.local).or(self.bind);
        cfg
    }
}

/// Parses an emulation spec `key=value,…` with the keys of [`EmulationConfig`]
/// (`delay_ms`, `jitter_ms`, `loss`, `duplicate`, `rate_mbps`, `queue_ms`, `seed`), for
/// example `loss=0.05,delay_ms=5,jitter_ms=5`, and checks its ranges.
pub fn parse_emulation(spec: &str) -> anyhow::Result<EmulationConfig> {
    // The spec is the TOML table's lines joined by commas.
    let toml_text = spec.replace(',', "\n");
    let config: EmulationConfig = toml::from_str(&toml_text)
        .with_context(|| format!("bad emulation spec {spec:?} (want e.g. loss=0.05,delay_ms=5)"))?;
    config
        .model(usize::from(PATH_MTU))
        .map_err(|e| anyhow::anyhow!("bad emulation spec {spec:?}: {e}"))?;
    Ok(config)
}

/// Parses a duration in seconds, fractions allowed (`5`, `0.5`), as curl's
/// `--connect-timeout` does.
///
/// # Errors
///
/// Not a number, negative, not finite or absurdly long.
pub fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?}: expected seconds, e.g. 5 or 0.5"))?;
    std::time::Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{s:?}: expected a non-negative number of seconds"))
}

/// A duration as the options write it: `5 s`, `0.5 s`.
pub fn secs_text(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("5"), Ok(std::time::Duration::from_secs(5)));
        assert_eq!(
            parse_secs("0.25"),
            Ok(std::time::Duration::from_millis(250))
        );
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("inf").is_err());
        assert!(parse_secs("5s").is_err());
        assert_eq!(secs_text(std::time::Duration::from_millis(2500)), "2.5 s");
        assert_eq!(secs_text(std::time::Duration::from_secs(5)), "5 s");
    }

    #[test]
    fn emulation_specs() {
        let e = parse_emulation("loss=0.05,delay_ms=5,jitter_ms=3").unwrap();
        assert_eq!((e.loss, e.delay_ms, e.jitter_ms), (0.05, 5.0, 3.0));
        assert_eq!(parse_emulation("seed=7").unwrap().seed, Some(7));
        assert!(parse_emulation("loss=2").is_err());
        assert!(parse_emulation("lose=0.1").is_err());
        assert!(parse_emulation("loss").is_err());
    }

    #[test]
    fn server_addresses() {
        let a: ServerAddr = "127.0.0.1:7700".parse().unwrap();
        assert_eq!(
            a.udp("--server").unwrap(),
            "127.0.0.1:7700".parse().unwrap()
        );
        let a: ServerAddr = "10.2.0.80".parse().unwrap();
        assert_eq!((a.ip, a.port), ("10.2.0.80".parse().unwrap(), None));
        assert!(a.udp("--server").is_err());
        assert_eq!(a.to_string(), "10.2.0.80");
        let a: ServerAddr = "[fd00::80]".parse().unwrap();
        assert_eq!(a.ip, "fd00::80".parse::<IpAddr>().unwrap());
        assert_eq!("[::1]:9".parse::<ServerAddr>().unwrap().port, Some(9));
        assert!("host:80".parse::<ServerAddr>().is_err());
    }

    #[test]
    fn via_takes_one_inner_server() {
        let direct = Hop::default();
        assert!(direct.check(3, true).is_ok());
        let hop = Hop {
            via: Some("127.0.0.1:40001".parse().unwrap()),
            src: Some("10.1.0.10".parse().unwrap()),
            bind: Some("127.0.0.1:40002".parse().unwrap()),
        };
        assert!(hop.check(1, false).is_ok());
        let several = hop.check(2, false).unwrap_err().to_string();
        assert!(several.contains("one inner server address"), "{several}");
        assert!(
            hop.check(1, true)
                .unwrap_err()
                .to_string()
                .contains("--spray")
        );
        let cfg = hop.link_config(Vec::new(), "10.2.0.80".parse().unwrap());
        assert_eq!(cfg.replicas, vec![hop.via.unwrap().peer]);
        assert_eq!(cfg.server, Some("10.2.0.80".parse().unwrap()));
        assert_eq!((cfg.source, cfg.bind), (hop.src, hop.bind));
        // The one notation: udp:LOCAL=PEER says both sockets.
        let link = Hop {
            via: Some("udp:127.0.0.1:40002=127.0.0.1:40001".parse().unwrap()),
            bind: None,
            ..hop
        };
        assert!(link.check(1, false).is_ok());
        let cfg = link.link_config(Vec::new(), "10.2.0.80".parse().unwrap());
        assert_eq!(cfg.replicas, vec![hop.via.unwrap().peer]);
        assert_eq!(cfg.bind, hop.bind);
        let twice = Hop {
            bind: hop.bind,
            ..link
        };
        let e = twice.check(1, false).unwrap_err().to_string();
        assert!(e.contains("--bind"), "{e}");
    }

    #[test]
    fn via_spellings() {
        let v: Via = "udp:127.0.0.1:40002=127.0.0.1:40001".parse().unwrap();
        assert_eq!(v.local, Some("127.0.0.1:40002".parse().unwrap()));
        assert_eq!(v.peer, "127.0.0.1:40001".parse().unwrap());
        assert_eq!(v.to_string(), "udp:127.0.0.1:40002=127.0.0.1:40001");
        let v: Via = "[::1]:9".parse().unwrap();
        assert_eq!((v.local, v.to_string().as_str()), (None, "[::1]:9"));
        for (bad, why) in [
            ("udp:127.0.0.1:40002", "only this end"),
            ("tun:tw0", "over UDP"),
            ("udp:127.0.0.1:1=nowhere", "peer `nowhere`"),
            ("router:1", "expected udp:LOCAL=PEER"),
        ] {
            let e = bad.parse::<Via>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
