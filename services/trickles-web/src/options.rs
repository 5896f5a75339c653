//! The command-line options trickles-get and trickles-proxy share: servers named by
//! address ([`ServerAddr`]), the first hop through a network of waist routers ([`Hop`]),
//! and the user-space emulation spec ([`parse_emulation`]).

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use anyhow::Context as _;
use netio::config::EmulationConfig;

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

/// The first-hop options trickles-get and trickles-proxy share: how to reach the server
/// through a network of waist routers instead of directly.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct Hop {
    /// Send every datagram to this UDP address (a waist router link's `local`) instead of
    /// to the server's: the server address becomes the inner (IP-level) one, and the
    /// routers deliver to it (one address; replicas sharing it are picked by the network).
    #[arg(long, value_name = "UDPADDR")]
    pub via: Option<SocketAddr>,
    /// The inner source address (default: the local socket's IP).
    #[arg(long, value_name = "IP")]
    pub src: Option<IpAddr>,
    /// Bind the local UDP socket here (a router link's `peer` names it; default: any
    /// port).
    #[arg(long, value_name = "UDPADDR")]
    pub bind: Option<SocketAddr>,
}

impl Hop {
    /// Checks the combination: with `--via` there is one inner server address (an
    /// anycast address: the routers pick the replica), so several servers or `--spray`
    /// are refused with a message saying why. `servers` counts the servers named.
    ///
    /// # Errors
    ///
    /// `--via` with more than one server or with `--spray`.
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
        Ok(())
    }

    /// The link to `replicas` (sent to directly) or, with `--via`, to inner server
    /// `inner` through the first hop; [`Hop::check`] first.
    pub fn link_config(&self, replicas: Vec<SocketAddr>, inner: IpAddr) -> LinkConfig {
        let mut cfg = match self.via {
            Some(via) => LinkConfig {
                server: Some(inner),
                ..LinkConfig::new(vec![via])
            },
            None => LinkConfig::new(replicas),
        };
        cfg.source = self.src;
        cfg.bind = self.bind;
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(cfg.replicas, vec![hop.via.unwrap()]);
        assert_eq!(cfg.server, Some("10.2.0.80".parse().unwrap()));
        assert_eq!((cfg.source, cfg.bind), (hop.src, hop.bind));
    }
}
