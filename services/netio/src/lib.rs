//! # netio — the I/O of the waist daemons
//!
//! The daemons are thin tokio shells around sans-IO cores; everything that touches the
//! operating system lives here, shared by all of them:
//!
//! * [`config`]: TOML configs whose errors name the file, line and key; the `[[link]]`
//!   section and its emulation parameters.
//! * [`link`]: links — IP-in-UDP to one peer, or a TUN device — polled together by one
//!   task, each with optional user-space emulation ([`emulate`]) of what it sends.
//!
//! No protocol logic: a daemon hands frames to its core and sends what the core returns.
#![warn(missing_docs)]

pub mod config;
pub mod emulate;
pub mod link;
