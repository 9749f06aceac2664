//! The counter commands over RESP: Redis's string and hash commands mapped onto the
//! counter engine (keys `<counter>:<id>[:<column>]`, hash fields = columns), plus the
//! `COUNTER.*` commands. Value writes are applied without waiting for the log: each
//! adds its log position to the connection's [`Pending`], and the connection waits for
//! the disk once per batch of commands, before it writes any reply (see
//! `connection.rs`). Schema writes (`COUNTER.CREATE`, `COUNTER.ADDCOL`) wait at once.

use super::parse::{parse_i64, Command};
use super::reply;
use crate::counter_access::CounterKey;
use crate::state::AppState;
use bytes::BytesMut;
use shardkit_counters::{ColumnOptions, Error, Pending};

const NOT_INTEGER: &str = "ERR value is not an integer or out of range";

/// Runs a write that waits for the log itself (schema changes). Under fsync `always`
/// it waits for the disk, so it runs in `block_in_place` (the runtime moves other
/// connections off this thread); under `everysec` and `no` it runs inline.
#[inline]
fn may_block<T>(state: &AppState, write: impl FnOnce() -> T) -> T {
    if state.counters.writes_wait_for_disk {
        tokio::task::block_in_place(write)
    } else {
        write()
    }
}

/// Runs a counter command if `name` is one; returns false for any other name.
/// Value writes add what they wait for to `pending`; the caller must
/// [`commit`](shardkit_counters::Engine::commit) it before sending any reply.
pub fn execute(
    name: &[u8],
    cmd: &Command<'_>,
    state: &AppState,
    pending: &mut Pending,
    out: &mut BytesMut,
) -> bool {
    let is = |expected: &str| name.eq_ignore_ascii_case(expected.as_bytes());
    if is("GET") {
        exact(cmd, 2, "get", out, |out| get(cmd, state, out));
    } else if is("INCR") {
        exact(cmd, 2, "incr", out, |out| {
            incr(cmd, state, Some(1), pending, out)
        });
    } else if is("DECR") {
        exact(cmd, 2, "decr", out, |out| {
            incr(cmd, state, Some(-1), pending, out)
        });
    } else if is("INCRBY") {
        exact(cmd, 3, "incrby", out, |out| {
            incr(cmd, state, None, pending, out)
        });
    } else if is("DECRBY") {
        exact(cmd, 3, "decrby", out, |out| {
            match cmd.arg(2).and_then(parse_i64).and_then(i64::checked_neg) {
                Some(delta) => incr(cmd, state, Some(delta), pending, out),
                None => reply::error(out, NOT_INTEGER),
            }
        });
    } else if is("SET") {
        set(cmd, state, pending, out);
    } else if is("MGET") {
        at_least(cmd, 2, "mget", out, |out| mget(cmd, state, out));
    } else if is("DEL") {
        at_least(cmd, 2, "del", out, |out| del(cmd, state, pending, out));
    } else if is("EXISTS") {
        at_least(cmd, 2, "exists", out, |out| exists(cmd, state, out));
    } else if is("HINCRBY") {
        exact(cmd, 4, "hincrby", out, |out| {
            hincrby(cmd, state, pending, out)
        });
    } else if is("HGET") {
        exact(cmd, 3, "hget", out, |out| hget(cmd, state, out));
    } else if is("HMGET") {
        at_least(cmd, 3, "hmget", out, |out| hmget(cmd, state, out));
    } else if is("HGETALL") {
        exact(cmd, 2, "hgetall", out, |out| hgetall(cmd, state, out));
    } else if is("HDEL") {
        at_least(cmd, 3, "hdel", out, |out| hdel(cmd, state, pending, out));
    } else if is("COUNTER.CREATE") {
        exact(cmd, 2, "counter.create", out, |out| create(cmd, state, out));
    } else if is("COUNTER.ADDCOL") {
        at_least(cmd, 3, "counter.addcol", out, |out| addcol(cmd, state, out));
    } else if is("COUNTER.INFO") {
        exact(cmd, 2, "counter.info", out, |out| info(cmd, state, out));
    } else if is("COUNTER.INCRBY") {
        exact(cmd, 5, "counter.incrby", out, |out| {
            idempotent_incr(cmd, state, pending, out)
        });
    } else {
        return false;
    }
    true
}

