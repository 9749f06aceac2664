//! What the counter commands share: reading a cell with the zero-and-absence rule,
//! applying a delta, and turning engine errors into Redis's words.
//!
//! The zero-and-absence rule (README, "Zero and absence"): a row whose columns are all
//! at their defaults is not stored (Weibo's rule: most counters are 0, and a stored zero
//! costs memory). So a read of a cell answers its value, `"0"` when the counter and the
//! column exist but the row holds nothing, and nil only when the counter or column does
//! not exist. `EXISTS`, `HEXISTS`, `HLEN` and `HGETALL` stay honest about storage: a
//! zero is no value.

use super::table::Call;
use bytes::BytesMut;
use shardkit_counters::{Error, MAX_VALUE};
use shardkit_node::counters::CounterKey;
use shardkit_node::counters::Counters;
use shardkit_resp::reply;

/// Redis's reply to an argument that is not a decimal `i64`.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis's reply to an increment past `i64`.
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
/// Redis's reply to `DECRBY k -9223372036854775808`.
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";

/// Parses a decimal integer as strictly as Redis's `string2ll`: an optional `-`, then
/// digits with no leading zero (`0` itself is fine), no `+`, no spaces, within `i64`.
pub fn strict_i64(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    match digits {
        [] => None,
        [b'0'] if digits.len() == text.len() => Some(0),
        [b'0', ..] => None,
        _ => shardkit_resp::parse::parse_i64(text),
    }
}

/// A value a client may store: a strict integer from 0 to 2^63 - 1.
pub fn stored_value(text: &[u8]) -> Result<u64, &'static str> {
    match strict_i64(text) {
        Some(v) if v >= 0 => Ok(v as u64),
        Some(_) => Err("ERR counters hold 0 to 9223372036854775807; a value below zero is refused"),
        None => Err(NOT_INTEGER),
    }
}

/// The error reply for an engine error; an increment past the maximum gets Redis's
/// overflow text (the column's max is 2^63 - 1 unless it was made narrower), and a
/// missing counter or column names the RESP command that makes it (the engine's own
/// text names its library function).
pub fn engine_error(out: &mut BytesMut, e: &Error) {
    match e {
        Error::TooLarge { max, .. } if *max == MAX_VALUE => reply::error(out, OVERFLOW),
        Error::NoSuchCounter(name) => reply::error(
            out,
            &format!("ERR counter `{name}` does not exist; create it first with COUNTER.CREATE {name}"),
        ),
        Error::NoSuchColumn { counter, column } => reply::error(
            out,
            &format!("ERR counter `{counter}` has no column `{column}`; add it first with COUNTER.ADDCOL {counter} {column}"),
        ),
        e => reply::error(out, &format!("ERR {e}")),
    }
}

/// A key argument, or its error reply.
pub fn string_key<'a>(raw: &'a [u8], out: &mut BytesMut) -> Option<CounterKey<'a>> {
    match CounterKey::parse(raw) {
        Ok(key) => Some(key),
        Err(msg) => {
            reply::error(out, msg);
            None
        }
    }
}

/// A hash key argument (`<counter>:<id>`), or its error reply.
pub fn hash_key<'a>(raw: &'a [u8], out: &mut BytesMut) -> Option<CounterKey<'a>> {
    match CounterKey::parse_row(raw) {
        Ok(key) => Some(key),
        Err(msg) => {
            reply::error(out, msg);
            None
        }
    }
}

/// The reply to a column (hash field) name that is not UTF-8.
pub const COLUMN_NOT_UTF8: &str = "ERR column names must be UTF-8 text";

/// A column (hash field) name, or its error reply.
pub fn column_name<'a>(raw: &'a [u8], out: &mut BytesMut) -> Option<&'a str> {
    let name = std::str::from_utf8(raw).ok();
    if name.is_none() {
        reply::error(out, COLUMN_NOT_UTF8);
    }
    name
}

/// A cell's value under the zero-and-absence rule: `None` only when the counter or
/// the column does not exist.
pub fn read_cell(
    counters: &Counters,
    key: &CounterKey<'_>,
    column: &str,
) -> Result<Option<u64>, Error> {
    counters.read(|e| e.get(key.counter, key.key(), column))
}

