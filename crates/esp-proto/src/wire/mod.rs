//! Zero-copy views over ESP bytes, and representations of their valid values.
//!
//! Each format has a checked view (`new_checked` guarantees no accessor can panic) and a
//! `Repr` that parses from and emits into it, as in smoltcp's `wire` module.

mod header;

pub use header::{Header, HeaderRepr, Loc, WireError};
