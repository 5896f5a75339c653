//! Changing a daemon's links while it runs (a reload on SIGHUP).
//!
//! ```text
//!  new [[link]] sections ─► Links::options_of (checked, nothing opened)
//!  Links::take_all ─► Vec<Link> ─► keep / drop / Links::open_config / Link::set_emulation
//!                                  / Link::carry_on ─► Links::set_all (renumbered,
//!                                  capture started on the new ones)
//! ```
//!
//! A link kept is the same socket or device, with its queue, counters, liveness and
//! capture: not a datagram of it is lost. A link dropped closes its socket (flush its
//! capture first: [`Link::close_capture`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Link, Links};
use crate::config::{LinkConfig, Source};
use crate::emulate::Emulator;

impl Links {
    /// Opens the link of section `c` (read from `source`), as [`Links::open`] opens each;
    /// emulated time counts from `origin`. Not yet one of the links: hand it to
    /// [`Links::set_all`].
    ///
    /// # Errors
    ///
    /// As [`Links::options_of`]; an address that cannot be bound or a TUN device that
    /// cannot be made names the link.
    pub async fn open_config(
        c: &LinkConfig,
        source: &Source,
        origin: Instant,
    ) -> anyhow::Result<Link> {
        let (spec, options) = Self::options_of(c, source)?;
        Link::open(c.name.get_ref().clone(), &spec, &options, origin).await
    }

    /// Takes every link out, leaving none: interface numbers end here, and link events not
    /// yet polled are dropped (poll them first). Put links back with
    /// [`set_all`](Links::set_all).
    pub fn take_all(&mut self) -> Vec<Link> {
        self.events.clear();
        self.next = 0;
        std::mem::take(&mut self.links)
    }

    /// Makes `links` the links, link `i` the core's interface `i`; while capturing
    /// ([`Links::capture`]), each that has no capture gets one.
    ///
    /// # Errors
    ///
    /// A second link of the same name (nothing changed then), a capture file that cannot
    /// be created (the links are set, that one not captured).
    pub fn set_all(&mut self, links: Vec<Link>) -> anyhow::Result<()> {
        for (i, l) in links.iter().enumerate() {
            if links.iter().take(i).any(|o| o.name == l.name) {
                anyhow::bail!("a second link named `{}`", l.name);
            }
        }
        self.links = links;
        self.events.clear();
        self.next = 0;
        let mut failed = Ok(());
        if let Some((dir, prefix, ring)) = &self.capturing {
            for link in self.links.iter_mut().filter(|l| l.pcap.is_none()) {
                let path = dir.join(format!("{prefix}-{}.pcap", link.name));
                match crate::pcap::PcapWriter::create_with(&path, *ring) {
                    Ok(p) => link.pcap = Some(p),
                    Err(e) => failed = Err(e),
                }
            }
        }
        failed
    }
}

/// What of a link outlives its socket when it is reopened with new settings: its counters
/// and its capture ([`Link::close_carrying`], [`Link::carry_on`]).
#[derive(Debug)]
pub struct Carried {
    counters: super::LinkCounters,
    pcap: Option<crate::pcap::PcapWriter>,
}

impl Link {
    /// Replaces the link's emulation (`None`: none), as
    /// [`LinkOptions::emulation`](super::LinkOptions::emulation) gives it, time counted
    /// from `origin`; the frames the old one held are queued to leave at the next flush, so
    /// none is lost.
    pub fn set_emulation(&mut self, emulation: Option<(netsim::LinkConfig, u64)>, origin: Instant) {
        if let Some(mut old) = self.emulator.take() {
            let end = Instant::now() + Duration::from_secs(365 * 86_400);
            while let Some(f) = old.pop_due(end) {
                self.enqueue(None, &f);
            }
        }
        self.emulator = emulation.map(|(m, seed)| Emulator::new(m, seed, origin));
    }

    /// Sets the link's routing cost (as reported by [`Link::cost`]).
    pub fn set_cost(&mut self, cost: Option<u16>) {
        self.cost = cost;
    }

    /// Closes the link (its socket or device), keeping what carries over to the link that
    /// replaces it when it is reopened with new settings: [`Link::carry_on`].
    pub fn close_carrying(self) -> Carried {
        Carried {
            counters: self.counters,
            pcap: self.pcap,
        }
    }

    /// Carries on from a link closed with [`Link::close_carrying`] (the same link, reopened
    /// with new settings): its counters and its capture continue here.
    pub fn carry_on(&mut self, old: Carried) {
        self.counters = old.counters;
        if old.pcap.is_some() {
            self.pcap = old.pcap;
        }
    }

    /// Flushes and closes the link's capture: its file and the packets it holds; `None`
    /// if it had none. Call before dropping a link that is gone.
    pub fn close_capture(&mut self) -> Option<(PathBuf, u64)> {
        let mut p = self.pcap.take()?;
        if let Err(e) = p.flush() {
            tracing::warn!(link = %self.name, "pcap flush failed: {e}");
        }
        Some((p.path().to_path_buf(), p.packets()))
    }
}