/// Writes a cell read as a bulk string, nil for no such counter or column.
pub fn reply_cell(out: &mut BytesMut, cell: Result<Option<u64>, Error>, resp3: bool) {
    match cell {
        Ok(Some(v)) => reply::bulk_integer(out, v as i64),
        Ok(None) => reply::null(out, resp3),
        Err(e) => engine_error(out, &e),
    }
}

/// The columns of a row that hold a value (away from their defaults), in column order.
pub fn stored_fields(
    counters: &Counters,
    key: &CounterKey<'_>,
) -> Result<Vec<(String, u64)>, Error> {
    if !counters
        .read(|e| e.exists(key.counter, key.key()))?
        .unwrap_or(false)
    {
        return Ok(Vec::new());
    }
    let columns = counters.engine.columns(key.counter)?;
    let row = counters
        .read(|e| e.get_row(key.counter, key.key()))?
        .unwrap_or_default();
    Ok(row
        .into_iter()
        .zip(columns)
        .filter(|((_, v), spec)| *v != spec.default)
        .map(|(cell, _)| cell)
        .collect())
}

/// Whether a cell holds a value (is away from its default).
pub fn holds_value(counters: &Counters, key: &CounterKey<'_>, column: &str) -> Result<bool, Error> {
    Ok(stored_fields(counters, key)?
        .iter()
        .any(|(c, _)| c == column))
}

/// Adds `delta` to a cell and answers the new value (Redis's integer reply).
pub fn add_delta(
    call: &mut Call<'_, '_>,
    key: &CounterKey<'_>,
    column: &str,
    delta: i64,
    txid: Option<&str>,
) {
    let result = call.counters.write(key.counter, column, |e| {
        e.incr_deferred(key.counter, key.key(), column, delta, txid)
    });
    match result {
        Ok((v, p)) => {
            call.session.wait_for(p);
            reply::integer(call.out, v as i64)
        }
        Err(e) => engine_error(call.out, &e),
    }
}

/// Sets a cell (creating the counter or column under `auto_create`).
pub fn set_cell(
    call: &mut Call<'_, '_>,
    key: &CounterKey<'_>,
    column: &str,
    value: u64,
) -> Result<(), Error> {
    let p = call.counters.write(key.counter, column, |e| {
        e.set_deferred(key.counter, key.key(), column, value)
    })?;
    call.session.wait_for(p);
    Ok(())
}

/// Sets a cell back to its default; true if it held a value (what `DEL` and `HDEL`
/// count).
pub fn reset_cell(
    call: &mut Call<'_, '_>,
    key: &CounterKey<'_>,
    column: &str,
) -> Result<bool, Error> {
    let Some(spec) = call
        .counters
        .read(|e| e.columns(key.counter))?
        .and_then(|cols| cols.into_iter().find(|c| c.name == column))
    else {
        return Ok(false);
    };
    match read_cell(call.counters, key, column)? {
        Some(v) if v != spec.default => {
            let p =
                call.counters
                    .engine
                    .set_deferred(key.counter, key.key(), column, spec.default)?;
            call.session.wait_for(p);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Deletes a whole row; true if it was stored.
pub fn delete_row(call: &mut Call<'_, '_>, key: &CounterKey<'_>) -> Result<bool, Error> {
    match call
        .counters
        .read(|e| e.delete_deferred(key.counter, key.key()))?
    {
        Some((stored, p)) => {
            call.session.wait_for(p);
            Ok(stored)
        }
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_as_strict_as_redis() {
        for good in [
            &b"0"[..],
            b"5",
            b"-5",
            b"9223372036854775807",
            b"-9223372036854775808",
        ] {
            assert!(strict_i64(good).is_some(), "{good:?}");
        }
        for bad in [
            &b""[..],
            b"-",
            b"05",
            b"-0",
            b"-05",
            b"+1",
            b" 1",
            b"1 ",
            b"1.0",
            b"9223372036854775808",
            b"00",
        ] {
            assert_eq!(strict_i64(bad), None, "{bad:?}");
        }
        assert!(stored_value(b"-1").unwrap_err().contains("below zero"));
    }
}
