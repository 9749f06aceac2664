//! `CLIENT …`: what client libraries send on connect (`SETINFO`, `SETNAME`), what
//! operators use to see and drop connections (`LIST`, `INFO`, `KILL`), and the flags
//! Redis 7 clients set (`NO-EVICT`, `NO-TOUCH`, accepted: nothing here is evicted or
//! has an access time).

use super::table::{Call, CommandSpec};
use shardkit_resp::reply;

/// `CLIENT`'s entry of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "client",
    arity: -2,
    flags: &[],
    first_key: 0,
    last_key: 0,
    key_step: 0,
    categories: &["@slow"],
    group: "connection",
    summary: "CLIENT SETINFO|SETNAME|GETNAME|ID|INFO|LIST|KILL|NO-EVICT|NO-TOUCH",
    run: client,
}];

fn client(call: &mut Call<'_, '_>) {
    let sub = String::from_utf8_lossy(call.cmd.arg(1).unwrap_or_default()).to_ascii_lowercase();
    let n = call.cmd.len();
    let arity_ok = match sub.as_str() {
        "setinfo" => n == 4,
        "setname" | "no-evict" | "no-touch" => n == 3,
        "getname" | "id" | "info" => n == 2,
        "list" | "kill" => n >= 2,
        _ => {
            return reply::error(
                call.out,
                &format!(
                    "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(call.cmd.arg(1).unwrap_or_default())
                ),
            )
        }
    };
    if !arity_ok {
        return reply::error(
            call.out,
            &format!("ERR wrong number of arguments for 'client|{sub}' command"),
        );
    }
    if matches!(sub.as_str(), "kill" | "list") && !call.session.unrestricted {
        let user = call
            .session
            .grant
            .as_ref()
            .map_or("default", |g| g.name.as_str());
        return reply::error(
            call.out,
            &super::permissions::refusal(user, &format!("client|{sub}")),
        );
    }
    match sub.as_str() {
        "setinfo" => setinfo(call),
        "setname" => {
            let name = call.cmd.arg(2).unwrap_or_default();
            if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
                return reply::error(
                    call.out,
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            call.session.client.set_name(name);
            reply::simple(call.out, "OK");
        }
        "getname" => match call.session.client.name() {
            Some(name) => reply::bulk(call.out, &name),
            None => reply::null(call.out, call.session.resp3),
        },
        "id" => reply::integer(call.out, call.session.id as i64),
        "info" => {
            let line = call.session.client.line() + "\n";
            reply::verbatim(call.out, line.as_bytes(), call.session.resp3);
        }
        "list" => list(call),
        "kill" => kill(call),
        _ => match call.cmd.arg(2).map(|a| a.to_ascii_lowercase()).as_deref() {
            Some(b"on" | b"off") => reply::simple(call.out, "OK"),
            _ => reply::error(call.out, "ERR syntax error"),
        },
    }
}

/// `CLIENT SETINFO LIB-NAME|LIB-VER value`.
fn setinfo(call: &mut Call<'_, '_>) {
    let attr = call.cmd.arg(2).unwrap_or_default().to_ascii_lowercase();
    let value = call.cmd.arg(3).unwrap_or_default();
    if value.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return reply::error(
            call.out,
            &format!(
                "ERR {} cannot contain spaces, newlines or special characters.",
                String::from_utf8_lossy(&attr)
            ),
        );
    }
    match attr.as_slice() {
        b"lib-name" => call.session.client.set_lib(Some(value), None),
        b"lib-ver" => call.session.client.set_lib(None, Some(value)),
        _ => {
            return reply::error(
                call.out,
                &format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(call.cmd.arg(2).unwrap_or_default())
                ),
            )
        }
    }
    reply::simple(call.out, "OK");
}

/// `CLIENT LIST [TYPE normal] [ID id …]`.
fn list(call: &mut Call<'_, '_>) {
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while let Some(option) = call.cmd.arg(i) {
        let option = option.to_ascii_lowercase();
        match (option.as_slice(), call.cmd.arg(i + 1)) {
            (b"type", Some(kind)) => {
                if !kind.eq_ignore_ascii_case(b"normal") {
                    // No replica, pubsub or master connections exist here.
                    ids = Some(Vec::new());
                }
                i += 2;
            }
            (b"id", Some(_)) => {
                let mut wanted = Vec::new();
                for raw in call.cmd.args().skip(i + 1) {
                    match super::values::strict_i64(raw) {
                        Some(id) if id > 0 => wanted.push(id as u64),
                        _ => return reply::error(call.out, "ERR Invalid client ID"),
                    }
                }
                ids = Some(wanted);
                i = call.cmd.len();
            }
            _ => return reply::error(call.out, "ERR syntax error"),
        }
    }
    let mut text = String::new();
    for client in call.session.clients.list() {
        if ids.as_ref().is_none_or(|ids| ids.contains(&client.id)) {
            text.push_str(&client.line());
            text.push('\n');
        }
    }
    reply::verbatim(call.out, text.as_bytes(), call.session.resp3);
}

/// `CLIENT KILL ip:port` (the old form: `OK` or an error) or `CLIENT KILL <filter>
/// <value> …` with `ID`, `ADDR`, `LADDR`, `SKIPME` (an integer: how many closed).
fn kill(call: &mut Call<'_, '_>) {
    let me = call.session.id;
    if call.cmd.len() == 3 {
        let addr = String::from_utf8_lossy(call.cmd.arg(2).unwrap_or_default()).into_owned();
        return match call.session.clients.kill(|c| c.addr == addr) {
            0 => reply::error(call.out, "ERR No such client"),
            _ => reply::simple(call.out, "OK"),
        };
    }
    if !call.cmd.len().is_multiple_of(2) || call.cmd.len() < 4 {
        return reply::error(call.out, "ERR syntax error");
    }
    let (mut id, mut addr, mut laddr, mut skip_me) = (None, None, None, true);
    for pair in (2..call.cmd.len()).step_by(2) {
        let filter = call.cmd.arg(pair).unwrap_or_default().to_ascii_lowercase();
        let value = call.cmd.arg(pair + 1).unwrap_or_default();
        match filter.as_slice() {
            b"id" => match super::values::strict_i64(value) {
                Some(v) if v > 0 => id = Some(v as u64),
                _ => return reply::error(call.out, "ERR client-id should be greater than 0"),
            },
            b"addr" => addr = Some(String::from_utf8_lossy(value).into_owned()),
            b"laddr" => laddr = Some(String::from_utf8_lossy(value).into_owned()),
            b"skipme" => match value.to_ascii_lowercase().as_slice() {
                b"yes" => skip_me = true,
                b"no" => skip_me = false,
                _ => return reply::error(call.out, "ERR syntax error"),
            },
            _ => return reply::error(call.out, "ERR syntax error"),
        }
    }
    let killed = call.session.clients.kill(|c| {
        id.is_none_or(|id| c.id == id)
            && addr.as_ref().is_none_or(|a| &c.addr == a)
            && laddr.as_ref().is_none_or(|a| &c.laddr == a)
            && !(skip_me && c.id == me)
    });
    reply::integer(call.out, killed as i64);
}
