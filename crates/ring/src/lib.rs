//! Keys to logical shards to nodes (issue 3 fills this crate in).
