//! User-space link emulation: delay, jitter (so reordering), loss, duplication and a rate
//! limit with a drop-tail queue, for links of real processes on a machine without the
//! kernel's netem. The model is `netsim`'s ([`netsim::Direction`]), the one the simulator
//! runs, so an experiment means the same on a simulated and a real network; here its tick is
//! a microsecond of wall-clock time since the emulator was made.
//!
//! ```text
//!  send(now, frame) ─► Direction::transmit ─► lost / too big / queue full (counted)
//!                                          └► arrival times ─► heap ─► pop_due(now) ─► the socket
//! ```
//!
//! Each end of a link emulates what it sends. Frames waiting are bounded
//! ([`MAX_QUEUED`]): past that they are dropped and counted, so a flood cannot grow memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use netsim::{Direction, LinkConfig, LinkStats, Rng};

use crate::clock::Clock;

/// Frames an emulator holds at most; more are dropped (counted in `queue_drops`).
pub const MAX_QUEUED: usize = 65_536;

/// One emulated direction. See the [module docs](self).
#[derive(Debug)]
pub struct Emulator {
    config: LinkConfig,
    dir: Direction,
    rng: Rng,
    stats: LinkStats,
    /// Ticks: microseconds since the emulator was made.
    clock: Clock,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
}

impl Emulator {
    /// An emulator of `config` (ticks are microseconds since `origin`), drawing from `seed`.
    pub fn new(config: LinkConfig, seed: u64, origin: Instant) -> Emulator {
        Emulator {
            config,
            dir: Direction::default(),
            rng: Rng::new(seed),
            stats: LinkStats::default(),
            clock: Clock::starting_at(origin),
            seq: 0,
            queue: BinaryHeap::new(),
        }
    }

    /// Sends `frame` into the emulated link at `now`: it is dropped (and counted) or
    /// scheduled to come out of [`pop_due`](Emulator::pop_due) once or twice.
    pub fn send(&mut self, now: Instant, frame: &[u8]) {
        if self.queue.len() >= MAX_QUEUED {
            self.stats.sent += 1;
            self.stats.lost += 1;
            self.stats.queue_drops += 1;
            return;
        }
        let t = self.clock.at(now);
        let fate = self
            .dir
            .transmit(&self.config, t, frame.len(), &mut self.rng, &mut self.stats);
        for at in fate.arrivals() {
            self.seq += 1;
            self.queue
                .push(Reverse((at.ticks(), self.seq, frame.to_vec())));
        }
    }

    /// When the next frame is due, if any waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue
            .peek()
            .map(|Reverse((t, _, _))| self.clock.deadline(netsim::Instant::from_micros(*t)))
    }

    /// The next frame due at `now`, in arrival order (ties in send order).
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        let t = self.clock.at(now).ticks();
        match self.queue.peek() {
            Some(Reverse((at, _, _))) if *at <= t => self.queue.pop().map(|Reverse((_, _, f))| f),
            _ => None,
        }
    }

    /// Frames waiting.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// What the emulated link did so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn delay_rate_and_loss() {
        let t0 = Instant::now();
        let mut e = Emulator::new(LinkConfig::with_delay(1000).rate(8, 0), 1, t0);
        e.send(t0, &[1; 100]);
        e.send(t0, &[2; 100]);
        assert_eq!(e.next_due(), Some(t0 + Duration::from_micros(1100)));
        assert_eq!(e.pop_due(t0 + Duration::from_micros(1099)), None);
        assert_eq!(
            e.pop_due(t0 + Duration::from_micros(1100)),
            Some(vec![1; 100])
        );
        assert_eq!(e.pop_due(t0 + Duration::from_micros(1199)), None);
        assert_eq!(
            e.pop_due(t0 + Duration::from_micros(1200)),
            Some(vec![2; 100])
        );
        let mut lossy = Emulator::new(LinkConfig::with_delay(0).loss_ppm(500_000), 7, t0);
        for _ in 0..1000 {
            lossy.send(t0, &[0]);
        }
        let s = lossy.stats();
        assert_eq!(s.sent, 1000);
        assert!((400..600).contains(&s.lost), "{s:?}");
        assert_eq!(lossy.queued() as u64, s.delivered);
    }

    #[test]
    fn the_queue_is_bounded() {
        let t0 = Instant::now();
        let mut e = Emulator::new(LinkConfig::with_delay(1_000_000), 1, t0);
        for _ in 0..MAX_QUEUED + 10 {
            e.send(t0, &[0]);
        }
        assert_eq!(e.queued(), MAX_QUEUED);
        assert_eq!(e.stats().queue_drops, 10);
    }
}
