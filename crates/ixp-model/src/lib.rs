//! # ixp-model — the IXP1200 network processor, ESS on it, and stream handlers priced on it
//!
//! A discrete-event, cycle-level model of an IXP1200 and its host, after Gavrilovska et al.
//! (stream handlers on attached network processors) and the ESP paper's §5–§6 (ESS on the
//! IXP1200): the machine, ESS and ESP on it, and the cost of stream handlers (the
//! `stream-handlers` crate, which runs them natively on real bytes) on it. The paper reproductions are in the crate's REPRODUCTION.md.
//!
//! ## The machine and ESS on it
//!
//! No I/O, no clock, no randomness of its own: time is simulated core cycles, seeds come in
//! as arguments. Every cost is a named field of [`Params`] ([`Params::IXP1200`]: 232 MHz,
//! six microengines × four threads, SRAM 32-bit at core clock, SDRAM 64-bit at half clock,
//! 4 KB scratch, 64-byte mpackets, four 100 Mb/s ports); no module has a number of its own.
//!
//! ```text
//!  params ──► mem (SRAM/SDRAM/scratch: latency + bus occupancy)   fifo (RFIFO/TFIFO, IX bus, ports)
//!     │            ▲                                                  ▲
//!     └─► engine (Program = Steps, 2 K-word store) ──► sim (Machine: 6 engines × 4 threads,
//!                                                        swap on each reference, event queue)
//!  ess_model (Table 1 access sequences, placements, cleaner, chains from the real `ess`)
//!     └─► esp (COUNT, COMPARE = classification + ESS calls; latency and throughput runs)
//! ```
//!
//! * [`params`]: the cost parameters and unit conversions (cycles ⇄ ns, headroom per packet).
//! * [`mem`]: memories as timing resources: FCFS bus occupancy, fixed latency.
//! * [`engine`]: [`Program`]s of [`Step`]s; [`LoadError`] when the instruction store overflows.
//! * [`fifo`]: receive/transmit FIFOs of mpackets, the IX bus, the ports.
//! * [`sim`]: the discrete-event [`Machine`]; [`Stop`] by packets or by cycle; [`RunReport`].
//! * [`ess_model`]: `find`, `find_create`, `read`, `write` as 32-bit access sequences
//!   (ESP paper Table 1) with the tables in SRAM, SDRAM or split; the cleaner; chain
//!   lengths sampled from the real [`ess::Ess`].
//! * [`esp`]: COUNT and COMPARE over those calls (ESP paper Tables 2–3).
//! * [`strongarm`]: the StrongARM core as the executor the paper measured Tables 1–2 on:
//!   in order, no threads, measured instruction counts at a CPI, stalling accesses.
//!
//! ```
//! use ixp_model::ess_model::{EssCall, EssPlacement};
//! use ixp_model::esp::{latency_cycles, packet_program, saturated_run, EspCase, EspInstruction, LookupStyle};
//! use ixp_model::{MachineConfig, Params};
//!
//! let p = Params::IXP1200;
//! // find() at chain length 1 with the store in SRAM: 5 accesses (Table 1).
//! let find = EssCall::Find { examined: 1 };
//! assert_eq!(find.access_count(), 5);
//! let cycles = latency_cycles(&p, &find.program(&p, &EssPlacement::SRAM))?;
//! assert!(p.cycles_to_us(cycles as f64) < 1.0);
//!
//! // COUNT packets through all 24 threads, store in SRAM: far beyond one thread's rate.
//! let case = EspCase::bound(LookupStyle::Once);
//! let prog = packet_program(&p, EspInstruction::Count, &EssPlacement::SRAM, &case);
//! let full = saturated_run(&p, MachineConfig::full(&p), &[prog.clone()], 2_400)?;
//! let serial = saturated_run(&p, MachineConfig::SERIAL, &[prog], 100)?;
//! assert!(full.throughput_pps(&p) > 10.0 * serial.throughput_pps(&p));
//! # Ok::<(), ixp_model::esp::EspError>(())
//! ```
//!
//! ## Stream handlers on it (stream-handlers paper §3–§4)
//!
//! The handlers themselves (the trait, route, mirror, filter, multicast, delta, format),
//! deployments, RUDP and control messages are the `stream-handlers` crate; each handler
//! states its [`Work`](stream_handlers::Work) as plain counts. This crate prices them.
//!
//! ```text
//!  stream_handlers::Work ──► costs (HandlerCosts: Params + runtime instruction counts; NpCycles)
//!  stream_handlers::deploy::Deployment
//!      └─► path (latency of a message; per-message load of wires, NP contexts, host CPU)
//!  host (HostParams)      stream_handlers::control ──► admission (headroom, host fallback)
//! ```
//!
//! * [`costs`]: [`costs::HandlerCosts`] (built on [`Params`]) and [`costs::NpCycles`], which
//!   prices a handler's work in microengine cycles.
//! * [`path`]: Fig. 4's latency and Fig. 5's throughput from the same parameters.
//! * [`host`]: the host's costs (stack, crossings, copies, per-destination sends).
//! * [`admission`]: run-time parameters and headroom-based placement.
//!
//! ```
//! use ixp_model::admission::Admission;
//! use ixp_model::path::{deployment_load, Machines};
//! use stream_handlers::deploy::Point;
//! use stream_handlers::handlers::CustomMulticast;
//! use stream_handlers::{Field, Message, Predicate};
//!
//! // Two clients, each customised by its own predicate on a 1-byte field.
//! let f = Field::new(0, 1);
//! let mc = CustomMulticast::new(vec![1, 2], vec![(1, Predicate::Lt(f, 10)), (2, Predicate::Ge(f, 10))]);
//! let mut dep = mc.deployment(); // mirror on the Rx side, filters on the Tx side
//! let out = dep.run(Message::new(0, vec![12, 0, 0, 0]));
//! assert_eq!(out.len(), 1);
//! assert_eq!(out[0].dest, 2);
//!
//! // The IXP sustains the 100 Mb/s input with it on 50 kB messages …
//! let load = deployment_load(&Machines::default(), &dep, 50_000);
//! assert!(load.throughput_mbps(50_000) > 90.0);
//! // … and admission keeps it on the NP at that rate (about 9,000 packets/s).
//! let (placed, decision) = Admission::new(9_000).place(dep, 50_000);
//! assert!(decision.on_np && placed.stages[0].point == Point::RxSide);
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod costs;
pub mod host;
pub mod params;

pub use params::{Memory, Params, ParamsError};
pub mod engine;
pub mod esp;
pub mod ess_model;
pub mod fifo;
pub mod mem;
pub mod sim;
pub mod strongarm;

pub use engine::{LoadError, Program, Step};
pub use sim::{ConfigError, Machine, MachineConfig, RunReport, Stop};
pub mod admission;
pub mod path;
