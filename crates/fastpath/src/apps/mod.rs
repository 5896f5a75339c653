//! Table 3's applications of source hashing, one per layer:
//!
//! | layer | application | flow id | module |
//! |---|---|---|---|
//! | data link | learning bridge | link (MAC) address | [`bridge`] |
//! | network | routing cache in front of LPM | destination, source, flow number | [`route`] |
//! | timer-based transport | RPC duplicate detection | caller id | [`rpc`] |
//! | user level | packet-filter cache in front of 16 filters | the bytes the filters read | [`filter`] |
//!
//! In every one the flow id is built (or checked) by the receiver from the header fields
//! its cached decision depends on, and the sender's source hash only picks the slot. So an
//! index that is not random, or chosen to collide, can slow a flow down but can never
//! make the receiver answer one flow with another's processing.

pub mod bridge;
pub mod filter;
pub mod route;
pub mod rpc;
