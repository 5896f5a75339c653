//! The esp dissector (filled in by its own change).
