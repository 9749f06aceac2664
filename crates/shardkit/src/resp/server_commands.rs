//! Connection and server commands: what clients send on connect (`HELLO`, `AUTH`,
//! `CLIENT`, `CONFIG GET`, `SELECT`), `PING`/`ECHO`/`QUIT`, `INFO`/`DBSIZE`, and
//! `FLUSHDB`/`FLUSHALL`.

use super::parse::Command;
use super::reply;
use super::session::Session;
use super::table::{Call, CommandSpec};
use super::values::{engine_error, strict_i64, NOT_INTEGER};
use crate::state::AppState;
use bytes::BytesMut;

const CONNECTION: &[&str] = &["@fast", "@connection"];
const NO_AUTH: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
const FLUSH: &[&str] = &["@keyspace", "@write", "@slow", "@dangerous"];

/// The server family's entries of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "ping",
        arity: -1,
        flags: &["fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Ping the server",
        run: ping,
    },
    CommandSpec {
        name: "echo",
        arity: 2,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Echo the given string",
        run: echo,
    },
    CommandSpec {
        name: "quit",
        arity: -1,
        flags: NO_AUTH,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Close the connection",
        run: quit,
    },
    CommandSpec {
        name: "auth",
        arity: -2,
        flags: NO_AUTH,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Authenticate with the API key",
        run: auth,
    },
    CommandSpec {
        name: "hello",
        arity: -1,
        flags: NO_AUTH,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Handshake: HELLO [2 [AUTH user key]] (RESP2 only)",
        run: hello,
    },
    CommandSpec {
        name: "select",
        arity: 2,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: CONNECTION,
        group: "connection",
        summary: "Select database 0 (the only one)",
        run: select,
    },
    CommandSpec {
        name: "client",
        arity: -2,
        flags: &[],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow"],
        group: "connection",
        summary: "CLIENT SETINFO|SETNAME|GETNAME|ID",
        run: client,
    },
    CommandSpec {
        name: "config",
        arity: -2,
        flags: &[],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow"],
        group: "server",
        summary: "CONFIG GET parameter (save, appendonly, databases)",
        run: config,
    },
    CommandSpec {
        name: "dbsize",
        arity: 1,
        flags: &["readonly", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@keyspace", "@read", "@fast"],
        group: "server",
        summary: "Number of stored rows over every counter",
        run: dbsize,
    },
    CommandSpec {
        name: "role",
        arity: 1,
        flags: &["noscript", "loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@admin", "@fast", "@dangerous"],
        group: "server",
        summary: "This node's replication role: master, or slave of the leader with its offset",
        run: role,
    },
    CommandSpec {
        name: "info",
        arity: -1,
        flags: &["loading", "stale"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@slow", "@dangerous"],
        group: "server",
        summary: "Server, persistence, counters and keyspace figures",
        run: info,
    },
    CommandSpec {
        name: "flushdb",
        arity: -1,
        flags: &["write"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: FLUSH,
        group: "server",
        summary: "Delete every row of every counter (columns stay), durably",
        run: flush,
    },
    CommandSpec {
        name: "flushall",
        arity: -1,
        flags: &["write"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: FLUSH,
        group: "server",
        summary: "Delete every row of every counter (columns stay), durably",
        run: flush,
    },
];

fn ping(call: &mut Call<'_, '_>) {
    match call.cmd.len() {
        1 => reply::simple(call.out, "PONG"),
        2 => reply::bulk(call.out, call.cmd.arg(1).unwrap_or_default()),
        _ => super::table::wrong_arity(call.out, "ping"),
    }
}

fn echo(call: &mut Call<'_, '_>) {
    reply::bulk(call.out, call.cmd.arg(1).unwrap_or_default());
}

fn quit(call: &mut Call<'_, '_>) {
    reply::simple(call.out, "OK");
    call.session.closing = true;
}

fn select(call: &mut Call<'_, '_>) {
    match call.cmd.arg(1).and_then(strict_i64) {
        Some(0) => reply::simple(call.out, "OK"),
        Some(_) => reply::error(call.out, "ERR DB index is out of range"),
        None => reply::error(call.out, NOT_INTEGER),
    }
}

fn role(call: &mut Call<'_, '_>) {
    crate::replication::gate::role_reply(&call.state.replication, call.out);
}

fn dbsize(call: &mut Call<'_, '_>) {
    let stats = call.state.counters.engine.stats();
    let rows: u64 = stats.counters.iter().map(|c| c.rows).sum();
    reply::integer(call.out, rows as i64);
}

fn auth(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    // AUTH key, or AUTH user key (Redis 6 ACL form; the user is ignored).
    let key = match cmd.len() {
        2 => cmd.arg(1),
        3 => cmd.arg(2),
        _ => return reply::error(out, "ERR syntax error"),
    };
    if !state.access.enforced() {
        reply::error(out, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    } else if state.key_ok(key) {
        call.session.authenticated = true;
        reply::simple(out, "OK");
    } else {
        reply::error(
            out,
            "WRONGPASS invalid username-password pair or user is disabled.",
        );
    }
}

/// `HELLO [2 [AUTH user key] [SETNAME name]]`: RESP2 only; answers Redis 7's 14 fields.
fn hello(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    if let Some(version) = cmd.arg(1) {
        match strict_i64(version) {
            Some(2) => {}
            Some(_) => {
                return reply::error(
                    out,
                    "NOPROTO sorry, this protocol version is not supported.",
                )
            }
            None => {
                return reply::error(
                    out,
                    "ERR Protocol version is not an integer or out of range",
                )
            }
        }
    }
    let mut i = 2;
    let mut name = None;
    while let Some(option) = cmd.arg(i) {
        if option.eq_ignore_ascii_case(b"AUTH") && cmd.len() > i + 2 {
            if !state.key_ok(cmd.arg(i + 2)) {
                return reply::error(
                    out,
                    "WRONGPASS invalid username-password pair or user is disabled.",
                );
            }
            call.session.authenticated = true;
            i += 3;
        } else if option.eq_ignore_ascii_case(b"SETNAME") && cmd.len() > i + 1 {
            name = cmd.arg(i + 1);
            i += 2;
        } else {
            let option = String::from_utf8_lossy(option);
            return reply::error(out, &format!("ERR Syntax error in HELLO option '{option}'"));
        }
    }
    if !call.session.authenticated {
        return reply::error(out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(name) = name {
        call.session.name = Some(name.to_vec()).filter(|n| !n.is_empty());
    }
    reply::array_header(out, 14);
    reply::bulk(out, b"server");
    reply::bulk(out, b"shardkit");
    reply::bulk(out, b"version");
    reply::bulk(out, env!("CARGO_PKG_VERSION").as_bytes());
    reply::bulk(out, b"proto");
    reply::integer(out, 2);
    reply::bulk(out, b"id");
    reply::integer(out, call.session.id as i64);
    reply::bulk(out, b"mode");
    reply::bulk(out, b"standalone");
    reply::bulk(out, b"role");
    reply::bulk(out, b"master");
    reply::bulk(out, b"modules");
    reply::array_header(out, 0);
}

/// `FLUSHDB`/`FLUSHALL [ASYNC|SYNC]`: every row of every counter goes, as one log
/// record per counter, so the flush survives a restart. Columns stay. Only a
/// connection that passed `AUTH` runs it when a key is configured (the gate every
/// command has); each flush is logged.
fn flush(call: &mut Call<'_, '_>) {
    let name = String::from_utf8_lossy(call.cmd.arg(0).unwrap_or_default()).to_ascii_uppercase();
    match call.cmd.arg(1) {
        None => {}
        Some(mode)
            if call.cmd.len() == 2
                && (mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC")) => {}
        Some(_) => return reply::error(call.out, "ERR syntax error"),
    }
    let engine = &call.state.counters.engine;
    let mut rows = 0;
    for counter in engine.counters() {
        match engine.clear_deferred(&counter) {
            Ok((removed, p)) => {
                rows += removed;
                call.session.wait_for(p);
            }
            Err(e) => return engine_error(call.out, &e),
        }
    }
    tracing::warn!(client = call.session.id, command = %name, rows, "flushed every counter's rows");
    reply::simple(call.out, "OK");
}

fn client(call: &mut Call<'_, '_>) {
    client_command(call.cmd, call.session, call.out);
}

fn config(call: &mut Call<'_, '_>) {
    config_command(call.cmd, call.out);
}

fn info(call: &mut Call<'_, '_>) {
    info_command(call.state, call.out);
}
/// `CONFIG GET name`: what redis-benchmark and clients ask at start.
fn config_command(cmd: &Command<'_>, out: &mut BytesMut) {
    let sub = cmd.arg(1).unwrap_or_default();
    if !sub.eq_ignore_ascii_case(b"GET") || cmd.len() != 3 {
        return reply::error(out, "ERR CONFIG supports only GET <parameter> here");
    }
    let name = cmd.arg(2).unwrap_or_default();
    let value: Option<&[u8]> = match name.to_ascii_lowercase().as_slice() {
        b"save" => Some(b""),
        b"appendonly" => Some(b"no"),
        b"databases" => Some(b"1"),
        _ => None,
    };
    match value {
        Some(v) => {
            reply::array_header(out, 2);
            reply::bulk(out, &name.to_ascii_lowercase());
            reply::bulk(out, v);
        }
        None => reply::array_header(out, 0),
    }
}

fn info_command(state: &AppState, out: &mut BytesMut) {
    use std::fmt::Write;
    let stats = state.counters.engine.stats();
    let rows: u64 = stats.counters.iter().map(|c| c.rows).sum();
    let mut text = format!(
        "# Server\r\nredis_version:7.0.0\r\nshardkit_version:{}\r\nredis_mode:standalone\r\n\r\n# Ids\r\nlayout:{}\r\n\r\n# Persistence\r\nfsync:{:?}\r\n\r\n# Counters\r\n",
        env!("CARGO_PKG_VERSION"),
        state.layout,
        stats.fsync
    );
    for c in &stats.counters {
        let _ = write!(
            text,
            "counter_{}:rows={},columns={},bytes={},bytes_per_row={:.2},overflow={}\r\n",
            c.name, c.rows, c.columns, c.bytes, c.bytes_per_row, c.overflow_entries
        );
    }
    text.push_str("\r\n");
    text.push_str(&crate::replication::gate::info_section(&state.replication));
    let _ = write!(text, "\r\n# Keyspace\r\n");
    if rows > 0 {
        let _ = write!(text, "db0:keys={rows},expires=0,avg_ttl=0\r\n");
    }
    reply::bulk(out, text.as_bytes());
}

/// `CLIENT SETINFO|SETNAME|GETNAME|ID`: what client libraries send on connect.
fn client_command(cmd: &Command<'_>, session: &mut Session, out: &mut BytesMut) {
    let sub = cmd.arg(1).unwrap_or_default();
    if sub.eq_ignore_ascii_case(b"SETINFO") && cmd.len() == 4 {
        reply::simple(out, "OK");
    } else if sub.eq_ignore_ascii_case(b"SETNAME") && cmd.len() == 3 {
        session.name = cmd.arg(2).filter(|n| !n.is_empty()).map(<[u8]>::to_vec);
        reply::simple(out, "OK");
    } else if sub.eq_ignore_ascii_case(b"GETNAME") && cmd.len() == 2 {
        match &session.name {
            Some(name) => reply::bulk(out, name),
            None => reply::null(out),
        }
    } else if sub.eq_ignore_ascii_case(b"ID") && cmd.len() == 2 {
        reply::integer(out, session.id as i64);
    } else {
        reply::error(
            out,
            "ERR CLIENT supports SETINFO, SETNAME, GETNAME and ID here",
        );
    }
}
