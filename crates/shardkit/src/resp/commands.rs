//! The commands: each takes its arguments from the parsed command, does its work on
//! the shared state and writes its reply. Names are matched without case, as Redis does.

use super::parse::{parse_i64, Command};
use super::reply;
use crate::state::{AppState, MAX_BATCH};
use bytes::BytesMut;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Keep serving.
    Continue,
    /// Write the replies, then close (QUIT, or a protocol error).
    Close,
}

/// Per-connection state.
#[derive(Debug)]
pub struct Session {
    /// Log position the replies computed so far wait for: value writes are applied at
    /// once and made durable once per batch, before any reply of the batch is sent.
    pub pending: shardkit_counters::Pending,
    authenticated: bool,
    id: u64,
    name: Option<Vec<u8>>,
}

/// Connection ids for `CLIENT ID`.
static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

impl Session {
    /// A session; `authenticated` from the start when no API key is configured.
    pub fn new(authenticated: bool) -> Self {
        Self {
            pending: shardkit_counters::Pending::NONE,
            authenticated,
            id: NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed),
            name: None,
        }
    }
}

/// Round-robin shard for `ID.NEXT` without a shard: spreads load over the shards.
static NEXT_SHARD: AtomicU64 = AtomicU64::new(0);

const NOT_INTEGER: &str = "ERR value is not an integer or out of range";

/// Runs one command, writing its reply into `out`.
pub fn execute(
    cmd: &Command<'_>,
    state: &AppState,
    session: &mut Session,
    out: &mut BytesMut,
) -> Outcome {
    let Some(name) = cmd.arg(0) else {
        return Outcome::Continue;
    };
    let is = |expected: &str| name.eq_ignore_ascii_case(expected.as_bytes());
    if !(session.authenticated || is("AUTH") || is("QUIT") || is("HELLO")) {
        reply::error(out, "NOAUTH Authentication required.");
        return Outcome::Continue;
    }
    if is("PING") {
        match cmd.len() {
            1 => reply::simple(out, "PONG"),
            2 => reply::bulk(out, cmd.arg(1).unwrap_or_default()),
            _ => wrong_arity(out, "ping"),
        }
    } else if is("ECHO") {
        match cmd.arg(1) {
            Some(message) if cmd.len() == 2 => reply::bulk(out, message),
            _ => wrong_arity(out, "echo"),
        }
    } else if is("QUIT") {
        reply::simple(out, "OK");
        return Outcome::Close;
    } else if is("AUTH") {
        auth(cmd, state, session, out);
    } else if is("HELLO") {
        hello(cmd, state, session, out);
    } else if is("SELECT") {
        match cmd.arg(1).and_then(parse_i64) {
            Some(0) if cmd.len() == 2 => reply::simple(out, "OK"),
            Some(_) if cmd.len() == 2 => reply::error(out, "ERR DB index is out of range"),
            _ if cmd.len() != 2 => wrong_arity(out, "select"),
            _ => reply::error(out, NOT_INTEGER),
        }
    } else if is("COMMAND") {
        // redis-cli asks `COMMAND DOCS` at start for hints; an empty answer is valid.
        reply::array_header(out, 0);
    } else if is("CONFIG") {
        config(cmd, out);
    } else if is("CLIENT") {
        client(cmd, session, out);
    } else if is("DBSIZE") {
        let rows: u64 = state
            .counters
            .engine
            .stats()
            .counters
            .iter()
            .map(|c| c.rows)
            .sum();
        reply::integer(out, rows as i64);
    } else if is("INFO") {
        info(state, out);
    } else if is("ID.NEXT") {
        id_next(cmd, state, out);
    } else if is("TICKET.NEXT") {
        ticket_next(cmd, state, out);
    } else if !super::counter_commands::execute(name, cmd, state, &mut session.pending, out) {
        unknown(cmd, out);
    }
    Outcome::Continue
}

fn wrong_arity(out: &mut BytesMut, name: &str) {
    reply::error(
        out,
        &format!("ERR wrong number of arguments for '{name}' command"),
    );
}

/// Redis 7's text: `ERR unknown command 'x', with args beginning with: 'a' 'b' `.
fn unknown(cmd: &Command<'_>, out: &mut BytesMut) {
    let mut message = format!(
        "ERR unknown command '{}', with args beginning with: ",
        String::from_utf8_lossy(cmd.arg(0).unwrap_or_default())
    );
    for arg in cmd.args().skip(1).take(8) {
        message.push_str(&format!(
            "'{}' ",
            String::from_utf8_lossy(&arg[..arg.len().min(64)])
        ));
    }
    reply::error(out, &message);
}

