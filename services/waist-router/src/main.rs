//! `waist-router` (skeleton).
fn main() {}
