//! `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name…`, `COMMAND DOCS [name…]` and
//! `COMMAND LIST`, answered from the command table in Redis 7's reply shapes (key
//! specifications, tips and subcommands are empty lists; `DOCS` gives summary and group).

use super::table::{self, Call, CommandSpec};
use bytes::BytesMut;
use shardkit_resp::reply;

/// `COMMAND`'s entry of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "command",
    arity: -1,
    flags: &["loading", "stale"],
    first_key: 0,
    last_key: 0,
    key_step: 0,
    categories: &["@slow", "@connection"],
    group: "server",
    summary: "Details of every command: COMMAND [COUNT | INFO name... | DOCS [name...] | LIST]",
    run: command,
}];

fn command(call: &mut Call<'_, '_>) {
    let cmd = call.cmd;
    let resp3 = call.session.resp3;
    let out = &mut *call.out;
    let Some(sub) = cmd.arg(1) else {
        return info_of_all(out);
    };
    let sub_upper = sub.to_ascii_uppercase();
    let names = || cmd.args().skip(2);
    match sub_upper.as_slice() {
        b"COUNT" if cmd.len() == 2 => reply::integer(out, table::all().len() as i64),
        b"LIST" if cmd.len() == 2 => {
            reply::array_header(out, table::all().len());
            for spec in table::all() {
                reply::bulk(out, spec.name.as_bytes());
            }
        }
        b"INFO" if cmd.len() == 2 => info_of_all(out),
        b"INFO" => {
            reply::array_header(out, cmd.len() - 2);
            for name in names() {
                match table::lookup(name) {
                    Some(spec) => write_info(out, spec),
                    None => reply::null(out, resp3),
                }
            }
        }
        b"DOCS" => {
            let found: Vec<&CommandSpec> = if cmd.len() == 2 {
                table::all().to_vec()
            } else {
                names().filter_map(table::lookup).collect()
            };
            reply::map_header(out, found.len(), resp3);
            for spec in found {
                reply::bulk(out, spec.name.as_bytes());
                write_docs(out, spec, resp3);
            }
        }
        b"COUNT" | b"LIST" => {
            let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
            reply::error(
                out,
                &format!("ERR wrong number of arguments for 'command|{sub}' command"),
            );
        }
        _ => reply::error(
            out,
            &format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(sub)
            ),
        ),
    }
}

fn info_of_all(out: &mut BytesMut) {
    reply::array_header(out, table::all().len());
    for spec in table::all() {
        write_info(out, spec);
    }
}

/// Redis 7's ten fields: name, arity, flags, first key, last key, step, ACL
/// categories, tips, key specifications, subcommands.
fn write_info(out: &mut BytesMut, spec: &CommandSpec) {
    reply::array_header(out, 10);
    reply::bulk(out, spec.name.as_bytes());
    reply::integer(out, i64::from(spec.arity));
    reply::array_header(out, spec.flags.len());
    for flag in spec.flags {
        reply::simple(out, flag);
    }
    reply::integer(out, i64::from(spec.first_key));
    reply::integer(out, i64::from(spec.last_key));
    reply::integer(out, i64::from(spec.key_step));
    reply::array_header(out, spec.categories.len());
    for category in spec.categories {
        reply::simple(out, category);
    }
    reply::array_header(out, 0);
    reply::array_header(out, 0);
    reply::array_header(out, 0);
}

/// The documentation map (a flat array in RESP2): summary and group.
fn write_docs(out: &mut BytesMut, spec: &CommandSpec, resp3: bool) {
    reply::map_header(out, 2, resp3);
    reply::bulk(out, b"summary");
    reply::bulk(out, spec.summary.as_bytes());
    reply::bulk(out, b"group");
    reply::bulk(out, spec.group.as_bytes());
}
