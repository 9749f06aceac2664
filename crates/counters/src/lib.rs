//! Compact, durable counters (issue 4 fills this crate in).
