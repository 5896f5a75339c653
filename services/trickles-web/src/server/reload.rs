//! SIGHUP: the options read again (the config file and the command line, as at start)
//! and applied to the running server.
//!
//! ```text
//!  SIGHUP ─► Reloads ─► read the options (every check of a start) ─► error: one line,
//!    │                                                                running ones kept
//!    ├─ the key file read (its secret, the rotation interval) ─► error: nothing changed
//!    ├─ root: FileStore::set_root (the TCP fallback's clone follows) ─► error: nothing changed
//!    ├─ keys changed: the rotation restarted from the new schedule, the user-continuation
//!    │  key replaced (connections under the old secret end, as at a restart); unchanged:
//!    │  untouched, mid-period rotation state kept
//!    ├─ address served: the new one
//!    └─ listen, tcp, metrics, pcap (its ring), queue, mtu: bound at start; a change is refused with
//!       a warning (restart for it)
//! ```
//!
//! One line says what changed: `reloaded: root /srv/new, keys changed`.

use tracing::{error, info, warn};

use super::{Options, Web};
use crate::keys::Keys;
use netio::shutdown::Reloads;
use trickles::conn::Addr;

/// Reads the options again.
type Read = Box<dyn FnMut() -> anyhow::Result<Options> + Send>;

/// Where a [`Web`] takes reloads from ([`Web::reload_with`]).
pub struct Reload {
    reloads: Reloads,
    read: Read,
}

impl std::fmt::Debug for Reload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reload")
            .field("reloads", &self.reloads)
            .finish_non_exhaustive()
    }
}

/// Returns when a reload is requested; never without reloads.
pub(super) async fn requested(r: &mut Option<Reload>) {
    match r {
        Some(r) => r.reloads.next().await,
        None => std::future::pending().await,
    }
}

/// Whether two key sets hold the same secret.
fn same_secret(a: &Keys, b: &Keys) -> bool {
    a.schedule().mac_key(0) == b.schedule().mac_key(0) && a.ucont_key() == b.ucont_key()
}

impl Web {
    /// Reloads on each request from `reloads` (SIGHUP: [`netio::shutdown::on_reload`]),
    /// reading the options again with `read` (the daemon's [`crate::daemon::options`]).
    pub fn reload_with(
        &mut self,
        reloads: Reloads,
        read: impl FnMut() -> anyhow::Result<Options> + Send + 'static,
    ) {
        self.reload = Some(Reload {
            reloads,
            read: Box::new(read),
        });
    }

    /// Handles a reload request: applies the new options, or logs why not and keeps
    /// the running ones.
    pub(super) fn reload(&mut self) {
        let Some(mut r) = self.reload.take() else {
            return;
        };
        match (r.read)().and_then(|new| self.apply(new)) {
            Ok(line) => info!("reloaded: {line}"),
            Err(e) => error!("reload failed, keeping the running config: {e:#}"),
        }
        self.reload = Some(r);
    }

    /// Applies `new`: the summary line.
    fn apply(&mut self, new: Options) -> anyhow::Result<String> {
        let old = &self.opts;
        let fixed = [
            ("listen", old.listen != new.listen),
            ("tcp", old.tcp != new.tcp),
            ("metrics", old.metrics != new.metrics),
            (
                "pcap",
                old.pcap != new.pcap || old.pcap_ring != new.pcap_ring,
            ),
            ("queue", old.queue != new.queue),
            ("mtu", old.mtu != new.mtu),
        ];
        for (name, _) in fixed.iter().filter(|(_, changed)| *changed) {
            warn!(
                "`{name}` changed: it is bound at start, restart for it (the running one is kept)"
            );
        }
        // What can fail, before anything changes.
        let keys = Keys::load_or_create(&new.keys, new.rotate)?;
        let new_secret = !same_secret(&self.keys, &keys);
        let new_interval = old.rotate != new.rotate;
        let root_changed = self.service.app().store().set_root(&new.root)?;
        let mut words = Vec::new();
        if root_changed {
            words.push(format!(
                "root {}",
                self.service.app().store().root().display()
            ));
        }
        if new_secret || new_interval {
            let (_, now) = self.now();
            self.service.rotate_with(Some(keys.rotation(now)));
            self.service.app_mut().set_key(&keys.ucont_key());
            self.keys = keys;
            let mut what = Vec::new();
            if new_secret {
                what.push("a new secret".to_string());
            }
            if new_interval {
                what.push(format!("rotation every {} s", new.rotate.as_secs()));
            }
            words.push(format!(
                "keys changed: {} (connections under the old keys end)",
                what.join(", ")
            ));
        }
        if old.address != new.address {
            self.service.serve_only(new.address.map(Addr::from));
            words.push(match new.address {
                Some(a) => format!("address {a}"),
                None => "any address".into(),
            });
        }
        // The options bound at start stay as they run.
        self.opts = Options {
            listen: self.opts.listen.clone(),
            tcp: self.opts.tcp,
            metrics: self.opts.metrics,
            pcap: self.opts.pcap.clone(),
            pcap_ring: self.opts.pcap_ring,
            queue: self.opts.queue,
            mtu: self.opts.mtu,
            ..new
        };
        Ok(if words.is_empty() {
            "no change".into()
        } else {
            words.join(", ")
        })
    }
}
