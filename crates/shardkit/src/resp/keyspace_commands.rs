//! Commands about keys rather than values: `TYPE`, `TTL`/`PTTL` and `SCAN`, so tools
//! that walk or inspect a Redis keyspace work on counters.
//!
//! Types: a row key `<counter>:<id>` is a `hash` (its fields are the counter's
//! columns), or a `string` when the counter's only column is `value` (what `INCR
//! page:42` made); a cell key `<counter>:<id>:<column>` is a `string`. A key that holds
//! no value is `none` (the zero-and-absence rule, [`super::values`]). Nothing expires:
//! `TTL` answers -1 for a key that exists and -2 for one that does not, as Redis does.
//!
//! `SCAN` walks the counters in name order, each one lock stripe after the other, and
//! the rows of a stripe in the order of a fixed 43-bit hash of their key. The cursor is
//! (counter's place in name order: 16 bits, stripe: 5 bits, hash of the first row not
//! yet returned: 43 bits). Stripes are fixed and the hash order does not depend on the
//! tables, so every row stored for the whole walk is returned, once (twice only if two
//! rows of a stripe share a 43-bit hash across a page boundary); rows added or removed
//! meanwhile may or may not be. A counter created during a walk with a name that sorts
//! before the cursor's makes the walk repeat some rows, never skip any (counters are
//! not dropped). `COUNT` (default 10) is how many rows a call examines, but a call takes
//! at least 1/64 of a stripe: each call reads its whole stripe (the tables are not
//! ordered), so this bounds a whole walk to reading each row about 64 times.

use super::table::{Call, CommandSpec};
use super::values::{holds_value, strict_i64};
use shardkit_counters::{OwnedKey, STRIPES};
use shardkit_node::counters::{CounterKey, Counters, DEFAULT_COLUMN};
use shardkit_resp::glob;
use shardkit_resp::parse::Command;
use shardkit_resp::reply;

const KEYSPACE_READ: &[&str] = &["@keyspace", "@read", "@fast"];

/// The keyspace family's entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "type",
        arity: 2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: KEYSPACE_READ,
        group: "generic",
        summary: "The type of a key: hash (a row), string (a cell, or a row of a one-column counter) or none",
        run: type_of,
    },
    CommandSpec {
        name: "ttl",
        arity: 2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: KEYSPACE_READ,
        group: "generic",
        summary: "Seconds to live: -1 (counters do not expire), -2 for a key that holds nothing",
        run: ttl,
    },
    CommandSpec {
        name: "pttl",
        arity: 2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: KEYSPACE_READ,
        group: "generic",
        summary: "Milliseconds to live: -1 (counters do not expire), -2 for a key that holds nothing",
        run: ttl,
    },
    CommandSpec {
        name: "scan",
        arity: -2,
        flags: &["readonly"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@keyspace", "@read", "@slow"],
        group: "generic",
        summary: "Walk the rows of every counter: SCAN cursor [MATCH pattern] [COUNT n] [TYPE hash|string]",
        run: scan,
    },
];

/// The type word of a key, per the module's rules.
fn key_type(counters: &Counters, raw: &[u8]) -> Result<&'static str, shardkit_counters::Error> {
    let Ok(key) = CounterKey::parse(raw) else {
        return Ok("none");
    };
    if let Some(column) = key.column {
        return Ok(if holds_value(counters, &key, column)? {
            "string"
        } else {
            "none"
        });
    }
    let stored = counters
        .read(|e| e.exists(key.counter, key.key()))?
        .unwrap_or(false);
    if !stored {
        return Ok("none");
    }
    Ok(row_type(counters, key.counter))
}

/// `string` for a counter whose only column is `value`, else `hash`.
fn row_type(counters: &Counters, counter: &str) -> &'static str {
    match counters.engine.columns(counter) {
        Ok(cols) if cols.len() == 1 && cols[0].name == DEFAULT_COLUMN => "string",
        _ => "hash",
    }
}

fn type_of(call: &mut Call<'_, '_>) {
    match key_type(call.counters, call.cmd.arg(1).unwrap_or_default()) {
        Ok(t) => reply::simple(call.out, t),
        Err(e) => super::values::engine_error(call.out, &e),
    }
}

