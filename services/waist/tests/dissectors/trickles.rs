//! The trickles dissector (filled in by its own change).
