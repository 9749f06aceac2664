//! Redis's hash commands on counters: a hash `<counter>:<id>` is one row, its fields
//! are the counter's columns, its values integers from 0 to 2^63 - 1. A field "exists"
//! when it holds a value (is away from its default): see [`super::values`].

use super::table::{Call, CommandSpec};
use super::values::*;
use shardkit_node::counters::CounterKey;
use shardkit_resp::reply;

const R_FAST: &[&str] = &["readonly", "fast"];
const W_FAST: &[&str] = &["write", "denyoom", "fast"];
const READ_FAST: &[&str] = &["@read", "@hash", "@fast"];
const READ_SLOW: &[&str] = &["@read", "@hash", "@slow"];
const WRITE_FAST: &[&str] = &["@write", "@hash", "@fast"];

/// The hash family's entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "hincrby",
        arity: 4,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_FAST,
        group: "hash",
        summary: "Increment the integer value of a hash field (column) by the given number",
        run: hincrby,
    },
    CommandSpec {
        name: "hget",
        arity: 3,
        flags: R_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_FAST,
        group: "hash",
        summary: "Get the value of a hash field (\"0\" for an unwritten row)",
        run: hget,
    },
    CommandSpec {
        name: "hmget",
        arity: -3,
        flags: R_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_FAST,
        group: "hash",
        summary: "Get the values of all the given hash fields",
        run: hmget,
    },
    CommandSpec {
        name: "hgetall",
        arity: 2,
        flags: &["readonly"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_SLOW,
        group: "hash",
        summary: "Get the fields that hold a value, and their values",
        run: hgetall,
    },
    CommandSpec {
        name: "hkeys",
        arity: 2,
        flags: &["readonly"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_SLOW,
        group: "hash",
        summary: "Get the fields that hold a value",
        run: hkeys,
    },
    CommandSpec {
        name: "hvals",
        arity: 2,
        flags: &["readonly"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_SLOW,
        group: "hash",
        summary: "Get the values of the fields that hold one",
        run: hvals,
    },
    CommandSpec {
        name: "hlen",
        arity: 2,
        flags: R_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_FAST,
        group: "hash",
        summary: "Count the fields that hold a value",
        run: hlen,
    },
    CommandSpec {
        name: "hexists",
        arity: 3,
        flags: R_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_FAST,
        group: "hash",
        summary: "Determine if a hash field holds a value",
        run: hexists,
    },
    CommandSpec {
        name: "hstrlen",
        arity: 3,
        flags: R_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: READ_FAST,
        group: "hash",
        summary: "Length of a hash field's value in decimal (0 when it holds none)",
        run: hstrlen,
    },
    CommandSpec {
        name: "hdel",
        arity: -3,
        flags: &["write", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_FAST,
        group: "hash",
        summary: "Reset hash fields to their default",
        run: hdel,
    },
    CommandSpec {
        name: "hset",
        arity: -4,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_FAST,
        group: "hash",
        summary: "Set hash fields to integer values; answers how many held no value before",
        run: hset,
    },
    CommandSpec {
        name: "hmset",
        arity: -4,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_FAST,
        group: "hash",
        summary: "Set hash fields to integer values",
        run: hmset,
    },
    CommandSpec {
        name: "hsetnx",
        arity: 4,
        flags: W_FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: WRITE_FAST,
        group: "hash",
        summary: "Set a hash field to an integer value, only if it holds none",
        run: hsetnx,
    },
];

fn row_arg<'a>(call: &mut Call<'_, 'a>) -> Option<CounterKey<'a>> {
    hash_key(call.cmd.arg(1).unwrap_or_default(), call.out)
}

fn field_arg<'a>(call: &mut Call<'_, 'a>, i: usize) -> Option<&'a str> {
    column_name(call.cmd.arg(i).unwrap_or_default(), call.out)
}

/// Joins the batch's run of increments ([`super::incr_run`]); errors flush it first.
fn hincrby(call: &mut Call<'_, '_>) {
    let key = match CounterKey::parse_row(call.cmd.arg(1).unwrap_or_default()) {
        Ok(key) => key,
        Err(msg) => return super::incr_run::refuse(call, msg),
    };
    let Ok(column) = std::str::from_utf8(call.cmd.arg(2).unwrap_or_default()) else {
        return super::incr_run::refuse(call, COLUMN_NOT_UTF8);
    };
    let Some(delta) = call.cmd.arg(3).and_then(strict_i64) else {
        return super::incr_run::refuse(call, NOT_INTEGER);
    };
    super::incr_run::queue(call.counters, call.session, call.out, &key, column, delta);
}

fn hget(call: &mut Call<'_, '_>) {
    let Some(key) = row_arg(call) else { return };
    let Some(column) = field_arg(call, 2) else {
        return;
    };
    reply_cell(
        call.out,
        read_cell(call.counters, &key, column),
        call.session.resp3,
    );
}

fn hmget(call: &mut Call<'_, '_>) {
    let Some(key) = row_arg(call) else { return };
    reply::array_header(call.out, call.cmd.len() - 2);
    for raw in call.cmd.args().skip(2) {
        match std::str::from_utf8(raw) {
            Ok(column) => reply_cell(
                call.out,
                read_cell(call.counters, &key, column),
                call.session.resp3,
            ),
            Err(_) => reply::null(call.out, call.session.resp3),
        }
    }
}

/// The fields of the row that hold a value, or the error reply.
fn fields(call: &mut Call<'_, '_>) -> Option<Vec<(String, u64)>> {
    let key = row_arg(call)?;
    match stored_fields(call.counters, &key) {
        Ok(fields) => Some(fields),
        Err(e) => {
            engine_error(call.out, &e);
            None
        }
    }
}

fn hgetall(call: &mut Call<'_, '_>) {
    let Some(fields) = fields(call) else { return };
    reply::map_header(call.out, fields.len(), call.session.resp3);
    for (column, value) in fields {
        reply::bulk(call.out, column.as_bytes());
        reply::bulk_integer(call.out, value as i64);
    }
}

fn hkeys(call: &mut Call<'_, '_>) {
    let Some(fields) = fields(call) else { return };
    reply::array_header(call.out, fields.len());
    for (column, _) in fields {
        reply::bulk(call.out, column.as_bytes());
    }
}

fn hvals(call: &mut Call<'_, '_>) {
    let Some(fields) = fields(call) else { return };
    reply::array_header(call.out, fields.len());
    for (_, value) in fields {
        reply::bulk_integer(call.out, value as i64);
    }
}

fn hlen(call: &mut Call<'_, '_>) {
    let Some(fields) = fields(call) else { return };
    reply::integer(call.out, fields.len() as i64);
}

/// The value a field holds, `None` when it holds none.
fn held(call: &mut Call<'_, '_>) -> Option<Option<u64>> {
    let column = std::str::from_utf8(call.cmd.arg(2).unwrap_or_default()).ok();
    let fields = fields(call)?;
    Some(
        fields
            .into_iter()
            .find(|(c, _)| Some(c.as_str()) == column)
            .map(|(_, v)| v),
    )
}

fn hexists(call: &mut Call<'_, '_>) {
    let Some(value) = held(call) else { return };
    reply::integer(call.out, i64::from(value.is_some()));
}

fn hstrlen(call: &mut Call<'_, '_>) {
    let Some(value) = held(call) else { return };
    let len = value.map_or(0, |v| itoa::Buffer::new().format(v).len());
    reply::integer(call.out, len as i64);
}

fn hdel(call: &mut Call<'_, '_>) {
    let Some(key) = row_arg(call) else { return };
    let mut removed = 0i64;
    for i in 2..call.cmd.len() {
        let Ok(column) = std::str::from_utf8(call.cmd.arg(i).unwrap_or_default()) else {
            continue;
        };
        match reset_cell(call, &key, column) {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => return engine_error(call.out, &e),
        }
    }
    reply::integer(call.out, removed);
}

/// Sets the field/value pairs from argument 2 on (all checked first); answers how many
/// of the fields held no value before, or `None` after writing an error reply.
fn set_fields(call: &mut Call<'_, '_>, name: &str) -> Option<i64> {
    if !call.cmd.len().is_multiple_of(2) {
        super::table::wrong_arity(call.out, name);
        return None;
    }
    let key = row_arg(call)?;
    let mut pairs = Vec::with_capacity(call.cmd.len() / 2);
    for i in (2..call.cmd.len()).step_by(2) {
        let column = field_arg(call, i)?;
        match stored_value(call.cmd.arg(i + 1).unwrap_or_default()) {
            Ok(v) => pairs.push((column, v)),
            Err(msg) => {
                reply::error(call.out, msg);
                return None;
            }
        }
    }
    let before = match stored_fields(call.counters, &key) {
        Ok(fields) => fields,
        Err(e) => {
            engine_error(call.out, &e);
            return None;
        }
    };
    let mut added = 0;
    for (i, (column, value)) in pairs.iter().enumerate() {
        let repeated = pairs[..i].iter().any(|(c, _)| c == column);
        if !repeated && !before.iter().any(|(c, _)| c == column) {
            added += 1;
        }
        if let Err(e) = set_cell(call, &key, column, *value) {
            engine_error(call.out, &e);
            return None;
        }
    }
    Some(added)
}

fn hset(call: &mut Call<'_, '_>) {
    if let Some(added) = set_fields(call, "hset") {
        reply::integer(call.out, added);
    }
}

fn hmset(call: &mut Call<'_, '_>) {
    if set_fields(call, "hmset").is_some() {
        reply::simple(call.out, "OK");
    }
}

fn hsetnx(call: &mut Call<'_, '_>) {
    let Some(key) = row_arg(call) else { return };
    let Some(column) = field_arg(call, 2) else {
        return;
    };
    let value = match stored_value(call.cmd.arg(3).unwrap_or_default()) {
        Ok(v) => v,
        Err(msg) => return reply::error(call.out, msg),
    };
    match holds_value(call.counters, &key, column) {
        Ok(true) => reply::integer(call.out, 0),
        Ok(false) => match set_cell(call, &key, column, value) {
            Ok(()) => reply::integer(call.out, 1),
            Err(e) => engine_error(call.out, &e),
        },
        Err(e) => engine_error(call.out, &e),
    }
}