fn ttl(call: &mut Call<'_, '_>) {
    match key_type(call.counters, call.cmd.arg(1).unwrap_or_default()) {
        Ok("none") => reply::integer(call.out, -2),
        Ok(_) => reply::integer(call.out, -1),
        Err(e) => super::values::engine_error(call.out, &e),
    }
}

/// Bits of a lone node's cursor that hold the position within a stripe.
pub const POSITION_BITS: u32 = 43;
/// Bits that hold the stripe, above the position.
const STRIPE_BITS: u32 = 5;
/// Bits that hold the counter's place in name order, above the stripe.
const COUNTER_BITS: u32 = 16;
/// Counters a cursor can tell apart (by their place in name order).
const MAX_COUNTERS: usize = 1 << COUNTER_BITS;
/// A stripe is walked in at most about this many calls, whatever `COUNT` says, so a
/// whole walk examines each row at most this many times.
const CALLS_PER_STRIPE: usize = 64;

/// A row's place in its stripe's walk: a fixed hash of its key, `bits` wide. Rows are
/// visited in this order; the cursor is the place of the first row not yet returned.
fn position(key: &OwnedKey, bits: u32) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match key {
        OwnedKey::Id(id) => id.hash(&mut h),
        OwnedKey::Name(name) => name.hash(&mut h),
    }
    h.finish() >> (64 - bits)
}

/// The cursor of (counter by name order, stripe, position `bits` wide).
fn cursor_of(counter: usize, stripe: usize, position: u64, bits: u32) -> u64 {
    ((counter as u64) << (bits + STRIPE_BITS)) | ((stripe as u64) << bits) | position
}

/// (counter by name order, stripe, position) of a cursor whose position is `bits`
/// wide (bits above the counter's are not read).
fn parts_of(cursor: u64, bits: u32) -> (usize, usize, u64) {
    (
        ((cursor >> (bits + STRIPE_BITS)) & ((1 << COUNTER_BITS) - 1)) as usize,
        ((cursor >> bits) & ((1 << STRIPE_BITS) - 1)) as usize,
        cursor & ((1 << bits) - 1),
    )
}

/// What a `SCAN` call asked for.
pub struct ScanOptions<'a> {
    /// Where the walk goes on from (0: the start).
    pub cursor: u64,
    /// `MATCH`: a glob every key returned matches.
    pub pattern: Option<&'a [u8]>,
    /// `COUNT`: about how many rows this call examines (default 10).
    pub count: usize,
    /// `TYPE`, lowercased: the type word of every key returned.
    pub kind: Option<Vec<u8>>,
}

impl<'a> ScanOptions<'a> {
    /// The options of `SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]`, or the error
    /// Redis gives.
    pub fn parse(cmd: &'a Command<'a>) -> Result<Self, &'static str> {
        let cursor = std::str::from_utf8(cmd.arg(1).unwrap_or_default())
            .ok()
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or("ERR invalid cursor")?;
        let mut options = ScanOptions {
            cursor,
            pattern: None,
            count: 10,
            kind: None,
        };
        let mut i = 2;
        while let Some(option) = cmd.arg(i) {
            let value = cmd.arg(i + 1).ok_or("ERR syntax error")?;
            match option.to_ascii_lowercase().as_slice() {
                b"match" => options.pattern = Some(value),
                b"count" => match strict_i64(value) {
                    Some(n) if n >= 1 => options.count = n as usize,
                    Some(_) => return Err("ERR syntax error"),
                    None => return Err(super::values::NOT_INTEGER),
                },
                b"type" => options.kind = Some(value.to_ascii_lowercase()),
                _ => return Err("ERR syntax error"),
            }
            i += 2;
        }
        Ok(options)
    }

    /// Whether a key of type `kind` named `key` is one to return.
    fn wants(&self, key: &str, kind: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind.as_bytes())
            && self
                .pattern
                .is_none_or(|p| glob::matches(p, key.as_bytes(), false))
    }
}

/// Names the keys of one row: called with the counter, its rows' type word and the
/// row, it hands each key (and its type word) to the last argument.
pub type KeyNames<'k> =
    dyn FnMut(&str, &'static str, &OwnedKey, &mut dyn FnMut(String, &'static str)) + 'k;

