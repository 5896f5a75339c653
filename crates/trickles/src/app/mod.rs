//! The application layer of a stateless server (§3, §4, §7.1): user continuations and the
//! minisocket event API.
//!
//! * [`ucont`]: application-MACed user continuations bound to the connection, and the
//!   standard input and output formats clients understand.
//! * [`minisock`]: the event queue (OPEN / REQUEST / CLOSE in receive order) and the
//!   transient minisockets the application answers through; extract and install move them
//!   between replicas.
//!
//! Both sit on [`Server`](crate::server::Server) and add no per-connection state: the
//! queue holds unprocessed events only.

pub mod minisock;
pub mod ucont;

pub use minisock::{
    EventQueue, MigrationKey, Minisocket, MskError, PushError, QueueStats, SendReport,
};
pub use ucont::{
    Absorbed, Binding, MAX_UCONT_BODY, UcontError, UcontKey, UserContinuation, absorb, bundle,
    unbundle,
};
