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

use super::glob;
use super::reply;
use super::table::{Call, CommandSpec};
use super::values::{holds_value, strict_i64};
use crate::counter_access::{CounterKey, Counters, DEFAULT_COLUMN};
use shardkit_counters::{OwnedKey, STRIPES};

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

/// Bits of a cursor that hold the position within a stripe.
const POSITION_BITS: u32 = 43;
/// Bits that hold the stripe, above the position.
const STRIPE_BITS: u32 = 5;
/// Counters a cursor can tell apart (by their place in name order).
const MAX_COUNTERS: usize = 1 << (64 - POSITION_BITS - STRIPE_BITS);
/// A stripe is walked in at most about this many calls, whatever `COUNT` says, so a
/// whole walk examines each row at most this many times.
const CALLS_PER_STRIPE: usize = 64;

/// A row's place in its stripe's walk: a fixed hash of its key, 43 bits. Rows are
/// visited in this order; the cursor is the place of the first row not yet returned.
fn position(key: &OwnedKey) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match key {
        OwnedKey::Id(id) => id.hash(&mut h),
        OwnedKey::Name(name) => name.hash(&mut h),
    }
    h.finish() >> (64 - POSITION_BITS)
}

/// The cursor of (counter by name order, stripe, position).
fn cursor_of(counter: usize, stripe: usize, position: u64) -> u64 {
    ((counter as u64) << (POSITION_BITS + STRIPE_BITS))
        | ((stripe as u64) << POSITION_BITS)
        | position
}

/// (counter by name order, stripe, position) of a cursor.
fn parts_of(cursor: u64) -> (usize, usize, u64) {
    (
        (cursor >> (POSITION_BITS + STRIPE_BITS)) as usize,
        ((cursor >> POSITION_BITS) & ((1 << STRIPE_BITS) - 1)) as usize,
        cursor & ((1 << POSITION_BITS) - 1),
    )
}

fn scan(call: &mut Call<'_, '_>) {
    let Some(cursor) = std::str::from_utf8(call.cmd.arg(1).unwrap_or_default())
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
    else {
        return reply::error(call.out, "ERR invalid cursor");
    };
    let (mut pattern, mut count, mut kind): (Option<&[u8]>, usize, Option<Vec<u8>>) =
        (None, 10, None);
    let mut i = 2;
    while let Some(option) = call.cmd.arg(i) {
        let Some(value) = call.cmd.arg(i + 1) else {
            return reply::error(call.out, "ERR syntax error");
        };
        match option.to_ascii_lowercase().as_slice() {
            b"match" => pattern = Some(value),
            b"count" => match strict_i64(value) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return reply::error(call.out, "ERR syntax error"),
                None => return reply::error(call.out, super::values::NOT_INTEGER),
            },
            b"type" => kind = Some(value.to_ascii_lowercase()),
            _ => return reply::error(call.out, "ERR syntax error"),
        }
        i += 2;
    }
    let engine = &call.state.counters.engine;
    let mut counters = engine.counters();
    counters.sort();
    if counters.len() > MAX_COUNTERS {
        return reply::error(
            call.out,
            &format!("ERR SCAN walks at most {MAX_COUNTERS} counters; this server has more"),
        );
    }
    let prefix = pattern.map(glob::literal_prefix).unwrap_or_default();
    let (first_counter, first_stripe, first_position) = parts_of(cursor);
    let mut keys: Vec<String> = Vec::new();
    let mut examined = 0usize;
    let mut next = 0u64;
    'walk: for (ordinal, name) in counters.iter().enumerate().skip(first_counter) {
        if !name_can_match(name.as_bytes(), prefix)
            || kind
                .as_deref()
                .is_some_and(|k| k != row_type(&call.state.counters, name).as_bytes())
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
            if examined >= count {
                next = cursor_of(ordinal, stripe, from);
                break 'walk;
            }
            let Ok(rows) = engine.row_keys(name, stripe) else {
                break;
            };
            let take = (count - examined).max(rows.len().div_ceil(CALLS_PER_STRIPE));
            let (page, rest_from) = page_of(rows, from, take);
            examined += page.len();
            for row in page {
                let key = match row {
                    OwnedKey::Id(id) => format!("{name}:{id}"),
                    OwnedKey::Name(row) => format!("{name}:{row}"),
                };
                if pattern.is_none_or(|p| glob::matches(p, key.as_bytes(), false)) {
                    keys.push(key);
                }
            }
            if let Some(rest_from) = rest_from {
                next = cursor_of(ordinal, stripe, rest_from);
                break 'walk;
            }
        }
    }
    reply::array_header(call.out, 2);
    reply::bulk(call.out, next.to_string().as_bytes());
    reply::array_header(call.out, keys.len());
    for key in keys {
        reply::bulk(call.out, key.as_bytes());
    }
}

/// The rows of a stripe at or after position `from`, at least `take` of them (all
/// rows of the last position taken, so a page never splits a position), in position
/// order; and where the rest starts, if anything is left.
fn page_of(rows: Vec<OwnedKey>, from: u64, take: usize) -> (Vec<OwnedKey>, Option<u64>) {
    let mut placed: Vec<(u64, OwnedKey)> = rows
        .into_iter()
        .map(|k| (position(&k), k))
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
            assert_eq!(parts_of(cursor_of(parts.0, parts.1, parts.2)), parts);
        }
    }

    #[test]
    fn pages_cover_every_row_once_in_position_order() {
        let rows: Vec<OwnedKey> = (0..1000u64).map(OwnedKey::Id).collect();
        let mut seen = Vec::new();
        let mut from = 0;
        loop {
            let (page, next) = page_of(rows.clone(), from, 37);
            assert!(page.len() >= 37 || next.is_none());
            let places: Vec<u64> = page.iter().map(position).collect();
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