/// One walk of `SCAN` over the counters of one store.
pub struct Walk<'o, 'a> {
    /// The call's options.
    pub options: &'o ScanOptions<'a>,
    /// Rows examined so far in this call (over every store it walked).
    pub examined: usize,
    /// Keys to return so far.
    pub keys: Vec<String>,
}

impl<'o, 'a> Walk<'o, 'a> {
    /// A walk for `options`, nothing examined yet.
    pub fn new(options: &'o ScanOptions<'a>) -> Self {
        Walk {
            options,
            examined: 0,
            keys: Vec::new(),
        }
    }

    /// Walks `counters` from `cursor` (its position `bits` wide) until this call has
    /// examined `COUNT` rows (at least 1/64 of a stripe), naming each row's keys with
    /// `names`. Answers the cursor to go on from, or `None` when every counter of the
    /// store was walked. `by_counter`: every row of a counter has the counter's type,
    /// so a counter of another `TYPE` is skipped whole.
    pub fn counters(
        &mut self,
        counters: &Counters,
        cursor: u64,
        bits: u32,
        by_counter: bool,
        names: &mut KeyNames<'_>,
    ) -> Result<Option<u64>, String> {
        let engine = &counters.engine;
        let mut list = engine.counters();
        list.sort();
        if list.len() > MAX_COUNTERS {
            return Err(format!(
                "ERR SCAN walks at most {MAX_COUNTERS} counters; this server has more"
            ));
        }
        let options = self.options;
        let prefix = options
            .pattern
            .map(glob::literal_prefix)
            .unwrap_or_default();
        let (first_counter, first_stripe, first_position) = parts_of(cursor, bits);
        for (ordinal, name) in list.iter().enumerate().skip(first_counter) {
            let kind = row_type(counters, name);
            if !name_can_match(name.as_bytes(), prefix)
                || (by_counter
                    && options
                        .kind
                        .as_deref()
                        .is_some_and(|k| k != kind.as_bytes()))
            {
                continue;
            }
            let start = if ordinal == first_counter {
                first_stripe
            } else {
                0
            };
            for stripe in start..STRIPES {
                let from = if (ordinal, stripe) == (first_counter, first_stripe) {
                    first_position
                } else {
                    0
                };
                if self.examined >= options.count {
                    return Ok(Some(cursor_of(ordinal, stripe, from, bits)));
                }
                let Ok(rows) = engine.row_keys(name, stripe) else {
                    break;
                };
                let take =
                    (options.count - self.examined).max(rows.len().div_ceil(CALLS_PER_STRIPE));
                let (page, rest_from) = page_of(rows, from, take, bits);
                self.examined += page.len();
                let keys = &mut self.keys;
                for row in &page {
                    names(name, kind, row, &mut |key, kind| {
                        if options.wants(&key, kind) {
                            keys.push(key);
                        }
                    });
                }
                if let Some(rest_from) = rest_from {
                    return Ok(Some(cursor_of(ordinal, stripe, rest_from, bits)));
                }
            }
        }
        Ok(None)
    }
}

/// `SCAN`'s reply: the next cursor (0: the walk is over) and the keys.
pub fn reply_scan(out: &mut bytes::BytesMut, next: u64, keys: &[String]) {
    reply::array_header(out, 2);
    reply::bulk(out, next.to_string().as_bytes());
    reply::array_header(out, keys.len());
    for key in keys {
        reply::bulk(out, key.as_bytes());
    }
}

/// The text of a row's id in a key: the number, or the string key.
pub fn row_text(row: &OwnedKey) -> String {
    match row {
        OwnedKey::Id(id) => id.to_string(),
        OwnedKey::Name(name) => name.to_string(),
    }
}

fn scan(call: &mut Call<'_, '_>) {
    let options = match ScanOptions::parse(call.cmd) {
        Ok(options) => options,
        Err(e) => return reply::error(call.out, e),
    };
    let mut walk = Walk::new(&options);
    let walked = walk.counters(
        &call.state.counters,
        options.cursor,
        POSITION_BITS,
        true,
        &mut |name, kind, row, push| push(format!("{name}:{}", row_text(row)), kind),
    );
    match walked {
        Ok(next) => reply_scan(call.out, next.unwrap_or(0), &walk.keys),
        Err(e) => reply::error(call.out, &e),
    }
}