fn exact(
    cmd: &Command<'_>,
    n: usize,
    name: &str,
    out: &mut BytesMut,
    run: impl FnOnce(&mut BytesMut),
) {
    if cmd.len() == n {
        run(out)
    } else {
        reply::error(
            out,
            &format!("ERR wrong number of arguments for '{name}' command"),
        )
    }
}

fn at_least(
    cmd: &Command<'_>,
    n: usize,
    name: &str,
    out: &mut BytesMut,
    run: impl FnOnce(&mut BytesMut),
) {
    if cmd.len() >= n {
        run(out)
    } else {
        reply::error(
            out,
            &format!("ERR wrong number of arguments for '{name}' command"),
        )
    }
}

/// Counter values are unsigned; RESP integers are signed 64-bit.
fn reply_value(out: &mut BytesMut, value: u64) {
    match i64::try_from(value) {
        Ok(v) => reply::integer(out, v),
        Err(_) => reply::bulk(out, value.to_string().as_bytes()),
    }
}

fn engine_error(out: &mut BytesMut, e: &Error) {
    reply::error(out, &format!("ERR {e}"));
}

/// The value of one column, `None` when the row or column is absent (Redis's nil).
fn value_of(state: &AppState, key: &CounterKey<'_>, column: &str) -> Result<Option<u64>, Error> {
    let found = state
        .counters
        .read(|e| e.get(key.counter, key.key(), column))?;
    match found {
        Some(0) => Ok(state
            .counters
            .read(|e| e.exists(key.counter, key.key()))?
            .filter(|&exists| exists)
            .map(|_| 0)),
        other => Ok(other),
    }
}

fn reply_optional(out: &mut BytesMut, result: Result<Option<u64>, Error>) {
    match result {
        Ok(Some(v)) => reply::bulk_integer(out, v as i64),
        Ok(None) => reply::null(out),
        Err(e) => engine_error(out, &e),
    }
}

fn get(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    match CounterKey::parse(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => reply_optional(out, value_of(state, &key, key.column_or_default())),
        Err(msg) => reply::error(out, msg),
    }
}

