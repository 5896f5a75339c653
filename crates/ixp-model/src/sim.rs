//! The discrete-event, cycle-level simulation of the microengines.
//!
//! A [`Machine`] has up to six microengines of up to four hardware threads, the three
//! memories ([`Memories`]) and the IX bus ([`IxBus`]). Each engine runs one thread at a
//! time; a thread runs its per-packet [`Program`] until it makes a memory or FIFO
//! reference, which swaps it out ([`Params::context_switch_cycles`]) until the reference
//! completes. The engine then runs another ready thread, round robin, and idles only when
//! all of its threads wait. Packets come from one source shared by every thread and packet
//! `i` runs program `i mod k` of the `k` programs loaded on the engine that takes it. By
//! default all packets wait from cycle 0 (a backlog: the saturated machine); with an
//! arrival interval, packet `i` arrives at `i × interval` into the receive FIFO, occupies
//! its mpacket elements until a thread takes it, and is dropped if it finds the FIFO full
//! ([`RunReport::dropped`]). Threads are not preempted: one that makes no
//! reference keeps its engine. A thread may instead be *periodic* (the ESS cleaner): it runs
//! its program every `period` cycles.
//!
//! The event queue is ordered by cycle (then engines, FIFO-move legs, arrivals), so a run is a
//! pure function of the parameters, the programs and the stop condition: no wall clock.
//!
//! ```text
//!   source ─► engine 0 [t0 t1 t2 t3] ─┐         ┌─► SRAM   (32-bit, core clock)
//!             engine 1 [t0 t1 t2 t3] ─┼─ refs ─►├─► SDRAM  (64-bit, half clock)
//!             …                       │         ├─► scratch
//!             engine 5 [t0 t1 t2 t3] ─┘         └─► IX bus ⇄ RFIFO/TFIFO
//! ```

use alloc::collections::{BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt;

use crate::engine::{LoadError, Program, Step, check_fits};
use crate::fifo::IxBus;
use crate::mem::{Memories, MemoryStats};
use crate::params::{Memory, Params, ParamsError};

/// How many engines and threads a [`Machine`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineConfig {
    /// Microengines in use (1 ..= [`Params::microengines`]).
    pub engines: u32,
    /// Hardware threads in use per engine (1 ..= [`Params::threads_per_engine`]).
    pub threads_per_engine: u32,
}

impl MachineConfig {
    /// Every engine and thread of `params`.
    pub fn full(params: &Params) -> Self {
        MachineConfig {
            engines: params.microengines,
            threads_per_engine: params.threads_per_engine,
        }
    }

    /// One engine with one thread: a serial processor.
    pub const SERIAL: MachineConfig = MachineConfig {
        engines: 1,
        threads_per_engine: 1,
    };
}

/// A [`MachineConfig`] the chip cannot provide, or unusable [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// More engines than the chip has, or none.
    Engines {
        /// Asked for.
        asked: u32,
        /// The chip has.
        have: u32,
    },
    /// More threads per engine than the hardware has, or none.
    Threads {
        /// Asked for.
        asked: u32,
        /// The hardware has.
        have: u32,
    },
    /// The parameters themselves are unusable.
    Params(ParamsError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Engines { asked, have } => {
                write!(f, "{asked} microengines asked for; 1 to {have} exist")
            }
            ConfigError::Threads { asked, have } => {
                write!(f, "{asked} threads per engine asked for; 1 to {have} exist")
            }
            ConfigError::Params(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for ConfigError {}

/// When a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// After this many packets have completed (the source offers exactly this many).
    Packets(u64),
    /// At this cycle: packets completing later are not counted.
    Cycle(u64),
}

/// One completed packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Completion {
    /// The packet's sequence number.
    pub packet: u64,
    /// The engine and thread that ran it.
    pub engine: u32,
    /// The thread within the engine.
    pub thread: u32,
    /// Cycle it arrived.
    pub arrival: u64,
    /// Cycle a thread started it.
    pub start: u64,
    /// Cycle its program finished.
    pub end: u64,
}

