//! The application layer of a stateless server (§3, §4, §7.1): user continuations and the
//! minisocket event API.
//!
//! * [`ucont`]: application-MACed user continuations bound to the connection, and the
//!   standard input and output formats clients understand.
//! * [`minisock`]: the event queue (OPEN / REQUEST / CLOSE in receive order) and the
//!   transient minisockets the application answers through; extract and install move them
//!   between replicas.
//!
//! * [`service`]: a whole server host for a daemon: IP packets in, the application's
//!   answers out as IP packets.
//! * [`object`]: synthetic objects named by their length (simulations, benchmarks).
//! * [`http`]: HTTP/1.1 GET and HEAD out of an object store.
//!
//! All sit on [`Server`] and add no per-connection state: the
//! queue holds unprocessed events only.

pub mod http;
pub mod minisock;
pub mod object;
pub mod service;
pub mod ucont;

pub use http::{Answer, HttpApp, HttpError, HttpStats, MemStore, ObjectInfo, Request, Store};
pub use minisock::{
    EventQueue, MigrationKey, Minisocket, MskError, PushError, QueueStats, SendReport,
};
pub use service::{PartsSink, RejectedCounts, Service, ServiceError, ServiceStats};
pub use ucont::{
    Absorbed, Binding, MAX_UCONT_BODY, UcontError, UcontKey, UserContinuation, absorb, bundle,
    unbundle,
};

use crate::server::Server;

/// A stateless server application: answers one event at a time through its minisocket
/// (send, refuse, or drop it), keeping nothing per connection between events.
///
/// [`ObjectApp`](object::ObjectApp) serves synthetic objects,
/// [`HttpApp`] serves HTTP/1.1 GETs out of an object store.
pub trait Application {
    /// Answers `msk`, handing the TCP segments it sends to `sink`.
    fn handle(&mut self, msk: Minisocket, server: &Server, sink: &mut dyn FnMut(&[u8]));
}
