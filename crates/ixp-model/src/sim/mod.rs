//! The discrete-event, cycle-level simulation of the microengines.
//!
//! A [`Machine`] has up to six microengines of up to four hardware threads, the three
//! memories ([`Memories`](crate::mem::Memories)) and the IX bus
//! ([`IxBus`](crate::fifo::IxBus)). Each engine runs one thread at a time; a thread runs its per-packet [`Program`] until it makes a memory or FIFO
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

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::engine::{LoadError, Program, check_fits};
use crate::mem::MemoryStats;
use crate::params::{Memory, Params, ParamsError};

mod run;
#[cfg(test)]
mod tests;

use run::{Engine, Run, Thread};

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
    /// When the source has offered exactly this many packets and every one taken has
    /// completed (with paced arrivals, those the receive FIFO dropped are not run).
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
