//! Memories as timing resources.
//!
//! A [`MemoryUnit`] is one memory (SRAM, SDRAM or scratch) seen from the microengines: a
//! reference waits for the data bus, occupies it for one transfer per bus width of data (at
//! the memory's clock), and completes one latency after its first transfer began. So a lone
//! reference costs exactly [`Params::access_cycles`], and references from several threads
//! or engines pipeline behind each other on the bus: latency overlaps, bus occupancy
//! serialises. The bus is a [`Timeline`] of booked intervals: a request takes the earliest
//! free slot at or after its cycle, so a transfer booked ahead (the SDRAM leg of a FIFO
//! move, say) does not hold up an earlier request that fits before it.
//!
//! Not modelled: bank conflicts, SDRAM row misses and refresh, command-queue depth limits,
//! read/write turnaround. They would add latency under load; our contended figures are a
//! lower bound in that respect.

use alloc::vec::Vec;

use crate::params::{Memory, Params};

/// A resource booked in intervals of cycles: the earliest gap of the asked length at or
/// after the asked cycle is taken. Intervals ending before the simulation's present are
/// forgotten ([`Timeline::forget_before`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Timeline {
    /// Booked `[start, end)` intervals, sorted and disjoint.
    booked: Vec<(u64, u64)>,
}

impl Timeline {
    /// Books `len` cycles at or after `at`; returns the start.
    pub fn book(&mut self, at: u64, len: u64) -> u64 {
        let mut start = at;
        for &(a, b) in &self.booked {
            if b <= start {
                continue;
            }
            if a >= start.saturating_add(len) {
                break;
            }
            start = b;
        }
        if len > 0 {
            // Everything before `start` ends by it; the interval goes before the first
            // booking that starts at or after it (which it does not overlap).
            let slot = self.booked.partition_point(|&(a, _)| a < start);
            self.booked.insert(slot, (start, start + len));
        }
        start
    }

    /// Forgets intervals that end at or before `now` (no request can come earlier).
    pub fn forget_before(&mut self, now: u64) {
        self.booked.retain(|&(_, b)| b > now);
    }

    /// The end of the last booked interval (0 if none).
    pub fn free_after(&self) -> u64 {
        self.booked.last().map_or(0, |&(_, b)| b)
    }
}

/// Running totals of one memory unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// References served (reads and writes).
    pub references: u64,
    /// 32-bit words moved.
    pub words: u64,
    /// Core cycles the data bus was occupied.
    pub busy_cycles: u64,
    /// Core cycles references waited for the bus beyond their issue cycle, summed.
    pub queued_cycles: u64,
}

/// One memory as a timing resource: a data bus with FCFS occupancy and a fixed latency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryUnit {
    memory: Memory,
    read_latency: u64,
    write_latency: u64,
    first_transfer: u64,
    /// Occupancy per 32-bit word count is computed from the params on each access.
    params: Params,
    bus: Timeline,
    stats: MemoryStats,
}

impl MemoryUnit {
    /// An idle unit for `memory` with the costs of `params`.
    pub fn new(params: &Params, memory: Memory) -> Self {
        MemoryUnit {
            memory,
            read_latency: u64::from(params.latency_cycles(memory, false)),
            write_latency: u64::from(params.latency_cycles(memory, true)),
            first_transfer: u64::from(params.occupancy_cycles(memory, 1)),
            params: *params,
            bus: Timeline::default(),
            stats: MemoryStats::default(),
        }
    }

    /// Which memory this is.
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// Totals so far.
    pub fn stats(&self) -> MemoryStats {
        self.stats
    }

    /// The cycle after the last booked bus transfer.
    pub fn bus_free_at(&self) -> u64 {
        self.bus.free_after()
    }

    /// Forgets bus bookings that ended by `now`; the simulator calls it as time advances.
    pub fn forget_before(&mut self, now: u64) {
        self.bus.forget_before(now);
    }

    /// Serves a reference of `words` 32-bit words issued at cycle `at`; returns the cycle at
    /// which its data is back (read) or its completion is signalled (write).
    ///
    /// The reference takes the earliest free bus slot at or after `at`.
    pub fn access(&mut self, at: u64, words: u32, write: bool) -> u64 {
        let occupancy = u64::from(self.params.occupancy_cycles(self.memory, words));
        let start = self.bus.book(at, occupancy);
        let latency = if write {
            self.write_latency
        } else {
            self.read_latency
        };
        self.stats.references += 1;
        self.stats.words += u64::from(words.max(1));
        self.stats.busy_cycles += occupancy;
        self.stats.queued_cycles += start - at;
        start + latency + occupancy.saturating_sub(self.first_transfer)
    }
}

