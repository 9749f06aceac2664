//! Which role a RESP command needs when API keys are in force: `AUTH name key` (or
//! `AUTH key`) proves a key, and its roles decide what runs, as Redis's ACL users do.
//! A command the key's roles do not cover answers Redis 7.2's `-NOPERM User <name> has
//! no permissions to run the '<command>' command`.
//!
//! The rule reads the command table: commands flagged `write` need `counters:write`,
//! `readonly` ones `counters:read` (which `counters:write` also grants), `ID.NEXT` and
//! `TICKET.NEXT` need `ids`, the connection commands any key, `ROLE`, `INFO`,
//! `SENTINEL` and `CLUSTER` a reader, and what changes or reveals the server as a whole (`FLUSHDB`,
//! `FLUSHALL`, `CONFIG`, `CLIENT KILL`) an admin key. An admin key (and a server with
//! no key) skips the check.

use super::table::CommandSpec;
use shardkit_node::api_keys::Need;

/// Commands any authenticated connection may run.
const ANY_KEY: &[&str] = &[
    "asking",
    "auth",
    "client",
    "command",
    "echo",
    "hello",
    "ping",
    "quit",
    "readonly",
    "readwrite",
    "select",
    "time",
];

/// Commands about the server that a counter reader may run (figures, no secrets).
const SERVER_READ: &[&str] = &["cluster", "dbsize", "info", "lastsave", "role", "sentinel"];

/// Commands only an admin key runs.
const ADMIN: &[&str] = &["config", "flushall", "flushdb"];

/// What `spec` needs (see the module doc).
pub fn need_of(spec: &CommandSpec) -> Need {
    let name = spec.name;
    if ANY_KEY.contains(&name) {
        Need::Nothing
    } else if ADMIN.contains(&name) {
        Need::Admin
    } else if name == "id.next" || name == "ticket.next" {
        Need::Ids
    } else if spec.has_flag("write") || name == "counter.create" || name == "counter.addcol" {
        Need::CountersWrite
    } else if spec.has_flag("readonly") || SERVER_READ.contains(&name) || name == "counter.info" {
        Need::CountersRead
    } else {
        Need::Admin
    }
}

/// Redis 7.2's refusal text.
pub fn refusal(user: &str, command: &str) -> String {
    format!("NOPERM User {user} has no permissions to run the '{command}' command")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::table;

    #[test]
    fn every_command_needs_what_its_flags_say() {
        for spec in table::all() {
            let need = need_of(spec);
            if spec.has_flag("write") {
                assert!(
                    matches!(need, Need::CountersWrite | Need::Admin | Need::Ids),
                    "{} writes",
                    spec.name
                );
            }
            if spec.name.starts_with("counter.") {
                assert_ne!(need, Need::Admin, "{}", spec.name);
            }
        }
        let need = |name: &str| need_of(table::lookup(name.as_bytes()).unwrap());
        assert_eq!(need("get"), Need::CountersRead);
        assert_eq!(need("scan"), Need::CountersRead);
        assert_eq!(need("hincrby"), Need::CountersWrite);
        assert_eq!(need("counter.incrby"), Need::CountersWrite);
        assert_eq!(need("id.next"), Need::Ids);
        assert_eq!(need("flushall"), Need::Admin);
        assert_eq!(need("ping"), Need::Nothing);
    }
}
