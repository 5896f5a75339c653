//! # stream-handlers — composable functions on application messages, on the data path
//!
//! The stream handlers of Gavrilovska et al. (stream handlers on attached network
//! processors, §3): lightweight, composable, parameterisable functions applied to
//! application-level messages as they pass through a node. This crate holds the handlers
//! themselves, run natively on real bytes, and what each one *does* to a message as plain
//! counts ([`Work`]: instructions, words of SRAM and SDRAM touched, output copies). What
//! that costs on a given machine is the machine model's business: `ixp-model` prices it on
//! the IXP1200's microengines and its host.
//!
//! No I/O, no clock, no global state: `#![no_std]` with `alloc`; bad input (a short
//! payload, a malformed fragment or control message) is a typed error or a dropped
//! message, never a panic.
//!
//! ```text
//!  rudp (fragment ⇄ Reassembler)    application messages ⇄ 24-byte-header packets
//!     └─► stream (Message, Field, Predicate, StreamHandler, Work)
//!            └─► handlers: route, mirror, filter, dest-filter, multicast, delta, format
//!                   └─► deploy (Point: Rx, Tx, in transit, host kernel, host user;
//!                               Deployment = pipeline; native runs; work per point)
//!  control (ControlMessage: set rate, predicate, a destination's predicate, fan-out,
//!           route; select; terminate)
//!  format (Format: named, typed fields ─► values, and Fields for predicates)
//!  spec (a deployment as one line) ─► node (StreamNode: UDP 7400/7401 in, datagrams out;
//!        cut-through or whole; admission by measured headroom) ◄─ envelope (control)
//!  endpoint (Publisher, Subscriber: a stream's two ends)
//! ```
//!
//! * [`stream`]: the [`StreamHandler`] trait, [`Message`] and its [`Destination`], [`Field`]s
//!   and [`Predicate`]s over compact binary message bodies, run-time [`Param`]s, [`Work`],
//!   and [`Needs`]: whether a handler decides on a prefix (per packet) or needs the whole
//!   message.
//! * [`handlers`]: the paper's handlers (§4, Fig. 5); customised multicast is an Rx-side
//!   mirror composed with Tx-side per-destination filters.
//! * [`deploy`]: deployment points and compositions; native runs; work per point.
//! * [`rudp`]: the RUDP-like protocol: 24-byte header, fragmentation, reassembly at most
//!   once per message, in bounded memory, with timeouts and eviction (time comes in as a
//!   `now` argument).
//! * [`control`]: the control messages that change handlers at run time.
//! * [`format`]: declared message formats (§3.1): named fields of ten number types, a
//!   text form (`seq:u32@0 ts:u64@4 lat:f32le@12`), typed reads and writes, the [`Field`]
//!   a predicate reads by name; the image frame and flight record formats and generators.
//! * [`spec`]: a deployment as one line of text (`to ADDR:PORT… | fields flight |
//!   multicast 0=status==2 1=all`), printed back in its grammar.
//! * [`envelope`]: the control channel's datagrams (deploy, control, reply).
//! * [`node`]: the overlay node, sans-IO: streams through their handlers, cut-through on
//!   the first fragment or whole, control at message boundaries, admission by headroom
//!   measured with the caller's [`Meter`](node::Meter), overruns moved to the host.
//! * [`endpoint`]: a stream's two ends, sans-IO: the [`Publisher`](endpoint::Publisher)
//!   (generated messages as RUDP fragments) and the [`Subscriber`](endpoint::Subscriber)
//!   (reassembly; each message checked against what was generated, latency, gaps,
//!   duplicates, reordering), as `waist stream pub` and `waist stream sub` run them.
//!
//! ## A tour
//!
//! A message is fragmented, reassembled, and sent through a customised multicast: each
//! client gets the copies its own predicate keeps. Control messages then change the Tx-side
//! filters at run time: every client's predicate, then one client's.
//!
//! ```
//! use stream_handlers::control::ControlMessage;
//! use stream_handlers::deploy::Point;
//! use stream_handlers::handlers::CustomMulticast;
//! use stream_handlers::rudp::{fragment, Reassembler, ReassemblyConfig};
//! use stream_handlers::{Field, Message, Needs, Param, Predicate};
//!
//! // A 300-byte message in 128-byte fragments, reassembled whatever their order.
//! let mut body = vec![0u8; 300];
//! body[0] = 12; // the field the clients filter on
//! let packets = fragment(1, 7, 0, &body, 128)?;
//! assert_eq!(packets.len(), 3);
//! let mut r = Reassembler::new(ReassemblyConfig::default());
//! let mut assembled = None;
//! for (t, p) in (0..).zip(packets.iter().rev()) {
//!     let now = sansio::Instant::from_micros(t * 10); // the caller's clock
//!     assembled = r.handle_fragment(now, p)?.or(assembled);
//! }
//! let assembled = assembled.expect("all fragments arrived");
//! assert_eq!(assembled.payload, body);
//!
//! // Two clients, each customised by its own predicate on a 1-byte field.
//! let f = Field::new(0, 1);
//! let mc = CustomMulticast::new(vec![1, 2], vec![(1, Predicate::Lt(f, 10)), (2, Predicate::Ge(f, 10))]);
//! let mut dep = mc.deployment(); // mirror on the Rx side, filters on the Tx side
//! assert_eq!(dep.stages[0].point, Point::RxSide);
//! let out = dep.run(Message::new(0, assembled.payload.clone()));
//! assert_eq!(out.len(), 1);
//! assert_eq!(out[0].dest, 2);
//!
//! // What that costs, as counts: the Tx-side filter runs once per copy.
//! let work = dep.work_by_point(300);
//! assert_eq!(work.outputs, 2);
//! assert!(work.at(Point::TxSide).instructions > 0);
//!
//! // The host gives every client the values below 20, by a control message to stage 1
//! // (the Tx-side filters), as bytes on the wire.
//! let mut wire = Vec::new();
//! let p = Predicate::Lt(f, 20);
//! ControlMessage::SetPredicate { handler: 1, predicate: p }.emit(&mut wire);
//! let ControlMessage::SetPredicate { handler, predicate } = ControlMessage::parse(&wire)? else {
//!     unreachable!("a SetPredicate parses back as one")
//! };
//! dep.stages[usize::from(handler)].handler.configure(Param::Predicate(predicate))?;
//! assert_eq!(dep.run(Message::new(0, assembled.payload.clone())).len(), 2);
//!
//! // Then re-parameterises client 2 alone (values of at least 15): client 1 keeps its own.
//! let m = ControlMessage::SetDestPredicate { handler: 1, dest: 2, predicate: Predicate::Ge(f, 15) };
//! let (stage, param) = m.param().expect("it carries a handler parameter");
//! dep.stages[usize::from(stage)].handler.configure(param)?;
//! let out = dep.run(Message::new(0, assembled.payload));
//! assert_eq!(out.iter().map(|m| m.dest).collect::<Vec<_>>(), [1]);
//!
//! // The multicast reads one byte and changes none: a node can run it on a message's
//! // first fragment (cut-through) instead of waiting for the whole message.
//! assert_eq!(dep.needs(), Needs::Prefix(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
// docs.rs builds with `--cfg docsrs`: mark feature-gated items with their features.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod control;
pub mod deploy;
pub mod endpoint;
pub mod envelope;
pub mod format;
pub mod handlers;
pub mod node;
pub mod rudp;
pub mod spec;
pub mod stream;

pub use stream::{
    Destination, Field, HandlerError, Message, Needs, Param, Predicate, StreamHandler, Work, words,
};
