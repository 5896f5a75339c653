//! Links: what happens to a packet between two interfaces.

use crate::Instant;

/// How a link treats the packets it carries. All times are in simulator ticks; all
/// probabilities in parts per million.
///
/// ```
/// use netsim::LinkConfig;
/// let lossy = LinkConfig::with_delay(10).loss_ppm(100_000).jitter(4);
/// assert_eq!(lossy.delay, 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// Fixed one-way delay.
    pub delay: u64,
    /// Extra delay drawn uniformly from `0..=jitter` per packet; packets overtake each other
    /// when it exceeds their spacing (reordering).
    pub jitter: u64,
    /// Probability a packet is lost.
    pub loss_ppm: u32,
    /// Probability a delivered packet arrives twice (the copy with its own jitter).
    pub duplicate_ppm: u32,
    /// Largest packet carried; larger ones are dropped and counted.
    pub mtu: usize,
    /// Bottleneck rate in bits per tick (0: unlimited). Each direction serialises its
    /// packets one after another at this rate before the fixed delay.
    pub bits_per_tick: u64,
    /// Most ticks of backlog a direction queues before dropping (drop-tail); 0: unlimited.
    pub queue_ticks: u64,
}

impl LinkConfig {
    /// A perfect link with one-way `delay` and a 1500-byte MTU.
    pub const fn with_delay(delay: u64) -> Self {
        LinkConfig {
            delay,
            jitter: 0,
            loss_ppm: 0,
            duplicate_ppm: 0,
            mtu: 1500,
            bits_per_tick: 0,
            queue_ticks: 0,
        }
    }

    /// The same link with `jitter`.
    pub const fn jitter(mut self, jitter: u64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The same link losing `ppm` parts per million of its packets.
    pub const fn loss_ppm(mut self, ppm: u32) -> Self {
        self.loss_ppm = ppm;
        self
    }

    /// The same link duplicating `ppm` parts per million of its packets.
    pub const fn duplicate_ppm(mut self, ppm: u32) -> Self {
        self.duplicate_ppm = ppm;
        self
    }

    /// The same link with maximum packet size `mtu`.
    pub const fn mtu(mut self, mtu: usize) -> Self {
        self.mtu = mtu;
        self
    }

    /// The same link serialising at `bits_per_tick` (with one tick a microsecond, that
    /// is megabits per second), queueing at most `queue_ticks` of backlog per direction
    /// before dropping (drop-tail; 0: unlimited).
    pub const fn rate(mut self, bits_per_tick: u64, queue_ticks: u64) -> Self {
        self.bits_per_tick = bits_per_tick;
        self.queue_ticks = queue_ticks;
        self
    }

    /// Ticks to serialise `len` bytes (0 on an unlimited link).
    pub const fn serialisation(&self, len: usize) -> u64 {
        if self.bits_per_tick == 0 {
            return 0;
        }
        (len as u64 * 8).div_ceil(self.bits_per_tick)
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig::with_delay(1)
    }
}

/// What a link did with the packets offered to it, per direction summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets offered.
    pub sent: u64,
    /// Packets (copies included) handed to the far end.
    pub delivered: u64,
    /// Packets lost.
    pub lost: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Packets dropped because the bottleneck queue was full (also counted in `lost`).
    pub queue_drops: u64,
    /// Packets dropped for exceeding the MTU.
    pub too_big: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_rounds_up_and_unlimited_is_free() {
        let l = LinkConfig::with_delay(0).rate(100, 0);
        assert_eq!(l.serialisation(1500), 120);
        assert_eq!(l.serialisation(1), 1);
        assert_eq!(LinkConfig::with_delay(0).serialisation(1500), 0);
    }
}

/// One link between two interfaces.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub(crate) config: LinkConfig,
    pub(crate) ends: [(usize, usize); 2],
    pub(crate) stats: LinkStats,
    pub(crate) up: bool,
    /// Latest arrival scheduled per direction, for `jitter == 0` FIFO order.
    pub(crate) last_arrival: [Instant; 2],
    /// When each direction's bottleneck finishes sending what it has queued.
    pub(crate) busy_until: [Instant; 2],
}
