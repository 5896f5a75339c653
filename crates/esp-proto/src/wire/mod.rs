//! Zero-copy views over ESP bytes, and representations of their valid values.
//!
//! Each format has a checked view (`new_checked` guarantees no accessor can panic) and a
//! `Repr` that parses from and emits into it, as in smoltcp's `wire` module.

mod header;
mod ip;

pub use header::{ErrCode, Header, HeaderRepr, Loc, WireError};
#[cfg(feature = "alloc")]
pub use ip::piggyback;
pub use ip::{
    Form, IpError, Located, addresses, decrement_ttl, dedicated_ipv4_len, dedicated_ipv6_len,
    emit_dedicated_ipv4, emit_dedicated_ipv6, ipv4_checksum_ok, locate, locate_in, piggyback_into,
    piggybacked_len, reflect,
};
