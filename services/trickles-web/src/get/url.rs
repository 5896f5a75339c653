//! `trickles://HOST[:PORT]/path` and the GET request head it becomes.

use anyhow::{Context as _, bail};

/// A parsed `trickles://HOST:PORT/path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// `HOST:PORT` as written (also the `Host` header).
    pub authority: String,
    /// The path (and query), starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses `trickles://HOST[:PORT]/path`; the port may be left out when `port_needed`
    /// is false (the host is then an inner address behind a router).
    ///
    /// # Errors
    ///
    /// Another scheme, no host, a missing port when needed, unencoded spaces or controls.
    pub fn parse(s: &str, port_needed: bool) -> anyhow::Result<Url> {
        let rest = s
            .strip_prefix("trickles://")
            .with_context(|| format!("{s:?}: the URL must start with trickles://"))?;
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        };
        if authority.is_empty() || (port_needed && !authority.contains(':')) {
            bail!("{s:?}: the URL needs HOST:PORT (the server's UDP address)");
        }
        if !path.bytes().all(|b| b.is_ascii_graphic()) || authority.contains('@') {
            bail!("{s:?}: spaces and control characters must be percent-encoded");
        }
        Ok(Url {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }

    /// The host part of the authority (brackets of an IPv6 literal removed), without
    /// the port.
    pub fn host(&self) -> &str {
        let a = self.authority.as_str();
        if let Some(rest) = a.strip_prefix('[') {
            return rest.split(']').next().unwrap_or_default();
        }
        match a.rsplit_once(':') {
            Some((host, _)) => host,
            None => a,
        }
    }
}

impl std::str::FromStr for Url {
    type Err = anyhow::Error;

    /// [`Url::parse`] with the port needed.
    fn from_str(s: &str) -> anyhow::Result<Url> {
        Url::parse(s, true)
    }
}

/// The GET request head for `url`, optionally for bytes `first..=last`.
pub fn request_head(url: &Url, range: Option<(u64, u64)>) -> Vec<u8> {
    trickles::app::http::get_request(&url.authority, &url.path, range, false)
}
