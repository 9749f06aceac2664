//! The bound shared by every in-memory cache of links.

/// The most links `[links] cache_entries` may keep in the redirect cache (and `[regions]
/// remote_cache_entries` in the cache of other regions' links): its entries and its
/// doorkeeper's filter are allocated from it, and a larger value would not fit in memory.
pub const MAX_CACHE_ENTRIES: usize = 100_000_000;
