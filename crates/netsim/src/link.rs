//! Links: what happens to a packet between two interfaces.

use crate::Instant;
use crate::Rng;

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

/// One direction of a link as a sans-IO model: what happens to each packet sent into it —
/// serialisation at the bottleneck behind what is queued (drop-tail), loss, duplication,
/// delay and jitter. The simulator runs two per link; a daemon runs one per emulated link
/// on its own clock (one tick a microsecond), with its own seeded [`Rng`].
///
/// ```
/// use netsim::{Direction, Instant, LinkConfig, LinkStats, Rng};
///
/// let (mut d, mut stats) = (Direction::default(), LinkStats::default());
/// let mut rng = Rng::new(1);
/// let config = LinkConfig::with_delay(100).rate(8, 0); // 8 bits a tick: 1 byte/µs
/// let first = d.transmit(&config, Instant::ZERO, 100, &mut rng, &mut stats);
/// let second = d.transmit(&config, Instant::ZERO, 100, &mut rng, &mut stats);
/// assert_eq!(first.arrivals().collect::<Vec<_>>(), [Instant::from_ticks(200)]); // 100 to send, 100 delay
/// assert_eq!(second.arrivals().collect::<Vec<_>>(), [Instant::from_ticks(300)]); // queued behind
/// assert_eq!(stats.delivered, 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Direction {
    /// Latest arrival scheduled, for `jitter == 0` FIFO order.
    last_arrival: Instant,
    /// When the bottleneck finishes sending what it has queued.
    busy_until: Instant,
}

/// What a [`Direction`] did with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Larger than the link's MTU.
    TooBig,
    /// The bottleneck queue was full (drop-tail).
    QueueFull,
    /// Lost on the way.
    Lost,
    /// Arrives at the far end at `at`, and a duplicate at `copy` if there is one.
    Arrives {
        /// The arrival.
        at: Instant,
        /// A duplicate's arrival.
        copy: Option<Instant>,
    },
}

impl Fate {
    /// The arrival times, first the packet, then its duplicate (none for a dropped packet).
    pub fn arrivals(&self) -> impl Iterator<Item = Instant> + use<> {
        let (a, b) = match *self {
            Fate::Arrives { at, copy } => (Some(at), copy),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }
}

impl Direction {
    /// Sends a packet of `len` bytes into this direction at `now`; `rng` draws loss,
    /// duplication and jitter. Updates the stats.
    pub fn transmit(
        &mut self,
        config: &LinkConfig,
        now: Instant,
        len: usize,
        rng: &mut Rng,
        stats: &mut LinkStats,
    ) -> Fate {
        stats.sent += 1;
        if len > config.mtu {
            stats.too_big += 1;
            return Fate::TooBig;
        }
        let start = self.busy_until.max(now);
        if config.queue_ticks > 0 && start.ticks() - now.ticks() > config.queue_ticks {
            stats.lost += 1;
            stats.queue_drops += 1;
            return Fate::QueueFull;
        }
        let departs = start.saturating_add(config.serialisation(len));
        self.busy_until = departs;
        if rng.chance(config.loss_ppm) {
            stats.lost += 1;
            return Fate::Lost;
        }
        let copies = if rng.chance(config.duplicate_ppm) {
            2
        } else {
            1
        };
        let mut at = [None, None];
        for (copy, slot) in at.iter_mut().enumerate().take(copies) {
            let jitter = if config.jitter > 0 {
                rng.below(config.jitter + 1)
            } else {
                0
            };
            let mut t = departs.saturating_add(config.delay.saturating_add(jitter));
            if config.jitter == 0 {
                // Without jitter a link is FIFO.
                t = t.max(self.last_arrival);
            }
            self.last_arrival = t;
            stats.delivered += 1;
            stats.duplicated += u64::from(copy == 1);
            *slot = Some(t);
        }
        match at {
            [Some(at), copy] => Fate::Arrives { at, copy },
            // At least one copy is always made.
            [None, _] => Fate::Lost,
        }
    }
}

/// One link between two interfaces.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub(crate) config: LinkConfig,
    pub(crate) ends: [(usize, usize); 2],
    pub(crate) stats: LinkStats,
    pub(crate) up: bool,
    /// Each direction: toward end 0, toward end 1.
    pub(crate) dirs: [Direction; 2],
}
