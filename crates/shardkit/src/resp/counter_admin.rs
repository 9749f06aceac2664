//! The `COUNTER.*` commands: creating counters and columns, describing them, and the
//! idempotent increment. Schema writes wait for the log at once (they are rare); the
//! idempotent increment is deferred like every value write.

use super::table::{Call, CommandSpec};
use super::values::*;
use bytes::BytesMut;
use shardkit_counters::ColumnOptions;
use shardkit_node::state::AppState;
use shardkit_resp::parse::Command;
use shardkit_resp::reply;

/// The `COUNTER.*` entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "counter.create",
        arity: 2,
        flags: &["write"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@write", "@slow"],
        group: "counter",
        summary: "Create a counter with no columns",
        run: create,
    },
    CommandSpec {
        name: "counter.addcol",
        arity: -3,
        flags: &["write"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@write", "@slow"],
        group: "counter",
        summary:
            "Add a column: COUNTER.ADDCOL name column [BITS 8|16|32|64] [MAX 32|64] [DEFAULT n]",
        run: addcol,
    },
    CommandSpec {
        name: "counter.info",
        arity: 2,
        flags: &["readonly"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@read", "@slow"],
        group: "counter",
        summary: "Columns and memory of one counter, as field/value pairs",
        run: info,
    },
    CommandSpec {
        name: "counter.incrby",
        arity: 5,
        flags: &["write", "denyoom", "fast"],
        first_key: 1,
        last_key: 1,
        key_step: 1,
        categories: &["@write", "@fast"],
        group: "counter",
        summary: "COUNTER.INCRBY key column delta txid: counted once per txid within the window",
        run: idempotent_incr,
    },
    CommandSpec {
        name: "counter.digest",
        arity: -1,
        flags: &["readonly"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@read", "@slow"],
        group: "counter",
        summary: "COUNTER.DIGEST [counter] | GROUP g: the lsn applied and a digest of the rows at it (of slot group g's copy on a cluster node), to compare replicas",
        run: digest,
    },
];

/// `COUNTER.DIGEST [counter]`: `[lsn, digest]`, the lsn every record below which is in
/// the state digested, and the digest (32 hex digits) of every counter's rows (or one
/// counter's). Two nodes that answer the same pair hold the same rows.
fn digest(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    if cmd.len() == 3 && cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"group")) {
        return group_digest(state, cmd.arg(2), out);
    }
    if cmd.len() > 2 {
        return reply::error(
            out,
            "ERR syntax error: COUNTER.DIGEST [counter] or COUNTER.DIGEST GROUP g",
        );
    }
    let only = match cmd.arg(1) {
        Some(raw) => match utf8(Some(raw), "counter names", out) {
            Some(name) => Some(name),
            None => return,
        },
        None => None,
    };
    // A full pass over the rows: off the event loop.
    match shardkit_node::resp_runtime::block_here(|| state.counters.engine.digest(only)) {
        Ok(d) => {
            reply::array_header(out, 2);
            reply::integer(out, d.lsn as i64);
            reply::bulk(out, format!("{:032x}", d.value).as_bytes());
        }
        Err(shardkit_counters::Error::NoSuchCounter(name)) => {
            reply::error(out, &no_such_counter(&name))
        }
        Err(e) => reply::error(out, &format!("BUSY {e}")),
    }
}

/// `COUNTER.DIGEST GROUP g` on a cluster node: the lsn and digest of the copy of slot
/// group `g` this node holds (as its owner or a follower), so the copies of one group on
/// several nodes are compared as a replication node's are.
fn group_digest(state: &AppState, raw: Option<&[u8]>, out: &mut BytesMut) {
    let Some(live) = state.cluster.get() else {
        return reply::error(out, "ERR COUNTER.DIGEST GROUP needs a cluster node");
    };
    let group = raw
        .and_then(|r| std::str::from_utf8(r).ok())
        .and_then(|t| t.parse::<u16>().ok())
        .filter(|&g| g < live.map().groups);
    let Some(group) = group else {
        return reply::error(
            out,
            "ERR the group is not a slot group number of this cluster",
        );
    };
    let Some(store) = live.store(group) else {
        return reply::error(
            out,
            &format!("ERR this node holds no copy of group {group}"),
        );
    };
    match shardkit_node::resp_runtime::block_here(|| store.counters.engine.digest(None)) {
        Ok(d) => {
            reply::array_header(out, 2);
            reply::integer(out, d.lsn as i64);
            reply::bulk(out, format!("{:032x}", d.value).as_bytes());
        }
        Err(e) => reply::error(out, &format!("BUSY {e}")),
    }
}

/// Runs a write that waits for the log itself (schema changes). Under fsync `always`
/// it waits for the disk, so it runs in [`shardkit_node::resp_runtime::block_here`]; under
/// `everysec` and `no` it runs inline.
#[inline]
fn may_block<T>(state: &AppState, write: impl FnOnce() -> T) -> T {
    if state.counters.writes_wait_for_disk {
        shardkit_node::resp_runtime::block_here(write)
    } else {
        write()
    }
}

