//! Redis's string commands on counters: a key `<counter>:<id>[:<column>]` is one cell
//! (column `value` when the key names none). Values are integers from 0 to 2^63 - 1.

use super::incr_run::{self, refuse};
use super::table::{Call, CommandSpec};
use super::values::*;
use shardkit_node::counters::CounterKey;
use shardkit_resp::reply;

const W_FAST: &[&str] = &["write", "denyoom", "fast"];
const WRITE_STRING_FAST: &[&str] = &["@write", "@string", "@fast"];

/// The string family's entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "get",
        arity: 2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: &["@read", "@string", "@fast"],
        group: "string",
        summary: "Get the value of a key (\"0\" for an unwritten row of an existing counter)",
        run: get,
    },
    CommandSpec {
        name: "incr",
        arity: 2,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_STRING_FAST,
        group: "string",
        summary: "Increment the integer value of a key by one",
        run: incr,
    },
    CommandSpec {
        name: "decr",
        arity: 2,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_STRING_FAST,
        group: "string",
        summary: "Decrement the integer value of a key by one (refused below zero)",
        run: decr,
    },
    CommandSpec {
        name: "incrby",
        arity: 3,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_STRING_FAST,
        group: "string",
        summary: "Increment the integer value of a key by the given amount",
        run: incrby,
    },
    CommandSpec {
        name: "decrby",
        arity: 3,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_STRING_FAST,
        group: "string",
        summary: "Decrement the integer value of a key by the given number (refused below zero)",
        run: decrby,
    },
    CommandSpec {
        name: "set",
        arity: -3,
        flags: &["write", "denyoom"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: &["@write", "@string", "@slow"],
        group: "string",
        summary: "Set the integer value of a key [NX|XX] [GET]; counters do not expire (no EX/PX)",
        run: set,
    },
    CommandSpec {
        name: "getdel",
        arity: 2,
        flags: &["write", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_STRING_FAST,
        group: "string",
        summary: "Get the value of a key and delete the key",
        run: getdel,
    },
    CommandSpec {
        name: "mget",
        arity: -2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: -1,
        key_step: 1,
        categories: &["@read", "@string", "@fast"],
        group: "string",
        summary: "Get the values of all the given keys",
        run: mget,
    },
    CommandSpec {
        name: "mset",
        arity: -3,
        flags: &["write", "denyoom"],
        first_key: 1,
        last_key: -1,
        key_step: 2,
        categories: &["@write", "@string", "@slow"],
        group: "string",
        summary: "Set multiple keys to integer values",
        run: mset,
    },
    CommandSpec {
        name: "msetnx",
        arity: -3,
        flags: &["write", "denyoom"],
        first_key: 1,
        last_key: -1,
        key_step: 2,
        categories: &["@write", "@string", "@slow"],
        group: "string",
        summary: "Set multiple keys to integer values, only if none of them holds a value",
        run: msetnx,
    },
    CommandSpec {
        name: "del",
        arity: -2,
        flags: &["write"],
        first_key: 1,
        last_key: -1,
        key_step: 1,
        categories: &["@keyspace", "@write", "@slow"],
        group: "generic",
        summary: "Delete keys: a row, or one column of a row",
        run: del,
    },
    CommandSpec {
        name: "unlink",
        arity: -2,
        flags: &["write", "fast"],
        first_key: 1,
        last_key: -1,
        key_step: 1,
        categories: &["@keyspace", "@write", "@fast"],
        group: "generic",
        summary: "Delete keys (as DEL: freeing a row is cheap)",
        run: del,
    },
    CommandSpec {
        name: "exists",
        arity: -2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: -1,
        key_step: 1,
        categories: &["@keyspace", "@read", "@fast"],
        group: "generic",
        summary: "Count the given keys that hold a value",
        run: exists,
    },
    CommandSpec {
        name: "touch",
        arity: -2,
        flags: &["readonly", "fast"],
        first_key: 1,
        last_key: -1,
        key_step: 1,
        categories: &["@keyspace", "@read", "@fast"],
        group: "generic",
        summary: "Count the given keys that hold a value (there is no access time to alter)",
        run: exists,
    },
];

fn key_arg<'a>(call: &mut Call<'_, 'a>, i: usize) -> Option<CounterKey<'a>> {
    string_key(call.cmd.arg(i).unwrap_or_default(), call.out)
}

fn get(call: &mut Call<'_, '_>) {
    let Some(key) = key_arg(call, 1) else { return };
    reply_cell(
        call.out,
        read_cell(call.counters, &key, key.column_or_default()),
        call.session.resp3,
    );
}

fn incr(call: &mut Call<'_, '_>) {
    by(call, Some(1));
}

fn decr(call: &mut Call<'_, '_>) {
    by(call, Some(-1));
}

fn incrby(call: &mut Call<'_, '_>) {
    by(call, None);
}

fn decrby(call: &mut Call<'_, '_>) {
    match call.cmd.arg(2).and_then(strict_i64) {
        Some(i64::MIN) => refuse(call, DECR_OVERFLOW),
        Some(delta) => by(call, Some(-delta)),
        None => refuse(call, NOT_INTEGER),
    }
}

/// Adds `fixed`, or the integer in argument 2, with the rest of the batch's run of
/// increments ([`incr_run`]).
fn by(call: &mut Call<'_, '_>, fixed: Option<i64>) {
    let key = match CounterKey::parse(call.cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return refuse(call, msg),
    };
    let Some(delta) = fixed.or_else(|| call.cmd.arg(2).and_then(strict_i64)) else {
        return refuse(call, NOT_INTEGER);
    };
    incr_run::queue(
        call.counters,
        call.session,
        call.out,
        &key,
        key.column_or_default(),
        delta,
    );
}

/// `SET key value [NX|XX] [GET] [KEEPTTL]`; `EX`/`PX`/`EXAT`/`PXAT` are refused: a
/// counter does not expire.
fn set(call: &mut Call<'_, '_>) {
    let (mut nx, mut xx, mut get) = (false, false, false);
    for option in call.cmd.args().skip(3) {
        let option = option.to_ascii_uppercase();
        match option.as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            b"KEEPTTL" => {}
            b"EX" | b"PX" | b"EXAT" | b"PXAT" => return reply::error(
                call.out,
                "ERR counters do not expire: SET takes NX, XX and GET, not EX, PX, EXAT or PXAT",
            ),
            _ => return reply::error(call.out, "ERR syntax error"),
        }
    }
    let Some(key) = key_arg(call, 1) else { return };
    let value = match stored_value(call.cmd.arg(2).unwrap_or_default()) {
        Ok(v) => v,
        Err(msg) => return reply::error(call.out, msg),
    };
    let column = key.column_or_default();
    let old = match read_cell(call.counters, &key, column) {
        Ok(old) => old,
        Err(e) => return engine_error(call.out, &e),
    };
    let holds = old.is_some_and(|v| v != 0);
    let write = !(nx && holds || xx && !holds);
    if write {
        if let Err(e) = set_cell(call, &key, column, value) {
            return engine_error(call.out, &e);
        }
    }
    match (get, write) {
        (true, _) => reply_cell(call.out, Ok(old), call.session.resp3),
        (false, true) => reply::simple(call.out, "OK"),
        (false, false) => reply::null(call.out, call.session.resp3),
    }
}

