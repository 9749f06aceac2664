//! The command table: one entry per command (name, arity, flags, key positions, handler),
//! read by the dispatcher and by `COMMAND`. Adding a command is adding one entry to its
//! family's `COMMANDS` list; nothing else names it.
//!
//! The look-up is on the hot path (every `INCR` of a pipeline goes through it), so it
//! allocates nothing: the name is lowercased into a fixed stack buffer and found by
//! binary search in a table sorted once at start.

use super::session::Session;
use bytes::BytesMut;
use shardkit_node::state::AppState;
use shardkit_resp::parse::Command;
use shardkit_resp::reply;
use std::sync::OnceLock;

/// Everything a handler works with: the command, the server, the connection, the output.
pub struct Call<'c, 'a> {
    /// The command as parsed; argument 0 is its name.
    pub cmd: &'c Command<'a>,
    /// The shared server state.
    pub state: &'c AppState,
    /// The counter store the command's keys live in (the server's one store today; a
    /// cluster node's store of the keys' slot group, docs/cluster.md).
    pub counters: &'c shardkit_node::counters::Counters,
    /// The connection's state (authentication, pending writes, id).
    pub session: &'c mut Session,
    /// Where the reply goes.
    pub out: &'c mut BytesMut,
}

/// A command's code: reads its arguments from `call.cmd` and writes exactly one reply.
/// The arity has been checked before it runs.
pub type Handler = fn(&mut Call<'_, '_>);

/// One command, described the way Redis's `COMMAND INFO` describes it.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lowercase name, as `COMMAND` lists it.
    pub name: &'static str,
    /// Redis's convention: `n` is exactly `n` arguments counting the name, `-n` at least `n`.
    pub arity: i32,
    /// Redis's command flags (`write`, `readonly`, `fast`, `admin`, `no_auth`, ...).
    pub flags: &'static [&'static str],
    /// Position of the first key argument (0: the command takes no key).
    pub first_key: i32,
    /// Position of the last key (-1: the last argument).
    pub last_key: i32,
    /// Distance between keys (2 for `MSET k v k v`).
    pub key_step: i32,
    /// ACL categories (`@read`, `@string`, ...), as Redis lists them.
    pub categories: &'static [&'static str],
    /// Command group for `COMMAND DOCS` (`string`, `hash`, `server`, `counter`, ...).
    pub group: &'static str,
    /// One line for `COMMAND DOCS`.
    pub summary: &'static str,
    /// The code.
    pub run: Handler,
}

impl CommandSpec {
    /// Its key positions, for cluster routing.
    pub fn key_spec(&self) -> shardkit_resp::keys::KeySpec {
        shardkit_resp::keys::KeySpec {
            first: self.first_key,
            last: self.last_key,
            step: self.key_step,
        }
    }
}

impl std::fmt::Debug for Call<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("args", &self.cmd.len())
            .finish()
    }
}

impl CommandSpec {
    /// Whether `args` (counting the name) fits the arity.
    #[inline]
    pub fn arity_ok(&self, args: usize) -> bool {
        let args = args as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            args == arity
        } else {
            args >= -arity
        }
    }

    /// Whether the command carries `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }
}

/// Every command, sorted by name (built once).
pub fn all() -> &'static [&'static CommandSpec] {
    static ALL: OnceLock<Vec<&'static CommandSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<&'static CommandSpec> = [
            super::server_commands::COMMANDS,
            super::client_commands::COMMANDS,
            super::server_info::COMMANDS,
            super::keyspace_commands::COMMANDS,
            super::command_info::COMMANDS,
            super::id_commands::COMMANDS,
            super::string_commands::COMMANDS,
            super::hash_commands::COMMANDS,
            super::counter_admin::COMMANDS,
            super::sentinel_commands::COMMANDS,
            super::cluster::commands::COMMANDS,
        ]
        .into_iter()
        .flatten()
        .collect();
        all.sort_by_key(|c| c.name);
        all
    })
}

/// Longest command name the look-up considers; longer names are unknown.
const MAX_NAME: usize = 32;

/// The command named `name` (any case), without allocating.
#[inline]
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    if name.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME];
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let all = all();
    all.binary_search_by(|c| c.name.as_bytes().cmp(&*lower))
        .ok()
        .map(|i| all[i])
}

