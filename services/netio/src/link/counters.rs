//! What a link counts, and its counters as metrics samples.

use super::Link;
use super::batch::Fill;
use super::tx::Sent;

/// What a link counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Frames the kernel handed over: datagrams (each of a GRO run counts) or TUN packets
    /// (each of a split super-packet counts). Equals the frames handed on to the core plus
    /// [`rx_dropped`](LinkCounters::rx_dropped).
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Receive system calls that returned data.
    pub rx_calls: u64,
    /// Receive errors other than refusals.
    pub rx_errors: u64,
    /// Frames cut short by a buffer too small for them (dropped).
    pub rx_truncated: u64,
    /// Frames longer than the link's MTU (plus [`SHIM_ROOM`](super::SHIM_ROOM)) (dropped).
    pub rx_oversize: u64,
    /// Empty datagrams (dropped).
    pub rx_empty: u64,
    /// TUN reads whose super-packet could not be split (dropped, one frame each).
    pub rx_offload: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Send batches made: `sendmsg` (a GSO run), `sendmmsg`, or one TUN batch write.
    pub tx_calls: u64,
    /// Frames dropped because the socket or device was full.
    pub tx_full: u64,
    /// Frames lost to other send errors.
    pub tx_errors: u64,
    /// Sends and receives the kernel refused because the peer's port is closed (ICMP port
    /// unreachable): each takes the link down (or keeps it down).
    pub refused: u64,
}

impl LinkCounters {
    /// Received frames dropped at the link, by reason (`truncated`, `oversize`, `empty`,
    /// `offload`).
    pub fn rx_drops(&self) -> [(&'static str, u64); 4] {
        [
            ("truncated", self.rx_truncated),
            ("oversize", self.rx_oversize),
            ("empty", self.rx_empty),
            ("offload", self.rx_offload),
        ]
    }

    /// Received frames dropped at the link.
    pub fn rx_dropped(&self) -> u64 {
        self.rx_drops().iter().map(|(_, n)| n).sum()
    }

    /// Received frames handed on to the core.
    pub fn rx_delivered(&self) -> u64 {
        self.rx_frames - self.rx_dropped()
    }

    pub(super) fn received(&mut self, f: &Fill) {
        self.rx_calls += 1;
        self.rx_frames += f.datagrams as u64;
        self.rx_bytes += f.bytes as u64;
        self.rx_truncated += f.truncated as u64;
        self.rx_oversize += f.oversize as u64;
        self.rx_empty += f.empty as u64;
    }

    pub(super) fn sent(&mut self, s: &Sent) {
        self.tx_frames += s.sent;
        self.tx_bytes += s.bytes;
        self.tx_calls += s.calls;
        self.tx_full += s.full;
        self.tx_errors += s.errors;
        self.refused += s.refused;
    }
}

impl Link {
    /// The link's counters as metrics samples named `PREFIX_link_…` and labelled
    /// `link=NAME`: traffic both ways (frames, bytes, system calls), receive drops by
    /// reason, send drops (`tx_full`, `tx_errors`), refusals, whether it is up, and its
    /// emulation's losses if emulated. Every daemon renders its links with this at each
    /// scrape (`waist` for the router, `trickles` for trickles-web).
    pub fn samples(&self, prefix: &str) -> Vec<crate::metrics::Sample> {
        use crate::metrics::Sample;
        let c = self.counters;
        let link = self.name.as_str();
        let counter = |name: &str, help: &str, v: u64| {
            Sample::counter(format!("{prefix}_link_{name}"), help, v as f64)
                .with_label("link", link)
        };
        let mut out: Vec<Sample> = [
            ("rx_frames", "frames received on the link", c.rx_frames),
            ("rx_bytes", "bytes received on the link", c.rx_bytes),
            ("rx_errors", "receive errors on the link", c.rx_errors),
            (
                "rx_calls",
                "receive system calls that returned data (recvmmsg, TUN reads)",
                c.rx_calls,
            ),
            (
                "tx_calls",
                "send batches made (sendmsg of a GSO run, sendmmsg, a TUN batch write)",
                c.tx_calls,
            ),
            ("tx_frames", "frames sent on the link", c.tx_frames),
            ("tx_bytes", "bytes sent on the link", c.tx_bytes),
            ("tx_full", "frames dropped: the socket was full", c.tx_full),
            ("tx_errors", "send errors on the link", c.tx_errors),
            (
                "refused",
                "sends and receives refused: the peer's port was closed",
                c.refused,
            ),
        ]
        .into_iter()
        .map(|(name, help, v)| counter(name, help, v))
        .collect();
        for (reason, v) in c.rx_drops() {
            out.push(
                counter(
                    "rx_dropped",
                    "received frames dropped at the link (counted in rx_frames), by reason",
                    v,
                )
                .with_label("reason", reason),
            );
        }
        out.push(
            Sample::gauge(
                format!("{prefix}_link_up"),
                "1 while the link's peer is thought to be there, 0 while it is down",
                if self.is_up() { 1.0 } else { 0.0 },
            )
            .with_label("link", link),
        );
        if let Some(e) = self.emulation() {
            out.push(counter(
                "emulated_lost",
                "frames the emulated link lost",
                e.lost,
            ));
            out.push(counter(
                "emulated_duplicated",
                "frames the emulated link duplicated",
                e.duplicated,
            ));
        }
        out
    }
}
