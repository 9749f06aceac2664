//! # shardkit-links
//!
//! The short-link domain of shardkit (the TinyURL service), with no HTTP in it, so the
//! server, the command line and the PostgreSQL backend (`shardkit-pg`) share one set of rules.
//!
//! - [`Codec`]: a code's first character names its shard group (hash of the
//!   normalized long URL over 62 groups, or of the alias for an aliased link); the rest is base62 of that group's ticket
//!   sequence number, passed through a keyed [`Feistel`] bijection so codes look random
//!   yet never collide. 7 characters for the first 62^7 links, longer only past that.
//! - [`normalize_url`]: only `http`/`https` URLs with a host, at most 8 KiB, never
//!   the service's own short domain.
//! - [`validate_alias`]: custom aliases, provably disjoint from generated codes.
//! - [`RedirectRule`]: where a link sends visitors of some device, language, country,
//!   query or network instead of its URL.
//! - [`Link`]: the stored record; [`LinkStore`]: storage behind a trait;
//!   [`SegmentLinkStore`]: the embedded implementation (a code is located by
//!   inverting its permutation, then read through a dense offset index from
//!   append-only segment files of packed records; ids and the reuse index folded
//!   from redb into packed sorted runs every [`FOLD_LINKS`] links; redb for aliases,
//!   tags and what is not folded yet; memory is a set page cache); [`CompactLinkStore`] (records in redb) and
//!   [`RedbLinkStore`] (JSON records and a code index): the previous embedded formats,
//!   kept for measurements and converted on open; [`GroupCommit`]: concurrent
//!   writers share one durable commit; [`conformance`]: the suite every
//!   store must pass.
//! - [`Minter`]: codes from per-group ticket sequences ([`shardkit_ids::tickets`]).
//!
//! ```
//! use shardkit_links::{Codec, Feistel};
//! let codec = Codec::scrambled(Feistel::new([7; 16]));
//! let code = codec.encode(5, 41).unwrap();
//! assert_eq!(code.len(), 7);
//! assert_eq!(codec.decode(&code), Some((5, 41)));
//! ```

#![warn(missing_docs)]

mod alias;
mod code;
mod compact_store;
pub mod conformance;
mod error;
mod feistel;
mod group_commit;
mod key;
mod locator;
mod minter;
mod model;
mod nowait;
mod offset_index;
mod record;
mod redb_store;
mod rules;
mod run_set;
mod segment_batch;
mod segment_convert;
#[cfg(test)]
mod segment_fold_tests;
mod segment_log;
mod segment_store;
#[cfg(test)]
mod segment_store_tests;
mod slot_table;
mod sorted_run;
mod store;
mod url_rules;

pub use alias::{is_reserved, validate_alias, MAX_ALIAS_LEN, RESERVED};
pub use code::{
    group_of, group_within, looks_like_code, Codec, GROUPS, MIN_CODE_LEN, MIN_REST_WIDTH,
};
pub use compact_store::CompactLinkStore;
pub use error::{AliasError, CodeError, LinkError, StoreError, UrlError};
pub use feistel::Feistel;
pub use group_commit::{expect_inserted, GroupCommit, GroupStats, MAX_GROUP_LINKS};
pub use key::load_or_create_key;
pub use minter::{GroupSequences, Minter, TicketSequences};
pub use model::{
    alias_key, day_of, format_day, format_time, now_ms, parse_day, parse_time, validate_tags,
    validate_title, Link, Redirect, MAX_TAGS, MAX_TITLE_LEN,
};
pub use redb_store::RedbLinkStore;
pub use rules::{
    normalize_rules, Condition, Device, QueryMatch, QueryValue, RedirectRule, RuleFields,
    CIDR_PATTERN, COUNTRY_PATTERN, LANGUAGE_PATTERN, MAX_LANGUAGE_LEN, MAX_QUERY_PARAMS,
    MAX_QUERY_TEXT, MAX_RULES,
};
pub use segment_store::{segments_dir, FoldStats, SegmentLinkStore, FOLD_LINKS};
pub use store::{write_one, InsertOutcome, LinkStore, Write, Written};
pub use url_rules::{
    has_url_shape, normalize_url, OwnOrigin, MAX_URL_CHARS, MAX_URL_LEN, URL_PATTERN,
};
