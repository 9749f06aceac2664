//! What current clients meet on connect and when they look around: `HELLO 3` and the
//! RESP3 reply types, ids as exact strings, `CLIENT LIST/KILL`, `CONFIG GET` and
//! `INFO` telling the truth, `TYPE`/`TTL`/`SCAN`, `TIME`/`LASTSAVE`, against the real
//! server on its port.

mod common;

use common::Server;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A connection that sends commands and reads whatever bytes come back.
struct Wire(TcpStream);

impl Wire {
    fn open(server: &Server) -> Wire {
        let stream = TcpStream::connect(server.resp).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Wire(stream)
    }

    /// Sends one command and reads until `done` says the bytes hold the whole reply.
    fn send(&mut self, args: &[&str], done: impl Fn(&str) -> bool) -> String {
        let mut frame = format!("*{}\r\n", args.len());
        for a in args {
            frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.0.write_all(frame.as_bytes()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        while !done(&String::from_utf8_lossy(&got)) {
            let n = self.0.read(&mut buf).expect("a reply in time");
            assert!(n > 0, "connection closed after {got:?}");
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    /// One command whose reply is `lines` CRLF-terminated lines.
    fn lines(&mut self, args: &[&str], lines: usize) -> String {
        self.send(args, |s| s.matches("\r\n").count() >= lines)
    }
}

fn start(config: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("shardkit.toml");
    std::fs::write(&config_path, config).unwrap();
    let server = Server::try_start(
        &dir.path().join("data"),
        &[
            "--http",
            "127.0.0.1:0",
            "--resp",
            "127.0.0.1:0",
            "--config",
            config_path.to_str().unwrap(),
        ],
        &[],
    )
    .expect("server starts");
    (dir, server)
}

#[test]
fn hello_3_switches_to_resp3_and_hello_2_back() {
    let (_dir, server) = start("");
    let mut wire = Wire::open(&server);
    // RESP2 before any HELLO.
    assert_eq!(wire.lines(&["HGET", "nosuch:1", "f"], 1), "$-1\r\n");
    let hello = wire.lines(&["HELLO", "3"], 26);
    assert!(
        hello.starts_with("%7\r\n$6\r\nserver\r\n$8\r\nshardkit\r\n"),
        "{hello}"
    );
    assert!(hello.contains("$5\r\nproto\r\n:3\r\n"), "{hello}");
    // RESP3: `_` null, a map for HGETALL, a verbatim string for INFO, a double.
    assert_eq!(wire.lines(&["HGET", "nosuch:1", "f"], 1), "_\r\n");
    assert_eq!(wire.lines(&["HINCRBY", "w:56", "likes", "1"], 1), ":1\r\n");
    assert_eq!(
        wire.lines(&["HGETALL", "w:56"], 5),
        "%1\r\n$5\r\nlikes\r\n$1\r\n1\r\n"
    );
    let info = wire.send(&["INFO", "server"], |s| s.ends_with("\r\n") && s.len() > 40);
    assert!(
        info.starts_with('=') && info.contains("txt:# Server"),
        "{info}"
    );
    let counter = wire.send(&["COUNTER.INFO", "w"], |s| {
        s.contains("default") && s.ends_with("\r\n")
    });
    assert!(counter.starts_with("%12\r\n"), "{counter}");
    assert!(counter.contains("$13\r\nbytes_per_row\r\n,"), "{counter}");
    // Back to RESP2.
    assert!(wire.lines(&["HELLO", "2"], 26).starts_with("*14\r\n"));
    assert_eq!(wire.lines(&["HGET", "nosuch:1", "f"], 1), "$-1\r\n");
    assert_eq!(
        wire.lines(&["HGETALL", "w:56"], 5),
        "*2\r\n$5\r\nlikes\r\n$1\r\n1\r\n"
    );
    // An unknown version, and options in the wrong place.
    assert!(wire.lines(&["HELLO", "4"], 1).starts_with("-NOPROTO "));
    assert!(wire
        .lines(&["HELLO", "3", "BOGUS"], 1)
        .starts_with("-ERR Syntax error in HELLO option 'BOGUS'"));
    // Nothing changed: still RESP2.
    assert_eq!(wire.lines(&["HGET", "nosuch:1", "f"], 1), "$-1\r\n");
}

#[test]
fn hello_auth_authenticates_and_switches_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let key = "a-test-admin-key-0123456789";
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", key)]);
    let mut wire = Wire::open(&server);
    assert!(wire.lines(&["INCR", "a:1"], 1).starts_with("-NOAUTH "));
    assert!(wire
        .lines(&["HELLO", "3", "AUTH", "default", "wrong-key"], 1)
        .starts_with("-WRONGPASS "));
    assert!(wire
        .lines(&["HELLO", "3"], 1)
        .starts_with("-NOAUTH HELLO must be called"));
    assert!(wire
        .lines(&["HELLO", "3", "AUTH", "default", key], 26)
        .starts_with("%7\r\n"));
    assert_eq!(wire.lines(&["INCR", "a:1"], 1), ":1\r\n");
}

#[test]
fn ids_and_tickets_are_exact_decimal_strings() {
    let (_dir, server) = start("");
    let mut wire = Wire::open(&server);
    let one = wire.lines(&["ID.NEXT", "5"], 2);
    assert!(one.starts_with('$'), "{one}");
    let id: u64 = one.lines().nth(1).unwrap().parse().unwrap();
    assert!(id > 1 << 53, "an Instagram-layout id is past 2^53: {id}");
    let two = wire.lines(&["ID.NEXT", "5", "2"], 5);
    let ids: Vec<u64> = two
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with('$'))
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(ids.len() == 2 && id < ids[0] && ids[0] < ids[1], "{two}");
    assert_eq!(wire.lines(&["TICKET.NEXT", "orders"], 2), "$1\r\n1\r\n");
    // The Rust client reads them as numbers.
    let mut con = server.redis();
    let next: u64 = redis::cmd("ID.NEXT").arg(5).query(&mut con).unwrap();
    assert!(next > ids[1]);
}

#[test]
fn client_list_names_kills_and_info_counts_connections() {
    let (_dir, server) = start("");
    let mut me = Wire::open(&server);
    let mut other = Wire::open(&server);
    assert_eq!(me.lines(&["CLIENT", "SETNAME", "worker-1"], 1), "+OK\r\n");
    assert_eq!(
        me.lines(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"], 1),
        "+OK\r\n"
    );
    assert!(me
        .lines(&["CLIENT", "SETNAME", "has space"], 1)
        .starts_with("-ERR Client names cannot contain spaces"));
    assert_eq!(me.lines(&["CLIENT", "GETNAME"], 2), "$8\r\nworker-1\r\n");
    assert_eq!(me.lines(&["CLIENT", "NO-EVICT", "on"], 1), "+OK\r\n");
    assert_eq!(me.lines(&["CLIENT", "NO-TOUCH", "on"], 1), "+OK\r\n");
    let other_id = other.lines(&["CLIENT", "ID"], 1);
    let other_id = other_id.trim_start_matches(':').trim().to_string();
    let list = me.send(&["CLIENT", "LIST"], |s| {
        s.matches("id=").count() >= 2 && s.ends_with("\n\r\n")
    });
    assert!(
        list.contains("name=worker-1") && list.contains("lib-name=redis-py"),
        "{list}"
    );
    assert!(list.contains(&format!("id={other_id} ")), "{list}");
    let info = me.send(&["INFO", "clients"], |s| s.contains("blocked_clients"));
    assert!(info.contains("connected_clients:2\r\n"), "{info}");
    assert_eq!(me.lines(&["CLIENT", "KILL", "ID", &other_id], 1), ":1\r\n");
    // The killed connection is closed by the server.
    let mut buf = [0u8; 16];
    other.0.write_all(b"PING\r\n").ok();
    let read = other.0.read(&mut buf);
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "killed connection still answers: {read:?}"
    );
    assert!(me
        .lines(&["CLIENT", "KILL", "127.0.0.1:1"], 1)
        .starts_with("-ERR No such client"));
    assert!(me
        .lines(&["CLIENT", "BOGUS"], 1)
        .starts_with("-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP."));
}

#[test]
fn config_get_and_info_answer_the_settings_in_effect() {
    let (_dir, server) = start(
        "[counters]\nfsync = \"everysec\"\nsnapshot_seconds = 900\nsnapshot_growth_percent = 50\n",
    );
    let mut con = server.redis();
    let get = |con: &mut redis::Connection, name: &str| -> Vec<String> {
        redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query(con)
            .unwrap()
    };
    assert_eq!(get(&mut con, "appendfsync"), ["appendfsync", "everysec"]);
    assert_eq!(get(&mut con, "appendonly"), ["appendonly", "yes"]);
    assert_eq!(get(&mut con, "save"), ["save", "900 1"]);
    assert_eq!(
        get(&mut con, "auto-aof-rewrite-percentage"),
        ["auto-aof-rewrite-percentage", "50"]
    );
    let all = get(&mut con, "*");
    assert!(all.len() >= 20 && all.contains(&"maxmemory-policy".to_string()));
    assert_eq!(get(&mut con, "append*").len(), 4);
    assert!(get(&mut con, "nosuch").is_empty());
    let err = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendfsync")
        .arg("no")
        .query::<String>(&mut con)
        .unwrap_err();
    assert!(err.to_string().contains("not supported"), "{err}");

    let _: i64 = redis::cmd("INCR").arg("page:7").query(&mut con).unwrap();
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    for needle in [
        "# Server\r\n",
        "redis_version:",
        "process_id:",
        "# Clients\r\nconnected_clients:1\r\n",
        "# Memory\r\nused_memory:",
        "# Persistence\r\n",
        "aof_fsync:everysec\r\n",
        "# Stats\r\n",
        "total_commands_processed:",
        "# Replication\r\nrole:master",
        "# CPU\r\n",
        "counter_page:rows=1,",
        "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n",
    ] {
        assert!(info.contains(needle), "{needle:?} in\n{info}");
    }
    let used: u64 = field(&info, "used_memory");
    assert!(used > 1 << 20, "resident set of a real process: {used}");
    // Sections can be asked for one by one; unknown ones are skipped.
    let only: String = redis::cmd("INFO")
        .arg("persistence")
        .arg("nosuch")
        .query(&mut con)
        .unwrap();
    assert!(only.starts_with("# Persistence") && !only.contains("# Server"));
    // The fsync thread of `everysec` has run within a couple of seconds.
    std::thread::sleep(Duration::from_millis(2200));
    let persistence: String = redis::cmd("INFO")
        .arg("persistence")
        .query(&mut con)
        .unwrap();
    let fsynced: u64 = field(&persistence, "aof_last_fsync_time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now - fsynced <= 5, "last fsync {fsynced}, now {now}");
    let (secs, micros): (String, String) = redis::cmd("TIME").query(&mut con).unwrap();
    assert!(secs.parse::<u64>().unwrap().abs_diff(now) <= 5);
    assert!(micros.parse::<u32>().unwrap() < 1_000_000);
    let lastsave: u64 = redis::cmd("LASTSAVE").query(&mut con).unwrap();
    assert!(lastsave <= now && now - lastsave < 120);
}

fn field(info: &str, name: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} in {info}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn type_ttl_and_scan_walk_every_row_once() {
    let (_dir, server) = start("");
    let mut con = server.redis();
    let mut pipe = redis::pipe();
    for id in 0..3000u64 {
        pipe.cmd("INCR")
            .arg(format!("views:{}", id * 7919))
            .ignore();
    }
    for id in 0..40u64 {
        pipe.cmd("HINCRBY")
            .arg(format!("weibo:{id}"))
            .arg("likes")
            .arg(1)
            .ignore();
    }
    pipe.cmd("INCR").arg("views:home").ignore();
    let () = pipe.query(&mut con).unwrap();

    let t = |con: &mut redis::Connection, key: &str| -> String {
        redis::cmd("TYPE").arg(key).query(con).unwrap()
    };
    assert_eq!(t(&mut con, "views:7919"), "string");
    assert_eq!(t(&mut con, "weibo:3"), "hash");
    assert_eq!(t(&mut con, "weibo:3:likes"), "string");
    assert_eq!(t(&mut con, "weibo:999"), "none");
    assert_eq!(t(&mut con, "nosuch:1"), "none");
    assert_eq!(t(&mut con, "nocolon"), "none");
    let ttl = |con: &mut redis::Connection, cmd: &str, key: &str| -> i64 {
        redis::cmd(cmd).arg(key).query(con).unwrap()
    };
    assert_eq!(ttl(&mut con, "TTL", "views:7919"), -1);
    assert_eq!(ttl(&mut con, "PTTL", "weibo:3"), -1);
    assert_eq!(ttl(&mut con, "TTL", "weibo:999"), -2);

    let walk = |con: &mut redis::Connection, extra: &[&str]| -> (Vec<String>, usize) {
        let mut cursor = "0".to_string();
        let mut keys = Vec::new();
        let mut calls = 0;
        loop {
            let (next, batch): (String, Vec<String>) = redis::cmd("SCAN")
                .arg(&cursor)
                .arg(extra)
                .query(con)
                .unwrap();
            calls += 1;
            keys.extend(batch);
            assert!(calls < 10_000, "SCAN does not end");
            if next == "0" {
                return (keys, calls);
            }
            cursor = next;
        }
    };
    let (all, calls) = walk(&mut con, &["COUNT", "100"]);
    let unique: BTreeSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 3041, "every row once");
    assert_eq!(unique.len(), 3041);
    assert!(unique.contains(&"views:home".to_string()));
    assert!(calls > 10, "COUNT bounds each call: {calls} calls");
    let (views, _) = walk(&mut con, &["MATCH", "views:*", "COUNT", "1000"]);
    assert_eq!(views.len(), 3001);
    let (sevens, _) = walk(&mut con, &["MATCH", "views:7919?"]);
    assert!(sevens
        .iter()
        .all(|k| k.starts_with("views:7919") && k.len() == 11));
    let (hashes, _) = walk(&mut con, &["TYPE", "hash"]);
    assert_eq!(hashes.len(), 40);
    let err = redis::cmd("SCAN")
        .arg("x")
        .query::<redis::Value>(&mut con)
        .unwrap_err();
    assert!(err.to_string().contains("invalid cursor"), "{err}");
}

#[test]
fn errors_name_the_resp_command_that_fixes_them() {
    let (_dir, server) = start("[counters]\nauto_create = false\n");
    let mut con = server.redis();
    let err = redis::cmd("COUNTER.INFO")
        .arg("weibo")
        .query::<redis::Value>(&mut con)
        .unwrap_err();
    assert!(err.to_string().contains("COUNTER.CREATE weibo"), "{err}");
    let err = redis::cmd("INCR")
        .arg("weibo:1")
        .query::<i64>(&mut con)
        .unwrap_err();
    assert!(err.to_string().contains("COUNTER.CREATE weibo"), "{err}");
    let () = redis::cmd("COUNTER.CREATE")
        .arg("weibo")
        .query(&mut con)
        .unwrap();
    let err = redis::cmd("HINCRBY")
        .arg("weibo:1")
        .arg("likes")
        .arg(1)
        .query::<i64>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string().contains("COUNTER.ADDCOL weibo likes"),
        "{err}"
    );
}
