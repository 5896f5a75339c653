//! The one notation for a link, in config files and on every command line:
//!
//! ```text
//!  udp:LOCAL=PEER      IP-in-UDP to one peer     udp:127.0.0.1:40001=127.0.0.1:40002
//!  udp:LOCAL           IP-in-UDP to many peers   udp:0.0.0.0:8000   udp:[::1]:8000
//!  tun:NAME[,CIDR…]    a TUN device              tun:wr1,10.1.0.1/24,fd00::1/64
//! ```
//!
//! A config's `[[link]]` may also spell it out (`kind`, `local`, `peer`, `device`,
//! `addresses`); both read into a [`LinkSpec`].
//!
//! ```
//! use netio::link::LinkSpec;
//! let s: LinkSpec = "udp:127.0.0.1:40001=127.0.0.1:40002".parse().unwrap();
//! assert_eq!(s.to_string(), "udp:127.0.0.1:40001=127.0.0.1:40002");
//! assert!("tun:wr1,10.1.0.1/24".parse::<LinkSpec>().is_ok());
//! assert!("carrier-pigeon:1".parse::<LinkSpec>().is_err());
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use super::tun::parse_cidr;
use crate::config::{ConfigError, LinkConfig, LinkKind, Source};

/// Where a link's frames go. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkSpec {
    /// IP-in-UDP from `local`: to `peer` only (connected), or to many peers.
    Udp {
        /// The address bound.
        local: SocketAddr,
        /// The one peer, if the link has one.
        peer: Option<SocketAddr>,
    },
    /// A TUN device.
    Tun {
        /// The device's name (created if missing).
        device: String,
        /// Addresses with prefix length to give it.
        addresses: Vec<(IpAddr, u8)>,
    },
}

impl LinkSpec {
    /// UDP or TUN.
    pub fn kind(&self) -> LinkKind {
        match self {
            LinkSpec::Udp { .. } => LinkKind::Udp,
            LinkSpec::Tun { .. } => LinkKind::Tun,
        }
    }
}

fn socket(s: &str, what: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|e| format!("{what} `{s}` is not a socket address: {e}"))
}

impl FromStr for LinkSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<LinkSpec, String> {
        if let Some(rest) = s.strip_prefix("udp:") {
            return Ok(match rest.split_once('=') {
                Some((l, p)) => LinkSpec::Udp {
                    local: socket(l, "local")?,
                    peer: Some(socket(p, "peer")?),
                },
                None => LinkSpec::Udp {
                    local: socket(rest, "local")?,
                    peer: None,
                },
            });
        }
        if let Some(rest) = s.strip_prefix("tun:") {
            let mut parts = rest.split(',');
            let device = parts.next().unwrap_or_default().trim();
            if device.is_empty() || device.len() > 15 {
                return Err(format!(
                    "`{s}`: a TUN device name of 1 to 15 characters after `tun:`"
                ));
            }
            let addresses = parts.map(parse_cidr).collect::<Result<Vec<_>, _>>()?;
            return Ok(LinkSpec::Tun {
                device: device.to_string(),
                addresses,
            });
        }
        Err(format!(
            "`{s}`: expected udp:LOCAL=PEER, udp:LOCAL or tun:NAME[,CIDR…]"
        ))
    }
}

impl fmt::Display for LinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkSpec::Udp { local, peer: None } => write!(f, "udp:{local}"),
            LinkSpec::Udp {
                local,
                peer: Some(p),
            } => write!(f, "udp:{local}={p}"),
            LinkSpec::Tun { device, addresses } => {
                write!(f, "tun:{device}")?;
                for (a, l) in addresses {
                    write!(f, ",{a}/{l}")?;
                }
                Ok(())
            }
        }
    }
}

// A `[[link]]` section read into the one notation (here, so config.rs need not know links).
impl LinkConfig {
    /// Where the link's frames go, from `on` or the spelt-out fields.
    ///
    /// # Errors
    ///
    /// A located [`ConfigError`]: a bad address, both or neither notation, a missing field.
    pub fn spec(&self, source: &Source) -> Result<LinkSpec, ConfigError> {
        let addr = |v: &toml::Spanned<String>| -> Result<std::net::SocketAddr, ConfigError> {
            v.get_ref()
                .parse()
                .map_err(|e| source.error_for(v, format!("not a socket address: {e}")))
        };
        let spec = match (&self.on, &self.kind) {
            (Some(on), None) => {
                let spelt = [&self.local, &self.peer, &self.device];
                if spelt.iter().any(|f| f.is_some()) || !self.addresses.is_empty() {
                    return Err(source.error_for(
                        on,
                        "`on` says it all: no `local`, `peer`, `device` or `addresses` beside it",
                    ));
                }
                on.get_ref()
                    .parse::<LinkSpec>()
                    .map_err(|m| source.error_for(on, m))?
            }
            (Some(on), Some(_)) => {
                return Err(source.error_for(on, "give `on` or `kind`, not both"));
            }
            (None, None) => {
                return Err(source.error_for(
                    &self.name,
                    "a link needs `on` (udp:LOCAL=PEER, udp:LOCAL, tun:NAME[,CIDR…]) or `kind`",
                ));
            }
            (None, Some(kind)) => match kind.get_ref() {
                LinkKind::Udp => {
                    let Some(l) = &self.local else {
                        return Err(source.error_for(kind, "a udp link needs `local`"));
                    };
                    LinkSpec::Udp {
                        local: addr(l)?,
                        peer: self.peer.as_ref().map(addr).transpose()?,
                    }
                }
                LinkKind::Tun => {
                    let Some(dev) = &self.device else {
                        return Err(source.error_for(kind, "a tun link needs `device`"));
                    };
                    let mut addresses = Vec::with_capacity(self.addresses.len());
                    for a in &self.addresses {
                        addresses
                            .push(parse_cidr(a.get_ref()).map_err(|m| source.error_for(a, m))?);
                    }
                    LinkSpec::Tun {
                        device: dev.get_ref().clone(),
                        addresses,
                    }
                }
            },
        };
        if let (Some(o), LinkSpec::Udp { .. }) = (&self.offload, &spec) {
            return Err(source.error_for(o, "`offload` is for tun links"));
        }
        Ok(spec)
    }

    /// Whether this is a TUN link (as far as the config says; `false` if it says nothing
    /// readable).
    pub fn is_tun(&self) -> bool {
        match (&self.on, &self.kind) {
            (Some(on), _) => on.get_ref().starts_with("tun:"),
            (None, Some(k)) => *k.get_ref() == LinkKind::Tun,
            (None, None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in [
            "udp:127.0.0.1:40001=127.0.0.1:40002",
            "udp:0.0.0.0:8000",
            "udp:[::1]:8000=[::1]:9000",
            "tun:wr1",
            "tun:wr1,10.1.0.1/24,fd00::1/64",
        ] {
            let spec: LinkSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = "udp:127.0.0.1:1=nowhere".parse::<LinkSpec>().unwrap_err();
        assert!(e.starts_with("peer `nowhere`"), "{e}");
        let e = "tun:".parse::<LinkSpec>().unwrap_err();
        assert!(e.contains("device name"), "{e}");
        let e = "tun:x,10.0.0.1/40".parse::<LinkSpec>().unwrap_err();
        assert!(e.contains("above 32"), "{e}");
        assert!("127.0.0.1:1".parse::<LinkSpec>().is_err());
    }
}