fn utf8<'a>(raw: Option<&'a [u8]>, what: &str, out: &mut BytesMut) -> Option<&'a str> {
    let text = raw.and_then(|r| std::str::from_utf8(r).ok());
    if text.is_none() {
        reply::error(out, &format!("ERR {what} must be UTF-8 text"));
    }
    text
}

fn create(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    match may_block(state, || state.counters.engine.create_counter(name)) {
        Ok(()) => reply::simple(out, "OK"),
        Err(e) => engine_error(out, &e),
    }
}

/// `COUNTER.ADDCOL name column [BITS n] [MAX 32|64] [DEFAULT n]`.
fn addcol(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    let Some(column) = utf8(cmd.arg(2), "column names", out) else {
        return;
    };
    let options = match column_options(cmd) {
        Ok(options) => options,
        Err(e) => return reply::error(out, e),
    };
    match may_block(state, || {
        state.counters.engine.add_column(name, column, options)
    }) {
        Ok(()) => reply::simple(out, "OK"),
        Err(e) => engine_error(out, &e),
    }
}

/// The options of `COUNTER.ADDCOL name column [BITS n] [MAX 32|64] [DEFAULT n]`.
pub fn column_options(cmd: &Command<'_>) -> Result<ColumnOptions, &'static str> {
    const SYNTAX: &str =
        "ERR syntax error: COUNTER.ADDCOL name column [BITS 8|16|32|64] [MAX 32|64] [DEFAULT n]";
    let mut options = ColumnOptions::default();
    let mut i = 3;
    while i < cmd.len() {
        let option = cmd.arg(i).unwrap_or_default();
        let value = cmd
            .arg(i + 1)
            .and_then(strict_i64)
            .filter(|v| *v >= 0)
            .ok_or(SYNTAX)?;
        if option.eq_ignore_ascii_case(b"BITS") && value <= 64 {
            options.bits = value as u8;
        } else if option.eq_ignore_ascii_case(b"MAX") && value <= 64 {
            options.max_bits = value as u8;
        } else if option.eq_ignore_ascii_case(b"DEFAULT") {
            options.default = value as u64;
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    Ok(options)
}

/// `COUNTER.INFO name`: columns and memory of one counter, as field/value pairs.
fn info(call: &mut Call<'_, '_>) {
    let (cmd, state, resp3, out) = (call.cmd, call.state, call.session.resp3, &mut *call.out);
    let Some(name) = utf8(cmd.arg(1), "counter names", out) else {
        return;
    };
    let columns = match state.counters.engine.columns(name) {
        Ok(columns) => columns,
        Err(e) => return engine_error(out, &e),
    };
    let stats = state.counters.engine.stats();
    let Some(counter) = stats.counters.iter().find(|c| c.name == name) else {
        return reply::error(out, &no_such_counter(name));
    };
    reply_info(out, resp3, name, counter, &columns);
}

/// `COUNTER.INFO`'s error for a counter that does not exist.
pub fn no_such_counter(name: &str) -> String {
    format!("ERR counter `{name}` does not exist; create it first with COUNTER.CREATE {name}")
}

/// `COUNTER.INFO`'s reply: `counter`'s figures and `columns`.
pub fn reply_info(
    out: &mut BytesMut,
    resp3: bool,
    name: &str,
    counter: &shardkit_counters::CounterStats,
    columns: &[shardkit_counters::ColumnSpec],
) {
    reply::map_header(out, 12, resp3);
    reply::bulk(out, b"name");
    reply::bulk(out, name.as_bytes());
    // Rows in RAM and in the cold tier (disk); `bytes` and `bytes_ram` are the same
    // figure (`bytes` kept for scripts written before the cold tier).
    for (field, value) in [
        (&b"rows"[..], counter.rows),
        (b"hot_rows", counter.hot_rows),
        (b"cold_rows", counter.cold_rows),
        (b"bytes", counter.bytes),
        (b"bytes_ram", counter.bytes),
        (b"bytes_disk", counter.bytes_disk),
        (b"block_cache_hits", counter.block_cache_hits),
        (b"cold_reads", counter.cold_reads),
    ] {
        reply::bulk(out, field);
        reply::integer(out, value as i64);
    }
    reply::bulk(out, b"bytes_per_row");
    reply::double(out, counter.bytes_per_row, resp3);
    reply::bulk(out, b"overflow_entries");
    reply::integer(out, counter.overflow_entries as i64);
    reply::bulk(out, b"columns");
    reply::array_header(out, columns.len());
    for c in columns {
        reply::map_header(out, 4, resp3);
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
fn idempotent_incr(call: &mut Call<'_, '_>) {
    let Some(key) = hash_key(call.cmd.arg(1).unwrap_or_default(), call.out) else {
        return;
    };
    let Some(column) = column_name(call.cmd.arg(2).unwrap_or_default(), call.out) else {
        return;
    };
    let Some(delta) = call.cmd.arg(3).and_then(strict_i64) else {
        return reply::error(call.out, NOT_INTEGER);
    };
    let Some(txid) = utf8(call.cmd.arg(4), "transaction ids", call.out) else {
        return;
    };
    add_delta(call, &key, column, delta, Some(txid));
}