/// The rows of a stripe at or after position `from`, at least `take` of them (all
/// rows of the last position taken, so a page never splits a position), in position
/// order (positions `bits` wide); and where the rest starts, if anything is left.
fn page_of(rows: Vec<OwnedKey>, from: u64, take: usize, bits: u32) -> (Vec<OwnedKey>, Option<u64>) {
    let mut placed: Vec<(u64, OwnedKey)> = rows
        .into_iter()
        .map(|k| (position(&k, bits), k))
        .filter(|(p, _)| *p >= from)
        .collect();
    if placed.len() > take {
        placed.select_nth_unstable_by_key(take, |(p, _)| *p);
        let boundary = placed[take].0;
        let (mut page, rest): (Vec<_>, Vec<_>) =
            placed.into_iter().partition(|(p, _)| *p < boundary);
        // Keep whole positions: if `take` fell inside a run of equal positions, the
        // whole run goes in this page when nothing before it did.
        if page.is_empty() {
            let (run, rest): (Vec<_>, Vec<_>) = rest.into_iter().partition(|(p, _)| *p == boundary);
            page = run;
            let next = rest.iter().map(|(p, _)| *p).min();
            page.sort_unstable_by_key(|(p, _)| *p);
            return (page.into_iter().map(|(_, k)| k).collect(), next);
        }
        page.sort_unstable_by_key(|(p, _)| *p);
        return (page.into_iter().map(|(_, k)| k).collect(), Some(boundary));
    }
    placed.sort_unstable_by_key(|(p, _)| *p);
    (placed.into_iter().map(|(_, k)| k).collect(), None)
}

/// Whether keys of counter `name` (`name:…`) can start with `prefix`.
fn name_can_match(name: &[u8], prefix: &[u8]) -> bool {
    match prefix.iter().position(|&c| c == b':') {
        Some(colon) => name == &prefix[..colon],
        None => name.starts_with(prefix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_take_apart_into_what_made_them() {
        assert_eq!(STRIPES, 1 << STRIPE_BITS);
        for parts in [
            (0, 0, 0),
            (3, 31, (1 << POSITION_BITS) - 1),
            (MAX_COUNTERS - 1, 7, 12345),
        ] {
            assert_eq!(
                parts_of(
                    cursor_of(parts.0, parts.1, parts.2, POSITION_BITS),
                    POSITION_BITS
                ),
                parts
            );
        }
        // A cluster cursor keeps its group above the counter's bits.
        let bits = POSITION_BITS - 10;
        let cursor = (5u64 << 54) | cursor_of(MAX_COUNTERS - 1, 31, (1 << bits) - 1, bits);
        assert_eq!(
            parts_of(cursor, bits),
            (MAX_COUNTERS - 1, 31, (1 << bits) - 1)
        );
    }

    #[test]
    fn pages_cover_every_row_once_in_position_order() {
        let rows: Vec<OwnedKey> = (0..1000u64).map(OwnedKey::Id).collect();
        let mut seen = Vec::new();
        let mut from = 0;
        loop {
            let (page, next) = page_of(rows.clone(), from, 37, POSITION_BITS);
            assert!(page.len() >= 37 || next.is_none());
            let places: Vec<u64> = page.iter().map(|k| position(k, POSITION_BITS)).collect();
            assert!(places.windows(2).all(|w| w[0] <= w[1]));
            assert!(places.iter().all(|p| *p >= from));
            seen.extend(page);
            match next {
                Some(n) => {
                    assert!(n > from);
                    from = n;
                }
                None => break,
            }
        }
        seen.sort();
        assert_eq!(seen, rows);
    }

    #[test]
    fn a_prefix_with_a_colon_names_the_counter() {
        assert!(name_can_match(b"weibo", b"weibo:"));
        assert!(name_can_match(b"weibo", b"wei"));
        assert!(!name_can_match(b"weibo2", b"weibo:"));
        assert!(!name_can_match(b"likes", b"weibo"));
        assert!(name_can_match(b"likes", b""));
    }
}
