//! Per-packet cost of the node (filled in below).
fn main() {}