/// Runs one command, writing its reply into `out`: unknown names and wrong arities
/// are answered as Redis does, then the authentication gate, then the handler.
/// Answers the command's table name (`CLIENT LIST`'s `cmd=`), `None` if unknown.
pub fn execute(
    cmd: &Command<'_>,
    state: &AppState,
    session: &mut Session,
    out: &mut BytesMut,
) -> Option<&'static str> {
    let name = cmd.arg(0)?;
    // A pipeline mostly repeats one command: check the last one first (one short
    // compare instead of a binary search of the table).
    let spec = match session.last_spec {
        Some(last) if name.eq_ignore_ascii_case(last.name.as_bytes()) => Some(last),
        _ => {
            let found = lookup(name);
            if found.is_some() {
                session.last_spec = found;
            }
            found
        }
    };
    // Increments waiting for the engine go before anything that is not one of them
    // (replies stay in order, reads see them).
    if !session.incrs.is_empty() && !spec.is_some_and(|s| super::incr_run::joins_runs(s.name)) {
        super::incr_run::flush(&state.counters, session, out);
    }
    let Some(spec) = spec else {
        unknown(cmd, out);
        return None;
    };
    if !spec.arity_ok(cmd.len()) {
        super::incr_run::flush(&state.counters, session, out);
        wrong_arity(out, spec.name);
    } else if !session.authenticated && !spec.has_flag("no_auth") {
        super::incr_run::flush(&state.counters, session, out);
        reply::error(out, "NOAUTH Authentication required.");
    } else if !session.unrestricted
        && !spec.has_flag("no_auth")
        && !session
            .grant
            .as_ref()
            .is_some_and(|g| g.allows(super::permissions::need_of(spec)))
    {
        super::incr_run::flush(&state.counters, session, out);
        let user = session
            .grant
            .as_ref()
            .map_or("default", |g| g.name.as_str());
        reply::error(out, &super::permissions::refusal(user, spec.name));
    } else if let Some(refusal) = shardkit_node::replication::gate::refuse(&state.replication, name)
    {
        super::incr_run::flush(&state.counters, session, out);
        reply::error(out, refusal);
    } else if let Some(refusal) = (spec.first_key > 0)
        .then(|| shardkit_node::replication::gate::refuse_read(&state.replication))
        .flatten()
    {
        super::incr_run::flush(&state.counters, session, out);
        reply::error(out, &refusal);
    } else if let Some(live) = state.cluster.get() {
        super::cluster::dispatch::run(spec, cmd, state, live, session, out);
    } else {
        (spec.run)(&mut Call {
            cmd,
            state,
            counters: &state.counters,
            session,
            out,
        });
    }
    Some(spec.name)
}

/// Redis's text for a wrong number of arguments.
pub fn wrong_arity(out: &mut BytesMut, name: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use shardkit_resp::keys::keys;

    #[test]
    fn keys_follow_the_command_tables_positions() {
        let args: Vec<&[u8]> = ["MSET", "a", "1", "b", "2"].map(str::as_bytes).to_vec();
        let got: Vec<&[u8]> = keys(lookup(b"mset").unwrap().key_spec(), &args).collect();
        assert_eq!(got, [&b"a"[..], b"b"]);
        let args: Vec<&[u8]> = ["MGET", "a", "b", "c"].map(str::as_bytes).to_vec();
        assert_eq!(keys(lookup(b"mget").unwrap().key_spec(), &args).count(), 3);
        let args: Vec<&[u8]> = ["PING"].map(str::as_bytes).to_vec();
        assert_eq!(keys(lookup(b"ping").unwrap().key_spec(), &args).count(), 0);
    }

    #[test]
    fn names_are_unique_lowercase_and_found_in_any_case() {
        let all = all();
        for pair in all.windows(2) {
            assert!(pair[0].name < pair[1].name, "{} twice", pair[0].name);
        }
        for spec in all {
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
            assert!(spec.name.len() <= MAX_NAME);
            assert!(!spec.summary.is_empty(), "{}", spec.name);
            let upper = spec.name.to_ascii_uppercase();
            assert_eq!(lookup(upper.as_bytes()).map(|c| c.name), Some(spec.name));
        }
        assert!(lookup(b"nosuch").is_none());
        assert!(lookup(&[b'a'; 40]).is_none());
    }

    #[test]
    fn arity_follows_redis_convention() {
        let get = lookup(b"get").unwrap();
        assert!(get.arity_ok(2) && !get.arity_ok(1) && !get.arity_ok(3));
        let mget = lookup(b"MGET").unwrap();
        assert!(mget.arity_ok(2) && mget.arity_ok(9) && !mget.arity_ok(1));
    }
}
