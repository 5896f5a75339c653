//! The event loop behind [`Machine::run`](super::Machine::run): engines, threads, the
//! packet source and the event queue.

use alloc::collections::{BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;

use super::{Completion, Machine, RunReport, Stop};
use crate::engine::{Program, Step};
use crate::fifo::IxBus;
use crate::mem::Memories;
use crate::params::{Memory, Params};

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct InFlight {
    pub(super) packet: u64,
    pub(super) arrival: u64,
    pub(super) start: u64,
    pub(super) program: usize,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Thread {
    pub(super) work: Option<InFlight>,
    pub(super) pc: usize,
    pub(super) ready_at: u64,
    /// A FIFO move whose first leg is under way (its second leg is booked when it ends).
    pub(super) pending: Option<Step>,
    /// Periodic thread: (program, period, next due cycle).
    pub(super) periodic: Option<(Program, u64, u64)>,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Engine {
    pub(super) programs: Vec<Program>,
    pub(super) threads: Vec<Thread>,
    pub(super) running: Option<usize>,
    pub(super) next_rr: usize,
    pub(super) busy: u64,
}

/// Where packets come from. With no arrival interval, all `limit` packets wait from cycle
/// 0 (a backlog in SDRAM: the saturated machine). With an interval, packet `i` arrives at
/// `i × interval` into the receive FIFO, which holds `rfifo_elements` mpackets: a packet
/// occupies it from arrival until a thread takes it, and one that finds it full is dropped.
#[derive(Clone, Debug)]
pub(super) struct Source {
    /// Next packet to arrive (paced) or to be taken (backlog).
    next: u64,
    limit: u64,
    interval: u64,
    /// Paced mode: packets admitted to the FIFO, not yet taken: (packet, arrival).
    fifo: VecDeque<(u64, u64)>,
    /// Packets the FIFO holds (its mpackets / the packet's mpackets).
    fifo_packets: usize,
    dropped: u64,
}

impl Source {
    fn paced(&self) -> bool {
        self.interval > 0
    }
    fn arrival(&self, i: u64) -> u64 {
        i.saturating_mul(self.interval)
    }
    fn available(&self, t: u64) -> bool {
        if self.paced() {
            self.fifo.front().is_some_and(|&(_, a)| a <= t)
        } else {
            self.next < self.limit
        }
    }
    /// Backlog mode only: when the next packet is there. Paced arrivals wake engines
    /// through their own events.
    fn next_arrival(&self) -> Option<u64> {
        (!self.paced() && self.next < self.limit).then_some(0)
    }
    /// Paced mode: the next packet arrives now; admit or drop it.
    fn arrive(&mut self) {
        let (packet, arrival) = (self.next, self.arrival(self.next));
        self.next += 1;
        if self.fifo.len() < self.fifo_packets {
            self.fifo.push_back((packet, arrival));
        } else {
            self.dropped += 1;
        }
    }
    fn take(&mut self) -> Option<(u64, u64)> {
        if self.paced() {
            self.fifo.pop_front()
        } else if self.next < self.limit {
            self.next += 1;
            Some((self.next - 1, 0))
        } else {
            None
        }
    }
    /// Whether more packets will come (or are waiting).
    fn more(&self) -> bool {
        self.next < self.limit || !self.fifo.is_empty()
    }
}

/// What an event in the queue is for. Ordered (after the cycle) engines first, then the
/// second legs of FIFO moves, then arrivals: a deterministic total order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// Engine `e` may run a thread.
    Engine(usize),
    /// The first leg of thread `k` of engine `e`'s FIFO move has ended: start the second.
    Leg(usize, usize),
    /// The next packet arrives.
    Arrival,
}

/// A thread blocked on the first leg of a FIFO move: ready when its second leg is booked.
pub(super) const BLOCKED: u64 = u64::MAX;

pub(super) struct Run<'m> {
    params: &'m Params,
    engines: Vec<Engine>,
    memories: Memories,
    ix: IxBus,
    source: Source,
    horizon: u64,
    report: RunReport,
    queue: BinaryHeap<Reverse<(u64, Event)>>,
    /// Each engine's live event: an `Engine` event at another cycle is stale and skipped.
    scheduled: Vec<Option<u64>>,
    /// Each engine is busy (running a thread) until this cycle.
    free_at: Vec<u64>,
}

impl<'m> Run<'m> {
    pub(super) fn new(machine: &'m Machine, stop: Stop) -> Self {
        let (limit, horizon) = match stop {
            Stop::Packets(n) => (n, u64::MAX),
            Stop::Cycle(h) => (u64::MAX, h),
        };
        let mut queue = BinaryHeap::new();
        // Without packet programs no packet can complete: offer none, so periodic threads
        // do not run forever waiting for them.
        let limit = if machine.engines.iter().any(|e| !e.programs.is_empty()) {
            limit
        } else {
            0
        };
        let mut scheduled = vec![None; machine.engines.len()];
        for (i, e) in machine.engines.iter().enumerate() {
            if !e.programs.is_empty() || e.threads.iter().any(|t| t.periodic.is_some()) {
                queue.push(Reverse((0, Event::Engine(i))));
                if let Some(s) = scheduled.get_mut(i) {
                    *s = Some(0);
                }
            }
        }
        if machine.interval > 0 && limit > 0 {
            queue.push(Reverse((0, Event::Arrival)));
        }
        let params = &machine.params;
        let per_packet = params.mpackets(machine.packet_bytes) as usize;
        Run {
            params: &machine.params,
            engines: machine.engines.clone(),
            memories: Memories::new(&machine.params),
            ix: IxBus::new(&machine.params),
            source: Source {
                next: 0,
                limit,
                interval: machine.interval,
                fifo: VecDeque::new(),
                fifo_packets: (params.rfifo_elements as usize / per_packet.max(1)).max(1),
                dropped: 0,
            },
            horizon,
            report: RunReport {
                engine_busy: vec![0; machine.engines.len()],
                ..RunReport::default()
            },
            queue,
            scheduled,
            free_at: vec![0; machine.engines.len()],
        }
    }

    /// Makes sure engine `e` runs no later than `t` (and not before it is free).
    fn schedule(&mut self, e: usize, t: u64) {
        let t = t.max(self.free_at.get(e).copied().unwrap_or(0));
        if let Some(s) = self.scheduled.get_mut(e) {
            if s.is_some_and(|s| s <= t) {
                return;
            }
            *s = Some(t);
            self.queue.push(Reverse((t, Event::Engine(e))));
        }
    }

    pub(super) fn drive(mut self) -> RunReport {
        while let Some(Reverse((t, event))) = self.queue.pop() {
            if t >= self.horizon {
                continue;
            }
            // No request can come before the present: forget past bus bookings.
            self.memories.forget_before(t);
            self.ix.forget_before(t);
            match event {
                Event::Arrival => {
                    self.source.arrive();
                    if self.source.next < self.source.limit {
                        let next = self.source.arrival(self.source.next);
                        self.queue.push(Reverse((next, Event::Arrival)));
                    }
                    // Wake the engines with packet programs: an idle thread may take it.
                    for e in 0..self.engines.len() {
                        if self
                            .engines
                            .get(e)
                            .is_some_and(|eng| !eng.programs.is_empty())
                        {
                            self.schedule(e, t);
                        }
                    }
                }
                Event::Leg(e, k) => {
                    if let Some(done) = self.second_leg(e, k, t) {
                        self.schedule(e, done);
                    }
                }
                Event::Engine(e) => {
                    if self.scheduled.get(e).copied().flatten() != Some(t) {
                        continue; // stale: the engine was rescheduled
                    }
                    if let Some(s) = self.scheduled.get_mut(e) {
                        *s = None;
                    }
                    if let Some(next) = self.step(e, t) {
                        self.schedule(e, next);
                    }
                }
            }
        }
        self.report.dropped = self.source.dropped;
        self.report.cycles = match self.horizon {
            u64::MAX => self
                .report
                .completions
                .iter()
                .map(|c| c.end)
                .max()
                .unwrap_or(0),
            h => h,
        };
        for (busy, e) in self.report.engine_busy.iter_mut().zip(&self.engines) {
            *busy = e.busy;
        }
        for m in Memory::ALL {
            if let Some(s) = self.report.memory.get_mut(m.index()) {
                *s = self.memories.unit(m).stats();
            }
        }
        self.report.ix_mpackets = self.ix.mpackets();
        self.report
    }

    fn set_free_at(&mut self, e: usize, t: u64) {
        if let Some(f) = self.free_at.get_mut(e) {
            *f = t;
        }
    }

    /// Books the second leg of thread `k`'s FIFO move at `t`; returns when it completes.
    fn second_leg(&mut self, e: usize, k: usize, t: u64) -> Option<u64> {
        let words = self.params.mpacket_bytes / 4;
        let step = self
            .engines
            .get_mut(e)?
            .threads
            .get_mut(k)?
            .pending
            .take()?;
        let done = match step {
            Step::ReceiveMpacket => self.memories.access(Memory::Sdram, t, words, true),
            Step::TransmitMpacket => self.ix.transfer(t),
            _ => t,
        };
        let th = self.engines.get_mut(e)?.threads.get_mut(k)?;
        th.ready_at = done;
        Some(done)
    }

    /// Picks a thread of engine `e` that can run at `t`.
    fn choose(&self, e: usize, t: u64) -> Option<usize> {
        let eng = self.engines.get(e)?;
        let n = eng.threads.len();
        (0..n).map(|i| (eng.next_rr + i) % n).find(|&k| {
            eng.threads
                .get(k)
                .is_some_and(|th| match (&th.work, &th.periodic) {
                    (Some(_), _) => th.ready_at <= t,
                    (None, Some((_, _, due))) => *due <= t,
                    (None, None) => !eng.programs.is_empty() && self.source.available(t),
                })
        })
    }

    /// The next cycle at which some thread of `e` could run, if any ever will.
    fn wake(&self, e: usize) -> Option<u64> {
        let eng = self.engines.get(e)?;
        eng.threads
            .iter()
            .filter_map(|th| match (&th.work, &th.periodic) {
                // A blocked thread is woken by its second leg's event.
                (Some(_), _) => (th.ready_at != BLOCKED).then_some(th.ready_at),
                (None, Some((_, _, due))) => {
                    // A periodic thread keeps an engine alive only while packets remain.
                    (self.source.more() || self.horizon != u64::MAX).then_some(*due)
                }
                (None, None) => {
                    if eng.programs.is_empty() {
                        None
                    } else {
                        self.source.next_arrival()
                    }
                }
            })
            .min()
    }

    /// Runs engine `e` from event time `now`; returns its next event time.
    fn step(&mut self, e: usize, now: u64) -> Option<u64> {
        let k = match self.engines.get_mut(e)?.running.take() {
            Some(k) => k,
            None => match self.choose(e, now) {
                Some(k) => k,
                None => return self.wake(e),
            },
        };
        let params = *self.params;
        let instr = u64::from(params.instruction_cycles);
        let mut t = now;
        loop {
            // Give the thread work if it has none.
            let needs_work = self
                .engines
                .get(e)
                .and_then(|eng| eng.threads.get(k))
                .is_some_and(|th| th.work.is_none());
            if needs_work && !self.take_work(e, k, t) {
                break;
            }
            let eng = self.engines.get_mut(e)?;
            let th = eng.threads.get_mut(k)?;
            let work = th.work?;
            let program = match &th.periodic {
                Some((p, _, _)) => p,
                None => eng.programs.get(work.program)?,
            };
            match program.steps().get(th.pc).copied() {
                None => {
                    // The loop back to the next packet.
                    t += instr.max(1);
                    eng.busy += instr.max(1);
                    th.work = None;
                    th.pc = 0;
                    if let Some((_, period, due)) = &mut th.periodic {
                        *due = due.saturating_add(*period).max(t);
                        self.report.periodic_runs += 1;
                    } else if t <= self.horizon {
                        self.report.completions.push(Completion {
                            packet: work.packet,
                            engine: e as u32,
                            thread: k as u32,
                            arrival: work.arrival,
                            start: work.start,
                            end: t,
                        });
                    }
                    eng.next_rr = k;
                    self.set_free_at(e, t);
                    return Some(t);
                }
                Some(Step::Compute(n)) => {
                    let c = u64::from(n) * instr;
                    t += c;
                    eng.busy += c;
                    th.pc += 1;
                }
                Some(step) => {
                    if t > now {
                        // Issue at the reference's own cycle, in event order.
                        eng.running = Some(k);
                        self.set_free_at(e, t);
                        return Some(t);
                    }
                    let issue = u64::from(params.reference_issue_cycles);
                    let swap = u64::from(params.context_switch_cycles);
                    t += issue;
                    let done = match step {
                        Step::Read { memory, words } => {
                            self.memories.access(memory, t, words, false)
                        }
                        Step::Write { memory, words } => {
                            self.memories.access(memory, t, words, true)
                        }
                        // A FIFO move has two legs; the second is booked when the first
                        // ends (an event), so no resource is ever booked ahead of time.
                        Step::ReceiveMpacket => {
                            let leg = self.ix.transfer(t);
                            self.queue.push(Reverse((leg, Event::Leg(e, k))));
                            BLOCKED
                        }
                        Step::TransmitMpacket => {
                            let leg = self.memories.access(
                                Memory::Sdram,
                                t,
                                params.mpacket_bytes / 4,
                                false,
                            );
                            self.queue.push(Reverse((leg, Event::Leg(e, k))));
                            BLOCKED
                        }
                        Step::Compute(_) => t,
                    };
                    let eng = self.engines.get_mut(e)?;
                    let th = eng.threads.get_mut(k)?;
                    th.ready_at = done;
                    th.pending = (done == BLOCKED).then_some(step);
                    th.pc += 1;
                    eng.busy += issue + swap;
                    eng.next_rr = (k + 1) % eng.threads.len().max(1);
                    self.set_free_at(e, t + swap);
                    return Some(t + swap);
                }
            }
        }
        // The thread found no work: let the engine choose again.
        Some(t.max(now))
            .filter(|_| self.choose(e, t).is_some())
            .or_else(|| self.wake(e))
    }

    /// Gives thread `k` of engine `e` its next packet or periodic run; false if none yet.
    fn take_work(&mut self, e: usize, k: usize, t: u64) -> bool {
        let Some(eng) = self.engines.get_mut(e) else {
            return false;
        };
        let n_programs = eng.programs.len();
        let Some(th) = eng.threads.get_mut(k) else {
            return false;
        };
        if let Some((_, _, due)) = &th.periodic {
            if *due > t {
                return false;
            }
            th.work = Some(InFlight {
                packet: 0,
                arrival: *due,
                start: t,
                program: 0,
            });
            return true;
        }
        if n_programs == 0 || !self.source.available(t) {
            return false;
        }
        let Some((packet, arrival)) = self.source.take() else {
            return false;
        };
        th.work = Some(InFlight {
            packet,
            arrival,
            start: t,
            program: (packet % n_programs as u64) as usize,
        });
        th.pc = 0;
        true
    }
}
