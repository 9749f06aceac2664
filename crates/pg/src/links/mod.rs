//! [`PgLinkStore`]: shardkit-links' [`LinkStore`](shardkit_links::LinkStore) on the
//! cluster's logical shards.
//!
//! Routing. A generated code's first character names its group (`0..62`): the hash
//! of the normalized URL, or of the alias for a link minted with a custom alias. Group
//! `g` lives in logical shard `g mod S` ([`shard_of_group`]), and the shard map in
//! `shardkit_meta` names the server holding that shard. So:
//!
//! - by code (a redirect): one query on one shard, `shard_NNNN.links` by `code`;
//! - by alias: `link_aliases` lives in the shard of the alias's group, and so does
//!   the link (its code was minted in that group): one query joining the two, on one
//!   shard. A link imported with a code from another group (minted before aliases
//!   chose the group) takes a second read, on its code's shard;
//! - long -> short (`"reuse": true`): the URL's group (the same hash the minter used)
//!   names the shard whose `link_urls` index lists the reusable links of that URL; for a
//!   link created by the server its code is in the same group, so both reads hit one
//!   shard (a link whose target was later replaced may sit in another);
//! - replace and delete of a resolved link: by its code, one shard (plus the URL and
//!   alias index rows where they live);
//! - by id alone (`get`, `delete`): ids the store made (each shard's `next_id()`)
//!   carry their shard, so one query; an id of another kind (an imported link) is then
//!   looked for on every shard;
//! - `list` and `count`: every shard that holds groups, one `UNION ALL` query per server.
//!
//! Following the map. The store reads the shard map at start and again whenever a
//! call fails (at most every [`live_map::REFRESH_EVERY`]): after `shardkit pg
//! move-shard` the old copy is gone, the call fails, the store finds the newer map
//! and retries once on the shard's new server. A server that is lost fails only the
//! calls for its shards (the HTTP layer answers 503 with the error, which names the
//! server); the pools reconnect when it is back.
//!
//! Atomicity. Within one server, a batch's inserts share a transaction (all its
//! shards'; see `shards/batch.rs`). A batch spanning servers is not one distributed
//! transaction: duplicates are checked before anything is written (a code on its
//! shard; an id on the shard it names when the link is written there, else on every
//! shard), aliases are claimed first (a unique key in their shard, so two servers never
//! hand one alias to two links), and a failure afterwards undoes the claims, best
//! effort.

mod live_map;
mod rows;
mod shards;
mod store;

pub use live_map::REFRESH_EVERY;
pub use store::PgLinkStore;

/// The logical shard holding group `group` in a cluster of `logical_shards` shards.
pub fn shard_of_group(group: u8, logical_shards: u32) -> u32 {
    u32::from(group) % logical_shards.max(1)
}

#[cfg(test)]
mod tests {
    use super::shard_of_group;

    #[test]
    fn groups_route_to_shards() {
        assert_eq!(shard_of_group(5, 4), 1);
        assert_eq!(shard_of_group(61, 8192), 61);
        assert_eq!(shard_of_group(61, 1), 0);
    }
}