impl Completion {
    /// Cycles from start to end: the program's latency.
    pub fn service_cycles(&self) -> u64 {
        self.end - self.start
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunReport {
    /// Completed packets, in completion order.
    pub completions: Vec<Completion>,
    /// Runs of periodic threads.
    pub periodic_runs: u64,
    /// The last completion's cycle (or the stop cycle, for [`Stop::Cycle`]).
    pub cycles: u64,
    /// Cycles each engine spent running threads (not idle).
    pub engine_busy: Vec<u64>,
    /// SRAM, SDRAM and scratch totals, indexed by [`Memory::index`].
    pub memory: [MemoryStats; 3],
    /// Mpackets moved over the IX bus.
    pub ix_mpackets: u64,
    /// Packets dropped because the receive FIFO was full on arrival (paced arrivals only).
    pub dropped: u64,
}

impl RunReport {
    /// Packets completed.
    pub fn packets(&self) -> u64 {
        self.completions.len() as u64
    }

    /// Mean service latency in cycles (0 without packets).
    pub fn mean_service_cycles(&self) -> f64 {
        let n = self.completions.len();
        if n == 0 {
            return 0.0;
        }
        self.completions
            .iter()
            .map(|c| c.service_cycles() as f64)
            .sum::<f64>()
            / n as f64
    }

    /// Packets per second at the core clock of `params`.
    pub fn throughput_pps(&self, params: &Params) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        self.packets() as f64 * params.core_hz() as f64 / self.cycles as f64
    }

    /// Totals of `memory`.
    pub fn memory_stats(&self, memory: Memory) -> MemoryStats {
        self.memory.get(memory.index()).copied().unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct InFlight {
    packet: u64,
    arrival: u64,
    start: u64,
    program: usize,
}

#[derive(Clone, Debug, Default)]
struct Thread {
    work: Option<InFlight>,
    pc: usize,
    ready_at: u64,
    /// A FIFO move whose first leg is under way (its second leg is booked when it ends).
    pending: Option<Step>,
    /// Periodic thread: (program, period, next due cycle).
    periodic: Option<(Program, u64, u64)>,
}

#[derive(Clone, Debug, Default)]
struct Engine {
    programs: Vec<Program>,
    threads: Vec<Thread>,
    running: Option<usize>,
    next_rr: usize,
    busy: u64,
}

/// Where packets come from. With no arrival interval, all `limit` packets wait from cycle
/// 0 (a backlog in SDRAM: the saturated machine). With an interval, packet `i` arrives at
/// `i × interval` into the receive FIFO, which holds `rfifo_elements` mpackets: a packet
/// occupies it from arrival until a thread takes it, and one that finds it full is dropped.
#[derive(Clone, Debug)]
struct Source {
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
enum Event {
    /// Engine `e` may run a thread.
    Engine(usize),
    /// The first leg of thread `k` of engine `e`'s FIFO move has ended: start the second.
    Leg(usize, usize),
    /// The next packet arrives.
    Arrival,
}

/// A thread blocked on the first leg of a FIFO move: ready when its second leg is booked.
const BLOCKED: u64 = u64::MAX;

/// The simulated IXP1200 microengine complex. See the [module docs](self).
///
/// Calling order: [`Machine::new`], [`load`](Self::load) programs on engines (and
/// optionally [`set_periodic`](Self::set_periodic)), then [`run`](Self::run). A run starts
/// from idle memories and cycle 0 each time.
#[derive(Clone, Debug)]
pub struct Machine {
    params: Params,
    config: MachineConfig,
    engines: Vec<Engine>,
    interval: u64,
    packet_bytes: u32,
}

impl Machine {
    /// A machine of `config` engines and threads with the costs of `params`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] if `params` is invalid or `config` asks for more (or fewer than one)
    /// engines or threads than the chip has.
    pub fn new(params: Params, config: MachineConfig) -> Result<Self, ConfigError> {
        params.validate().map_err(ConfigError::Params)?;
        if config.engines == 0 || config.engines > params.microengines {
            return Err(ConfigError::Engines {
                asked: config.engines,
                have: params.microengines,
            });
        }
        if config.threads_per_engine == 0 || config.threads_per_engine > params.threads_per_engine {
            return Err(ConfigError::Threads {
                asked: config.threads_per_engine,
                have: params.threads_per_engine,
            });
        }
        let engine = Engine {
            threads: vec![Thread::default(); config.threads_per_engine as usize],
            ..Engine::default()
        };
        Ok(Machine {
            params,
            config,
            engines: vec![engine; config.engines as usize],
            interval: 0,
            packet_bytes: params.min_frame_bytes,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The engine and thread counts.
    pub fn config(&self) -> MachineConfig {
        self.config
    }

    /// Packets arrive every `cycles` cycles into the receive FIFO, which drops those that
    /// find it full (0, the default: all packets wait in SDRAM from cycle 0, none drop).
    pub fn set_arrival_interval(&mut self, cycles: u64) {
        self.interval = cycles;
    }

    /// Packets are `bytes` long: each takes `ceil(bytes / mpacket_bytes)` receive-FIFO
    /// elements (default: a minimum frame, one mpacket).
    pub fn set_packet_bytes(&mut self, bytes: u32) {
        self.packet_bytes = bytes;
    }

    /// Loads `programs` on `engine`, replacing what it had; packet `i` taken by this engine
    /// runs `programs[i mod programs.len()]`.
    ///
    /// # Errors
    ///
    /// [`LoadError`] if the engine does not exist, a program is empty, or the programs
    /// (with any periodic thread's) exceed the instruction store.
    pub fn load(&mut self, engine: u32, programs: Vec<Program>) -> Result<(), LoadError> {
        let params = self.params;
        let e = self
            .engines
            .get_mut(engine as usize)
            .ok_or(LoadError::NoSuchEngine(engine))?;
        let mut all = programs.clone();
        all.extend(
            e.threads
                .iter()
                .filter_map(|t| t.periodic.as_ref().map(|p| p.0.clone())),
        );
        check_fits(&params, &all)?;
        e.programs = programs;
        Ok(())
    }

    /// Loads `programs` on every engine.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_all(&mut self, programs: &[Program]) -> Result<(), LoadError> {
        for e in 0..self.config.engines {
            self.load(e, programs.to_vec())?;
        }
        Ok(())
    }

    /// Makes `thread` of `engine` periodic: it runs `program` at cycles 0, `period`,
    /// 2·`period`, … instead of taking packets (the ESS cleaner of ESP paper §6).
    ///
    /// # Errors
    ///
    /// [`LoadError::NoSuchEngine`] for a missing engine or thread, and the instruction-store
    /// checks of [`load`](Self::load).
    pub fn set_periodic(
        &mut self,
        engine: u32,
        thread: u32,
        program: Program,
        period: u64,
    ) -> Result<(), LoadError> {
        let params = self.params;
        let e = self
            .engines
            .get_mut(engine as usize)
            .ok_or(LoadError::NoSuchEngine(engine))?;
        let mut all = e.programs.clone();
        all.push(program.clone());
        check_fits(&params, &all)?;
        let t = e
            .threads
            .get_mut(thread as usize)
            .ok_or(LoadError::NoSuchEngine(engine))?;
        t.periodic = Some((program, period.max(1), 0));
        Ok(())
    }

    /// Runs from cycle 0 until `stop`; returns what happened.
    pub fn run(&self, stop: Stop) -> RunReport {
        Run::new(self, stop).drive()
    }
}

struct Run<'m> {
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
    fn new(machine: &'m Machine, stop: Stop) -> Self {
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

    fn drive(mut self) -> RunReport {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Step;

    const P: Params = Params::IXP1200;

    fn machine(engines: u32, threads: u32, programs: &[Program]) -> Machine {
        let mut m = Machine::new(
            P,
            MachineConfig {
                engines,
                threads_per_engine: threads,
            },
        )
        .unwrap();
        m.load_all(programs).unwrap();
        m
    }

    #[test]
    fn one_sram_read_alone_costs_exactly_its_latency() {
        let p = Program::new(vec![Step::read(Memory::Sram, 1)]);
        let r = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(1));
        let c = r.completions[0];
        // Issue (1) + SRAM latency (20) + the loop branch (1).
        assert_eq!(c.service_cycles(), 22);
        assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
        assert_eq!(r.memory_stats(Memory::Sram).references, 1);
    }

    #[test]
    fn lone_thread_latency_is_the_unloaded_sum() {
        let p = Program::new(vec![
            Step::Compute(7),
            Step::read(Memory::Sram, 2),
            Step::Compute(3),
            Step::write(Memory::Sdram, 4),
            Step::read(Memory::Scratch, 1),
            Step::ReceiveMpacket,
        ]);
        let r = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(3));
        for c in &r.completions {
            assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
        }
        assert_eq!(r.ix_mpackets, 3);
    }

    #[test]
    fn two_threads_overlap_memory_latency() {
        let p = Program::new(vec![Step::Compute(2), Step::read(Memory::Sram, 1)]);
        let one = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(100));
        let two = machine(1, 2, core::slice::from_ref(&p)).run(Stop::Packets(100));
        // Serial: 100 × (2 + 1 + 20 + 1) cycles. Two threads hide one latency behind the
        // other, so nearly halve it.
        assert_eq!(one.cycles, 100 * p.unloaded_cycles(&P));
        assert!(
            two.cycles * 10 < one.cycles * 6,
            "{} vs {}",
            two.cycles,
            one.cycles
        );
        // Each packet still takes at least its unloaded latency.
        assert!(two.completions.iter().all(|c| c.service_cycles() >= 24));
    }

    #[test]
    fn bus_occupancy_serialises() {
        // 16-word SDRAM reads hold the bus 16 cycles each; 24 threads cannot beat that.
        let p = Program::new(vec![Step::read(Memory::Sdram, 16)]);
        let r = machine(6, 4, &[p]).run(Stop::Packets(2000));
        assert!(r.cycles >= 2000 * 16);
        assert!(r.cycles < 2000 * 16 + 200);
        let s = r.memory_stats(Memory::Sdram);
        assert_eq!(s.busy_cycles, 2000 * 16);
        assert!(s.queued_cycles > 0);
    }

    #[test]
    fn engine_bound_work_gains_nothing_from_threads() {
        let p = Program::new(vec![Step::Compute(100)]);
        let one = machine(1, 1, core::slice::from_ref(&p)).run(Stop::Packets(50));
        let four = machine(1, 4, &[p]).run(Stop::Packets(50));
        assert_eq!(one.cycles, 50 * 101);
        assert_eq!(four.cycles, one.cycles);
        assert_eq!(four.engine_busy, vec![50 * 101]);
    }

    #[test]
    fn arrivals_pace_the_packets() {
        let p = Program::new(vec![Step::Compute(10), Step::read(Memory::Sram, 1)]);
        let mut m = machine(1, 2, core::slice::from_ref(&p));
        m.set_arrival_interval(1000);
        let r = m.run(Stop::Packets(5));
        for (i, c) in r.completions.iter().enumerate() {
            assert_eq!(c.arrival, i as u64 * 1000);
            assert_eq!(c.start, c.arrival);
            assert_eq!(c.service_cycles(), p.unloaded_cycles(&P));
        }
    }

    #[test]
    fn a_full_receive_fifo_drops_arrivals() {
        let p = Program::new(vec![Step::Compute(199)]);
        // Offered every 100 cycles, served every 200: half must drop once the FIFO is full.
        let mut m = machine(1, 1, core::slice::from_ref(&p));
        m.set_arrival_interval(100);
        let r = m.run(Stop::Packets(1000));
        assert_eq!(r.packets() + r.dropped, 1000);
        assert!((480..=520).contains(&r.dropped), "{}", r.dropped);
        // Every admitted packet waited at most a full FIFO's worth of service.
        assert!(
            r.completions
                .iter()
                .all(|c| c.start - c.arrival <= 17 * 200)
        );
        // 1000-byte packets take 16 mpackets each: the FIFO holds one, so more drop.
        m.set_packet_bytes(1000);
        let big = m.run(Stop::Packets(1000));
        assert!(big.dropped > r.dropped, "{} vs {}", big.dropped, r.dropped);
        // Offered below capacity: nothing drops and nothing waits.
        m.set_arrival_interval(250);
        let light = m.run(Stop::Packets(1000));
        assert_eq!(light.dropped, 0);
        assert!(light.completions.iter().all(|c| c.start == c.arrival));
    }

    #[test]
    fn programs_alternate_and_periodic_thread_runs() {
        // Threads are not preempted: a packet thread must swap out (here on a scratch
        // reference) for the periodic thread to get the engine.
        let a = Program::new(vec![Step::Compute(5), Step::read(Memory::Scratch, 1)]);
        let b = Program::new(vec![Step::Compute(9), Step::read(Memory::Scratch, 1)]);
        let mut m = machine(1, 2, &[a, b]);
        m.set_periodic(
            0,
            1,
            Program::new(vec![Step::read(Memory::Scratch, 1)]),
            100,
        )
        .unwrap();
        let r = m.run(Stop::Cycle(1000));
        // Packets alternate 5 and 9 compute cycles; each waits at least its scratch read.
        assert!(r.completions.len() > 20);
        assert!(
            r.completions
                .iter()
                .all(|c| c.service_cycles() >= 5 + 4 * (c.packet % 2) + 14)
        );
        assert!((9..=11).contains(&r.periodic_runs), "{}", r.periodic_runs);
        assert_eq!(r.cycles, 1000);
    }

    #[test]
    fn runs_are_deterministic() {
        let ps = [
            Program::new(vec![
                Step::Compute(3),
                Step::read(Memory::Sram, 1),
                Step::write(Memory::Sdram, 2),
            ]),
            Program::new(vec![
                Step::read(Memory::Sdram, 4),
                Step::Compute(11),
                Step::TransmitMpacket,
            ]),
        ];
        let m = machine(6, 4, &ps);
        assert_eq!(m.run(Stop::Packets(5000)), m.run(Stop::Packets(5000)));
    }

    #[test]
    fn bad_configs_and_loads_are_errors() {
        let bad = MachineConfig {
            engines: 7,
            threads_per_engine: 1,
        };
        assert_eq!(
            Machine::new(P, bad).err(),
            Some(ConfigError::Engines { asked: 7, have: 6 })
        );
        let bad = MachineConfig {
            engines: 1,
            threads_per_engine: 0,
        };
        assert!(matches!(
            Machine::new(P, bad),
            Err(ConfigError::Threads { .. })
        ));
        let mut zero = P;
        zero.core_mhz = 0;
        assert!(matches!(
            Machine::new(zero, MachineConfig::SERIAL),
            Err(ConfigError::Params(_))
        ));
        let mut m = Machine::new(P, MachineConfig::SERIAL).unwrap();
        assert_eq!(
            m.load(1, vec![Program::new(vec![Step::Compute(1)])]),
            Err(LoadError::NoSuchEngine(1))
        );
        assert!(matches!(
            m.load(0, vec![Program::new(vec![Step::Compute(3000)])]),
            Err(LoadError::InstructionStoreOverflow { .. })
        ));
        // Nothing loaded: a run completes nothing and terminates.
        assert_eq!(m.run(Stop::Packets(10)).packets(), 0);
    }
}