fn auth(cmd: &Command<'_>, state: &AppState, session: &mut Session, out: &mut BytesMut) {
    // AUTH key, or AUTH user key (Redis 6 ACL form; the user is ignored).
    let key = match cmd.len() {
        2 => cmd.arg(1),
        3 => cmd.arg(2),
        _ => return wrong_arity(out, "auth"),
    };
    if !state.access.enforced() {
        reply::error(out, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    } else if state.key_ok(key) {
        session.authenticated = true;
        reply::simple(out, "OK");
    } else {
        reply::error(
            out,
            "WRONGPASS invalid username-password pair or user is disabled.",
        );
    }
}

/// `HELLO [2 [AUTH user key]]`: RESP2 only; answers the server's description.
fn hello(cmd: &Command<'_>, state: &AppState, session: &mut Session, out: &mut BytesMut) {
    if let Some(version) = cmd.arg(1) {
        match parse_i64(version) {
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
    if cmd.len() == 5 && cmd.arg(2).is_some_and(|a| a.eq_ignore_ascii_case(b"AUTH")) {
        if !state.key_ok(cmd.arg(4)) {
            return reply::error(
                out,
                "WRONGPASS invalid username-password pair or user is disabled.",
            );
        }
        session.authenticated = true;
    }
    if !session.authenticated {
        return reply::error(out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    reply::array_header(out, 10);
    reply::bulk(out, b"server");
    reply::bulk(out, b"shardkit");
    reply::bulk(out, b"version");
    reply::bulk(out, env!("CARGO_PKG_VERSION").as_bytes());
    reply::bulk(out, b"proto");
    reply::integer(out, 2);
    reply::bulk(out, b"mode");
    reply::bulk(out, b"standalone");
    reply::bulk(out, b"role");
    reply::bulk(out, b"master");
}

/// `CLIENT SETINFO|SETNAME|GETNAME|ID`: what client libraries send on connect.
fn client(cmd: &Command<'_>, session: &mut Session, out: &mut BytesMut) {
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

/// `CONFIG GET name`: what redis-benchmark and clients ask at start.
fn config(cmd: &Command<'_>, out: &mut BytesMut) {
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

fn info(state: &AppState, out: &mut BytesMut) {
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
    let _ = write!(text, "\r\n# Keyspace\r\n");
    if rows > 0 {
        let _ = write!(text, "db0:keys={rows},expires=0,avg_ttl=0\r\n");
    }
    reply::bulk(out, text.as_bytes());
}

/// Reads an optional non-negative integer argument.
fn arg_u64(cmd: &Command<'_>, i: usize) -> Result<Option<u64>, ()> {
    match cmd.arg(i) {
        None => Ok(None),
        Some(text) => match parse_i64(text) {
            Some(v) if v >= 0 => Ok(Some(v as u64)),
            _ => Err(()),
        },
    }
}

/// `ID.NEXT [shard] [count]`: one id as an integer, or `count` ids as an array.
fn id_next(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    if cmd.len() > 3 {
        return wrong_arity(out, "id.next");
    }
    let (Ok(shard), Ok(count)) = (arg_u64(cmd, 1), arg_u64(cmd, 2)) else {
        return reply::error(out, NOT_INTEGER);
    };
    let shards = state.layout.shards();
    let shard = shard.unwrap_or_else(|| NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % shards);
    if shard >= shards {
        return reply::error(
            out,
            &format!(
                "ERR shard {shard} is out of range: this layout has shards 0 to {}",
                shards - 1
            ),
        );
    }
    match count {
        None => match state.ids.next_id(shard) {
            Ok(id) => {
                crate::telemetry::add(&crate::telemetry::IDS_ISSUED, 1);
                reply::integer(out, id as i64)
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
                    crate::telemetry::add(&crate::telemetry::IDS_ISSUED, n);
                    reply::array_header(out, ids.len());
                    for id in ids {
                        reply::integer(out, id as i64);
                    }
                }
                Err(e) => reply::error(out, &format!("ERR {e}")),
            }
        }
    }
}

/// `TICKET.NEXT name [count]`: the next number of a sequence, or `count` of them.
fn ticket_next(cmd: &Command<'_>, state: &AppState, out: &mut BytesMut) {
    let (Some(name), true) = (cmd.arg(1), (2..=3).contains(&cmd.len())) else {
        return wrong_arity(out, "ticket.next");
    };
    let Ok(count) = arg_u64(cmd, 2) else {
        return reply::error(out, NOT_INTEGER);
    };
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
        crate::telemetry::add(&crate::telemetry::TICKETS_ISSUED, numbers.len() as u64);
    }
    match (result, count) {
        (Ok(numbers), None) => reply::integer(out, numbers[0] as i64),
        (Ok(numbers), Some(_)) => {
            reply::array_header(out, numbers.len());
            for n in numbers {
                reply::integer(out, n as i64);
            }
        }
        (Err(e), _) => reply::error(out, &format!("ERR {e}")),
    }
}
