//! Connection and server commands: what clients send on connect (`HELLO`, `AUTH`,
//! `SELECT`), `PING`/`ECHO`/`QUIT`, `DBSIZE`, `ROLE`, `TIME`, `LASTSAVE` and
//! `FLUSHDB`/`FLUSHALL`. `CLIENT` is in [`super::client_commands`], `INFO` and
//! `CONFIG` in [`super::server_info`].

use super::table::{Call, CommandSpec};
use super::values::{engine_error, strict_i64, NOT_INTEGER};
use shardkit_resp::reply;

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
    CommandSpec {
        name: "time",
        arity: 1,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@fast"],
        group: "server",
        summary: "The server's clock: Unix seconds and microseconds",
        run: time,
    },
    CommandSpec {
        name: "lastsave",
        arity: 1,
        flags: &["loading", "stale", "fast"],
        first_key: 0,
        last_key: 0,
        key_step: 0,
        categories: &["@admin", "@fast", "@dangerous"],
        group: "server",
        summary: "Unix time of the last counter snapshot (the start time before the first)",
        run: lastsave,
    },
];

fn time(call: &mut Call<'_, '_>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    reply::array_header(call.out, 2);
    reply::bulk_integer(call.out, now.as_secs() as i64);
    reply::bulk_integer(call.out, i64::from(now.subsec_micros()));
}

fn lastsave(call: &mut Call<'_, '_>) {
    let stats = call.state.counters.engine.stats();
    reply::integer(call.out, (stats.last_snapshot_unix_ms / 1000) as i64);
}

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
    super::role_reply::role_reply(&call.state.replication, call.out);
}

fn dbsize(call: &mut Call<'_, '_>) {
    let stats = call.state.counters.engine.stats();
    let rows: u64 = stats.counters.iter().map(|c| c.rows).sum();
    reply::integer(call.out, rows as i64);
}

/// `AUTH key`, or `AUTH name key` (Redis's ACL form: the key's name as the user
/// name; `default` stands for whichever key it is). The key's roles decide which
/// commands run afterwards ([`super::permissions`]).
fn auth(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    let (user, key) = match cmd.len() {
        2 => (None, cmd.arg(1)),
        3 => (cmd.arg(1), cmd.arg(2)),
        _ => return reply::error(out, "ERR syntax error"),
    };
    if !state.access.enforced() {
        return reply::error(out, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    }
    match check_key(state, user, key) {
        Some(grant) => {
            call.session.authenticate(grant);
            reply::simple(out, "OK");
        }
        None => reply::error(
            out,
            "WRONGPASS invalid username-password pair or user is disabled.",
        ),
    }
}

/// The grant of `key` if it is valid and, when a user name other than `default` is
/// given, named so.
fn check_key(
    state: &shardkit_node::state::AppState,
    user: Option<&[u8]>,
    key: Option<&[u8]>,
) -> Option<shardkit_node::api_keys::Grant> {
    let grant = state.access.authenticate(key)?;
    match user {
        Some(user) if user != b"default" && user != grant.name.as_bytes() => None,
        _ => Some(grant),
    }
}

/// `HELLO [protover [AUTH user key] [SETNAME name]]`: `HELLO 3` switches the
/// connection to RESP3, `HELLO 2` back to RESP2, a bare `HELLO` keeps the protocol;
/// answers Redis 7's seven fields (a map in RESP3, a flat array in RESP2). Nothing
/// changes when any part is refused.
fn hello(call: &mut Call<'_, '_>) {
    let (cmd, state, out) = (call.cmd, call.state, &mut *call.out);
    let mut proto = None;
    if let Some(version) = cmd.arg(1) {
        match strict_i64(version) {
            Some(v @ 2..=3) => proto = Some(v),
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
    let mut authenticated = call.session.authenticated;
    let mut grant = None;
    while let Some(option) = cmd.arg(i) {
        if option.eq_ignore_ascii_case(b"AUTH") && cmd.len() > i + 2 {
            if !state.access.enforced() {
                return reply::error(out, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
            }
            match check_key(state, cmd.arg(i + 1), cmd.arg(i + 2)) {
                Some(g) => grant = Some(g),
                None => {
                    return reply::error(
                        out,
                        "WRONGPASS invalid username-password pair or user is disabled.",
                    )
                }
            }
            authenticated = true;
            i += 3;
        } else if option.eq_ignore_ascii_case(b"SETNAME") && cmd.len() > i + 1 {
            let candidate = cmd.arg(i + 1).unwrap_or_default();
            if candidate.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                return reply::error(
                    out,
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            name = Some(candidate);
            i += 2;
        } else {
            let option = String::from_utf8_lossy(option);
            return reply::error(out, &format!("ERR Syntax error in HELLO option '{option}'"));
        }
    }
    if !authenticated {
        return reply::error(out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    call.session.authenticated = true;
    if let Some(grant) = grant {
        call.session.authenticate(grant);
    }
    if let Some(v) = proto {
        call.session.resp3 = v == 3;
        call.session.client.set_resp(v as u8);
    }
    if let Some(name) = name {
        call.session.client.set_name(name);
    }
    let resp3 = call.session.resp3;
    let role: &[u8] = match state.replication.role() {
        shardkit_node::replication::Role::Replica { .. } => b"replica",
        _ => b"master",
    };
    reply::map_header(out, 7, resp3);
    reply::bulk(out, b"server");
    reply::bulk(out, b"shardkit");
    reply::bulk(out, b"version");
    reply::bulk(out, env!("CARGO_PKG_VERSION").as_bytes());
    reply::bulk(out, b"proto");
    reply::integer(out, if resp3 { 3 } else { 2 });
    reply::bulk(out, b"id");
    reply::integer(out, call.session.id as i64);
    reply::bulk(out, b"mode");
    reply::bulk(out, b"standalone");
    reply::bulk(out, b"role");
    reply::bulk(out, role);
    reply::bulk(out, b"modules");
    reply::array_header(out, 0);
}

/// The command's name (`FLUSHDB` or `FLUSHALL`) when its one option is `ASYNC`, `SYNC`
/// or absent; otherwise Redis's syntax error written and `None`.
pub fn flush_name(call: &mut Call<'_, '_>) -> Option<String> {
    match call.cmd.arg(1) {
        None => {}
        Some(mode)
            if call.cmd.len() == 2
                && (mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC")) => {}
        Some(_) => {
            reply::error(call.out, "ERR syntax error");
            return None;
        }
    }
    Some(String::from_utf8_lossy(call.cmd.arg(0).unwrap_or_default()).to_ascii_uppercase())
}

/// `FLUSHDB`/`FLUSHALL [ASYNC|SYNC]`: every row of every counter goes, as one log
/// record per counter, so the flush survives a restart. Columns stay. Only a
/// connection that passed `AUTH` runs it when a key is configured (the gate every
/// command has); each flush is logged.
fn flush(call: &mut Call<'_, '_>) {
    let Some(name) = flush_name(call) else {
        return;
    };
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
