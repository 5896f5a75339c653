//! (being written under issue 5)