fn incr(
    cmd: &Command<'_>,
    state: &AppState,
    fixed: Option<i64>,
    pending: &mut Pending,
    out: &mut BytesMut,
) {
    let key = match CounterKey::parse(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let Some(delta) = fixed.or_else(|| cmd.arg(2).and_then(parse_i64)) else {
        return reply::error(out, NOT_INTEGER);
    };
    write_delta(
        state,
        &key,
        key.column_or_default(),
        delta,
        None,
        pending,
        out,
    );
}

fn write_delta(
    state: &AppState,
    key: &CounterKey<'_>,
    column: &str,
    delta: i64,
    txid: Option<&str>,
    pending: &mut Pending,
    out: &mut BytesMut,
) {
    let result = state.counters.write(key.counter, column, |e| {
        e.incr_deferred(key.counter, key.key(), column, delta, txid)
    });
    match result {
        Ok((v, p)) => {
            *pending = (*pending).max(p);
            reply_value(out, v)
        }
        Err(e) => engine_error(out, &e),
    }
}

fn set(cmd: &Command<'_>, state: &AppState, pending: &mut Pending, out: &mut BytesMut) {
    if cmd.len() < 3 {
        return reply::error(out, "ERR wrong number of arguments for 'set' command");
    }
    if cmd.len() > 3 {
        return reply::error(
            out,
            "ERR syntax error: counters take no SET options (EX, NX, ...)",
        );
    }
    let key = match CounterKey::parse(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let value = match cmd.arg(2).and_then(parse_i64) {
        Some(v) if v >= 0 => v as u64,
        _ => return reply::error(out, NOT_INTEGER),
    };
    let column = key.column_or_default();
    match state.counters.write(key.counter, column, |e| {
        e.set_deferred(key.counter, key.key(), column, value)
    }) {
        Ok(p) => {
            *pending = (*pending).max(p);
            reply::simple(out, "OK")
        }
        Err(e) => engine_error(out, &e),
    }
}

fn mget(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    reply::array_header(out, cmd.len() - 1);
    for raw in cmd.args().skip(1) {
        match CounterKey::parse(raw) {
            Ok(key) => reply_optional(out, value_of(state, &key, key.column_or_default())),
            // Redis answers nil for a key of the wrong kind in MGET; so do we.
            Err(_) => reply::null(out),
        }
    }
}

fn del(cmd: &Command<'_>, state: &AppState, pending: &mut Pending, out: &mut BytesMut) {
    let mut removed = 0i64;
    for raw in cmd.args().skip(1) {
        let key = match CounterKey::parse(raw) {
            Ok(key) => key,
            Err(msg) => return reply::error(out, msg),
        };
        let result = match key.column {
            // A key naming a column resets that column.
            Some(column) => reset_column(state, &key, column, pending),
            None => state
                .counters
                .read(|e| e.delete_deferred(key.counter, key.key()))
                .map(|d| match d {
                    Some((stored, p)) => {
                        *pending = (*pending).max(p);
                        stored
                    }
                    None => false,
                }),
        };
        match result {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => return engine_error(out, &e),
        }
    }
    reply::integer(out, removed);
}

/// Sets a column back to 0; true if it was set (what `DEL` and `HDEL` count).
fn reset_column(
    state: &AppState,
    key: &CounterKey<'_>,
    column: &str,
    pending: &mut Pending,
) -> Result<bool, Error> {
    match state
        .counters
        .read(|e| e.get(key.counter, key.key(), column))?
    {
        Some(v) if v != 0 => {
            let p = state
                .counters
                .engine
                .set_deferred(key.counter, key.key(), column, 0)?;
            *pending = (*pending).max(p);
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn exists(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let mut found = 0i64;
    for raw in cmd.args().skip(1) {
        let Ok(key) = CounterKey::parse(raw) else {
            continue;
        };
        let present = match key.column {
            Some(column) => value_of(state, &key, column).map(|v| v.is_some()),
            None => state
                .counters
                .read(|e| e.exists(key.counter, key.key()))
                .map(|v| v.unwrap_or(false)),
        };
        match present {
            Ok(true) => found += 1,
            Ok(false) => {}
            Err(e) => return engine_error(out, &e),
        }
    }
    reply::integer(out, found);
}

fn column_name<'a>(raw: &'a [u8], out: &mut BytesMut) -> Option<&'a str> {
    let name = std::str::from_utf8(raw).ok();
    if name.is_none() {
        reply::error(out, "ERR column names must be UTF-8 text");
    }
    name
}

fn hincrby(cmd: &Command<'_>, state: &AppState, pending: &mut Pending, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let Some(column) = column_name(cmd.arg(2).unwrap_or_default(), out) else {
        return;
    };
    let Some(delta) = cmd.arg(3).and_then(parse_i64) else {
        return reply::error(out, NOT_INTEGER);
    };
    write_delta(state, &key, column, delta, None, pending, out);
}

fn hget(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let Some(column) = column_name(cmd.arg(2).unwrap_or_default(), out) else {
        return;
    };
    reply_optional(out, value_of(state, &key, column));
}

fn hmget(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    reply::array_header(out, cmd.len() - 2);
    for raw in cmd.args().skip(2) {
        match std::str::from_utf8(raw) {
            Ok(column) => reply_optional(out, value_of(state, &key, column)),
            Err(_) => reply::null(out),
        }
    }
}

fn hgetall(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let present = state.counters.read(|e| e.exists(key.counter, key.key()));
    let row = match present {
        Ok(Some(true)) => state.counters.read(|e| e.get_row(key.counter, key.key())),
        Ok(_) => Ok(Some(Vec::new())),
        Err(e) => Err(e),
    };
    match row {
        Ok(row) => {
            let row = row.unwrap_or_default();
            reply::array_header(out, row.len() * 2);
            for (column, value) in row {
                reply::bulk(out, column.as_bytes());
                reply::bulk_integer(out, value as i64);
            }
        }
        Err(e) => engine_error(out, &e),
    }
}

fn hdel(cmd: &Command<'_>, state: &AppState, pending: &mut Pending, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let mut removed = 0i64;
    for raw in cmd.args().skip(2) {
        let Ok(column) = std::str::from_utf8(raw) else {
            continue;
        };
        let result = reset_column(state, &key, column, pending);
        match result {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => return engine_error(out, &e),
        }
    }
    reply::integer(out, removed);
}

fn utf8<'a>(raw: Option<&'a [u8]>, what: &str, out: &mut BytesMut) -> Option<&'a str> {
    let text = raw.and_then(|r| std::str::from_utf8(r).ok());
    if text.is_none() {
        reply::error(out, &format!("ERR {what} must be UTF-8 text"));
    }
    text
}