/// The three memories of the chip, indexed by [`Memory`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memories {
    units: [MemoryUnit; 3],
}

impl Memories {
    /// Idle SRAM, SDRAM and scratch with the costs of `params`.
    pub fn new(params: &Params) -> Self {
        Memories {
            units: Memory::ALL.map(|m| MemoryUnit::new(params, m)),
        }
    }

    /// The unit of `memory`.
    pub fn unit(&self, memory: Memory) -> &MemoryUnit {
        match memory {
            Memory::Sram => &self.units[0],
            Memory::Sdram => &self.units[1],
            Memory::Scratch => &self.units[2],
        }
    }

    /// The unit of `memory`, mutably.
    pub fn unit_mut(&mut self, memory: Memory) -> &mut MemoryUnit {
        match memory {
            Memory::Sram => &mut self.units[0],
            Memory::Sdram => &mut self.units[1],
            Memory::Scratch => &mut self.units[2],
        }
    }

    /// [`MemoryUnit::forget_before`] on every unit.
    pub fn forget_before(&mut self, now: u64) {
        for u in &mut self.units {
            u.forget_before(now);
        }
    }

    /// [`MemoryUnit::access`] on `memory`.
    pub fn access(&mut self, memory: Memory, at: u64, words: u32, write: bool) -> u64 {
        self.unit_mut(memory).access(at, words, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const P: Params = Params::IXP1200;

    #[test]
    fn lone_reference_costs_its_unloaded_cycles() {
        for m in Memory::ALL {
            for words in [1, 2, 4, 16] {
                for write in [false, true] {
                    let mut u = MemoryUnit::new(&P, m);
                    let done = u.access(100, words, write);
                    assert_eq!(done - 100, u64::from(P.access_cycles(m, words, write)));
                }
            }
        }
    }

    #[test]
    fn bus_occupancy_serialises_and_latency_overlaps() {
        let mut u = MemoryUnit::new(&P, Memory::Sram);
        // Four 4-word reads issued together: each holds the bus 4 cycles.
        let done: [u64; 4] = core::array::from_fn(|_| u.access(0, 4, false));
        assert_eq!(done, [23, 27, 31, 35]);
        assert_eq!(u.stats().queued_cycles, 4 + 8 + 12);
        assert_eq!(u.stats().busy_cycles, 16);
        // SDRAM: one 64-bit transfer per two core cycles.
        let mut d = MemoryUnit::new(&P, Memory::Sdram);
        assert_eq!(d.access(0, 2, false), 40);
        assert_eq!(d.access(0, 2, false), 42);
        assert_eq!(d.bus_free_at(), 4);
    }

    #[test]
    fn a_booking_ahead_does_not_block_an_earlier_request() {
        let mut u = MemoryUnit::new(&P, Memory::Sdram);
        // A 16-word transfer booked for cycle 100 holds the bus 100..116.
        assert_eq!(u.access(100, 16, true), 100 + 40 + 14);
        // A quadword at cycle 10 fits before it; one at 99 waits until 116.
        assert_eq!(u.access(10, 2, false), 50);
        assert_eq!(u.access(99, 2, false), 116 + 40);
        assert_eq!(u.stats().queued_cycles, 17);
        u.forget_before(200);
        assert_eq!(u.bus_free_at(), 0);
    }

    #[test]
    fn timeline_finds_gaps() {
        let mut t = Timeline::default();
        assert_eq!(t.book(10, 5), 10);
        assert_eq!(t.book(0, 5), 0);
        assert_eq!(t.book(0, 6), 15);
        assert_eq!(t.book(3, 2), 5);
        assert_eq!(t.book(0, 0), 0);
        assert_eq!(t.booked, vec![(0, 5), (5, 7), (10, 15), (15, 21)]);
        t.forget_before(15);
        assert_eq!(t.booked, vec![(15, 21)]);
    }

    #[test]
    fn memories_index_their_units() {
        let mut ms = Memories::new(&P);
        for m in Memory::ALL {
            assert_eq!(ms.unit(m).memory(), m);
        }
        ms.access(Memory::Scratch, 0, 1, true);
        assert_eq!(ms.unit(Memory::Scratch).stats().references, 1);
        assert_eq!(ms.unit(Memory::Sram).stats().references, 0);
    }
}
