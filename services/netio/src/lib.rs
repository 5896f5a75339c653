//! netio (skeleton)
