//! The shim dissector (filled in by its own change).