fn getdel(call: &mut Call<'_, '_>) {
    let Some(key) = key_arg(call, 1) else { return };
    let column = key.column_or_default();
    let old = match read_cell(call.counters, &key, column) {
        Ok(old) => old,
        Err(e) => return engine_error(call.out, &e),
    };
    if let Err(e) = reset_cell(call, &key, column) {
        return engine_error(call.out, &e);
    }
    reply_cell(call.out, Ok(old), call.session.resp3);
}

fn mget(call: &mut Call<'_, '_>) {
    reply::array_header(call.out, call.cmd.len() - 1);
    for raw in call.cmd.args().skip(1) {
        match CounterKey::parse(raw) {
            Ok(key) => reply_cell(
                call.out,
                read_cell(call.counters, &key, key.column_or_default()),
                call.session.resp3,
            ),
            // Redis answers nil for a key of the wrong kind in MGET; so do we.
            Err(_) => reply::null(call.out, call.session.resp3),
        }
    }
}

/// The key/value pairs of `MSET`/`MSETNX`, all checked before anything is written
/// (a bad pair writes nothing, as Redis's all-or-nothing `MSET`).
fn pairs<'a>(call: &mut Call<'_, 'a>) -> Option<Vec<(CounterKey<'a>, u64)>> {
    if call.cmd.len().is_multiple_of(2) {
        let name = if call
            .cmd
            .arg(0)
            .is_some_and(|n| n.eq_ignore_ascii_case(b"MSETNX"))
        {
            "msetnx"
        } else {
            "mset"
        };
        super::table::wrong_arity(call.out, name);
        return None;
    }
    let mut pairs = Vec::with_capacity(call.cmd.len() / 2);
    for i in (1..call.cmd.len()).step_by(2) {
        let key = key_arg(call, i)?;
        match stored_value(call.cmd.arg(i + 1).unwrap_or_default()) {
            Ok(v) => pairs.push((key, v)),
            Err(msg) => {
                reply::error(call.out, msg);
                return None;
            }
        }
    }
    Some(pairs)
}