fn create(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    match may_block(state, || state.counters.engine.create_counter(name)) {
        Ok(()) => reply::simple(out, "OK"),
        Err(e) => engine_error(out, &e),
    }
}

/// `COUNTER.ADDCOL name column [BITS n] [MAX 32|64] [DEFAULT n]`.
fn addcol(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    let Some(column) = utf8(cmd.arg(2), "column names", out) else {
        return;
    };
    let mut options = ColumnOptions::default();
    let mut i = 3;
    while i < cmd.len() {
        let option = cmd.arg(i).unwrap_or_default();
        let Some(value) = cmd.arg(i + 1).and_then(parse_i64).filter(|v| *v >= 0) else {
            return reply::error(out, "ERR syntax error: COUNTER.ADDCOL name column [BITS 8|16|32|64] [MAX 32|64] [DEFAULT n]");
        };
        if option.eq_ignore_ascii_case(b"BITS") && value <= 64 {
            options.bits = value as u8;
        } else if option.eq_ignore_ascii_case(b"MAX") && value <= 64 {
            options.max_bits = value as u8;
        } else if option.eq_ignore_ascii_case(b"DEFAULT") {
            options.default = value as u64;
        } else {
            return reply::error(out, "ERR syntax error: COUNTER.ADDCOL name column [BITS 8|16|32|64] [MAX 32|64] [DEFAULT n]");
        }
        i += 2;
    }
    match may_block(state, || {
        state.counters.engine.add_column(name, column, options)
    }) {
        Ok(()) => reply::simple(out, "OK"),
        Err(e) => engine_error(out, &e),
    }
}

/// `COUNTER.INFO name`: columns and memory of one counter, as field/value pairs.
fn info(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    let columns = match state.counters.engine.columns(name) {
        Ok(columns) => columns,
        Err(e) => return engine_error(out, &e),
    };
    let stats = state.counters.engine.stats();
    let Some(counter) = stats.counters.iter().find(|c| c.name == name) else {
        return reply::error(out, &format!("ERR counter `{name}` does not exist"));
    };
    reply::array_header(out, 12);
    reply::bulk(out, b"name");
    reply::bulk(out, name.as_bytes());
    reply::bulk(out, b"rows");
    reply::integer(out, counter.rows as i64);
    reply::bulk(out, b"bytes");
    reply::integer(out, counter.bytes as i64);
    reply::bulk(out, b"bytes_per_row");
    reply::bulk(out, format!("{:.2}", counter.bytes_per_row).as_bytes());
    reply::bulk(out, b"overflow_entries");
    reply::integer(out, counter.overflow_entries as i64);
    reply::bulk(out, b"columns");
    reply::array_header(out, columns.len());
    for c in columns {
        reply::array_header(out, 8);
        reply::bulk(out, b"name");
        reply::bulk(out, c.name.as_bytes());
        reply::bulk(out, b"bits");
        reply::integer(out, i64::from(c.bits));
        reply::bulk(out, b"max");
        reply::integer(out, i64::from(c.max_bits));
        reply::bulk(out, b"default");
        reply::integer(out, c.default as i64);
    }
}

/// `COUNTER.INCRBY key column delta txid`: counted once per txid within the window.
fn idempotent_incr(cmd: &Command<'_>, state: &AppState, pending: &mut Pending, out: &mut BytesMut) {
    let key = match CounterKey::parse_row(cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return reply::error(out, msg),
    };
    let Some(column) = column_name(cmd.arg(2).unwrap_or_default(), out) else {
        return;
    };
    let Some(delta) = cmd.arg(3).and_then(parse_i64) else {
        return reply::error(out, NOT_INTEGER);
    };
    let Some(txid) = utf8(cmd.arg(4), "transaction ids", out) else {
        return;
    };
    write_delta(state, &key, column, delta, Some(txid), pending, out);
}
