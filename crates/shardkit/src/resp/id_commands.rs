//! `ID.NEXT` and `TICKET.NEXT`: ids and ticket numbers over RESP, as decimal bulk
//! strings. A RESP integer past 2^53 reaches a JavaScript client (ioredis, node-redis)
//! rounded to the nearest double, so two different ids can come out equal; a bulk
//! string is exact everywhere, and redis-cli, redis-py (`int(x)`) and the Rust crate
//! (`u64: FromRedisValue`) read it as a number just as easily.

use super::table::{Call, CommandSpec};
use super::values::{strict_i64, NOT_INTEGER};
use shardkit_node::id_format::{IdFormat, TimeOrdered, FORMAT_NAMES};
use shardkit_node::state::MAX_BATCH;
use shardkit_resp::reply;

/// The id family's entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "id.next",
        arity: -1,
        flags: &["write", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@write", "@fast"],
        group: "ids",
        summary: "ID.NEXT [shard] [count] | ID.NEXT [count] FORMAT uuid7|ulid: one id as a bulk string, or count ids as an array of them",
        run: id_next,
    },
    CommandSpec {
        name: "ticket.next",
        arity: -2,
        flags: &["write", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@write", "@fast"],
        group: "ids",
        summary: "TICKET.NEXT name [count]: the next number of a sequence, or count of them",
        run: ticket_next,
    },
];

/// Reads an optional non-negative integer argument.
fn arg_u64(call: &Call<'_, '_>, i: usize) -> Result<Option<u64>, ()> {
    match call.cmd.arg(i) {
        None => Ok(None),
        Some(text) => match strict_i64(text) {
            Some(v) if v >= 0 => Ok(Some(v as u64)),
            _ => Err(()),
        },
    }
}

/// `ID.NEXT [shard] [count] [FORMAT snowflake]`: one id, or `count` ids as an array,
/// each a decimal bulk string (as the HTTP API gives them as JSON strings) so
/// JavaScript clients get them exactly. `ID.NEXT [count] FORMAT uuid7|ulid`: UUIDv7s
/// or ULIDs, which have no shard.
fn id_next(call: &mut Call<'_, '_>) {
    let state = call.state;
    // A trailing `FORMAT name`, then the positional arguments before it.
    let mut positional = call.cmd.len();
    let mut format = IdFormat::Snowflake;
    if positional >= 3
        && call
            .cmd
            .arg(positional - 2)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"format"))
    {
        let name = call.cmd.arg(positional - 1).unwrap_or_default();
        match std::str::from_utf8(name)
            .map_err(|_| String::new())
            .and_then(str::parse::<IdFormat>)
        {
            Ok(f) => format = f,
            Err(_) => return reply::error(call.out, &format!("ERR FORMAT must be {FORMAT_NAMES}")),
        }
        positional -= 2;
    }
    if let Some(kind) = format.time_ordered() {
        if positional > 2 {
            return reply::error(
                call.out,
                &format!("ERR {format} ids have no shard: ID.NEXT [count] FORMAT {format}"),
            );
        }
        let count = if positional > 1 {
            arg_u64(call, 1)
        } else {
            Ok(None)
        };
        let Ok(count) = count else {
            return reply::error(call.out, NOT_INTEGER);
        };
        return time_ordered_next(call, kind, count);
    }
    if positional > 3 {
        return super::table::wrong_arity(call.out, "id.next");
    }
    let shard = if positional > 1 {
        arg_u64(call, 1)
    } else {
        Ok(None)
    };
    let count = if positional > 2 {
        arg_u64(call, 2)
    } else {
        Ok(None)
    };
    let (Ok(shard), Ok(count)) = (shard, count) else {
        return reply::error(call.out, NOT_INTEGER);
    };
    let out = &mut *call.out;
    let shard = match state.id_leases.pick(shard) {
        Ok(shard) => shard,
        Err(why) => return reply::error(out, &why),
    };
    match count {
        None => match state.ids.next_id(shard) {
            Ok(id) => {
                shardkit_node::telemetry::add(&shardkit_node::telemetry::IDS_ISSUED, 1);
                reply::bulk_u64(out, id)
            }
            Err(e) => reply::error(out, &format!("ERR {e}")),
        },
        Some(n) if n == 0 || n > MAX_BATCH => {
            reply::error(out, &format!("ERR count must be between 1 and {MAX_BATCH}"))
        }
        Some(n) => {
            let mut ids = vec![0u64; n as usize];
            match state.ids.fill(shard, &mut ids) {
                Ok(()) => {
                    shardkit_node::telemetry::add(&shardkit_node::telemetry::IDS_ISSUED, n);
                    reply::array_header(out, ids.len());
                    for id in ids {
                        reply::bulk_u64(out, id);
                    }
                }
                Err(e) => reply::error(out, &format!("ERR {e}")),
            }
        }
    }
}

/// UUIDv7s or ULIDs: one as a bulk string, or `count` as an array.
fn time_ordered_next(call: &mut Call<'_, '_>, kind: TimeOrdered, count: Option<u64>) {
    let out = &mut *call.out;
    if count.is_some_and(|n| n == 0 || n > MAX_BATCH) {
        return reply::error(out, &format!("ERR count must be between 1 and {MAX_BATCH}"));
    }
    match call.state.time_ordered.next_texts(kind, count.unwrap_or(1)) {
        Ok(texts) => {
            shardkit_node::telemetry::add(
                &shardkit_node::telemetry::IDS_ISSUED,
                texts.len() as u64,
            );
            if count.is_some() {
                reply::array_header(out, texts.len());
            }
            for text in texts {
                reply::bulk(out, text.as_bytes());
            }
        }
        Err(e) => reply::error(out, &format!("ERR {e}")),
    }
}

/// `TICKET.NEXT name [count]`: the next number of a sequence, or `count` of them.
fn ticket_next(call: &mut Call<'_, '_>) {
    let state = call.state;
    let (Some(name), true) = (call.cmd.arg(1), (2..=3).contains(&call.cmd.len())) else {
        return super::table::wrong_arity(call.out, "ticket.next");
    };
    let Ok(count) = arg_u64(call, 2) else {
        return reply::error(call.out, NOT_INTEGER);
    };
    let out = &mut *call.out;
    let Ok(name) = std::str::from_utf8(name) else {
        return reply::error(
            out,
            "ERR ticket sequence names are 1 to 64 characters of A-Z a-z 0-9 _ - . :",
        );
    };
    // Numbers come from memory; the next block is reserved (and fsynced) by the
    // allocator's preload thread, so only a sequence's first call waits for the disk.
    let result = state
        .tickets(name)
        .and_then(|allocator| allocator.take(count.unwrap_or(1)));
    if let Ok(numbers) = &result {
        shardkit_node::telemetry::add(
            &shardkit_node::telemetry::TICKETS_ISSUED,
            numbers.len() as u64,
        );
    }
    match (result, count) {
        (Ok(numbers), None) => reply::bulk_u64(out, numbers[0]),
        (Ok(numbers), Some(_)) => {
            reply::array_header(out, numbers.len());
            for n in numbers {
                reply::bulk_u64(out, n);
            }
        }
        (Err(e), _) => reply::error(out, &format!("ERR {e}")),
    }
}