fn write_pairs(call: &mut Call<'_, '_>, pairs: &[(CounterKey<'_>, u64)]) -> bool {
    for (key, value) in pairs {
        if let Err(e) = set_cell(call, key, key.column_or_default(), *value) {
            engine_error(call.out, &e);
            return false;
        }
    }
    true
}

fn mset(call: &mut Call<'_, '_>) {
    let Some(pairs) = pairs(call) else { return };
    if write_pairs(call, &pairs) {
        reply::simple(call.out, "OK");
    }
}

fn msetnx(call: &mut Call<'_, '_>) {
    let Some(pairs) = pairs(call) else { return };
    for (key, _) in &pairs {
        match read_cell(call.counters, key, key.column_or_default()) {
            Ok(Some(v)) if v != 0 => return reply::integer(call.out, 0),
            Ok(_) => {}
            Err(e) => return engine_error(call.out, &e),
        }
    }
    if write_pairs(call, &pairs) {
        reply::integer(call.out, 1);
    }
}

/// `DEL`/`UNLINK`: a key naming a column resets that column; a row key deletes the row.
fn del(call: &mut Call<'_, '_>) {
    let mut removed = 0i64;
    for i in 1..call.cmd.len() {
        let Some(key) = key_arg(call, i) else { return };
        let result = match key.column {
            Some(column) => reset_cell(call, &key, column),
            None => delete_row(call, &key),
        };
        match result {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => return engine_error(call.out, &e),
        }
    }
    reply::integer(call.out, removed);
}

/// `EXISTS`/`TOUCH`: how many of the keys hold a value (a zero is no value).
fn exists(call: &mut Call<'_, '_>) {
    let mut found = 0i64;
    for raw in call.cmd.args().skip(1) {
        let Ok(key) = CounterKey::parse(raw) else {
            continue;
        };
        let present = match key.column {
            Some(column) => holds_value(call.counters, &key, column),
            None => call
                .state
                .counters
                .read(|e| e.exists(key.counter, key.key()))
                .map(|v| v.unwrap_or(false)),
        };
        match present {
            Ok(true) => found += 1,
            Ok(false) => {}
            Err(e) => return engine_error(call.out, &e),
        }
    }
    reply::integer(call.out, found);
}
