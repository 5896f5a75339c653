//! The snap dissector (filled in by its own change).
