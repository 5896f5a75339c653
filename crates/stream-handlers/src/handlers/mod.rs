//! The paper's stream handlers (§4, Fig. 5): content-based routing, mirroring, filtering,
//! destination-customised multicast, delta and format.
//!
//! Each is a [`StreamHandler`](crate::stream::StreamHandler): it transforms real bytes
//! natively and states its [`Work`](crate::stream::Work) per message size.

mod forward;
mod multicast;
mod transform;

pub use forward::{ContentRouter, DestFilter, Filter, Mirror};
pub use multicast::{CustomMulticast, naive_multicast};
pub use transform::{ByteSwap, Delta};
