//! The Redis protocol of the real server, through the `redis` crate and raw sockets.

mod common;

use common::Server;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn raw(server: &Server, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(server.resp).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn basic_commands_ids_and_tickets() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut con = server.redis();
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut con).unwrap(),
        "PONG"
    );
    assert_eq!(
        redis::cmd("ECHO")
            .arg("hi there")
            .query::<String>(&mut con)
            .unwrap(),
        "hi there"
    );
    let one: u64 = redis::cmd("ID.NEXT").arg(77).query(&mut con).unwrap();
    assert_eq!((one >> 10) & 8191, 77);
    let many: Vec<u64> = redis::cmd("id.next")
        .arg(77)
        .arg(100)
        .query(&mut con)
        .unwrap();
    assert_eq!(many.len(), 100);
    assert!(many[0] > one && many.windows(2).all(|w| w[0] < w[1]));
    let any: u64 = redis::cmd("ID.NEXT").query(&mut con).unwrap();
    assert!(any > 0);
    let same: Vec<u64> = redis::cmd("ID.NEXT")
        .arg(77)
        .arg(2)
        .arg("FORMAT")
        .arg("snowflake")
        .query(&mut con)
        .unwrap();
    assert!(same[0] > many[99] && (same[0] >> 10) & 8191 == 77);
    let uuid: String = redis::cmd("ID.NEXT")
        .arg("FORMAT")
        .arg("uuid7")
        .query(&mut con)
        .unwrap();
    let uuids: Vec<String> = redis::cmd("ID.NEXT")
        .arg(50)
        .arg("format")
        .arg("UUID7")
        .query(&mut con)
        .unwrap();
    assert_eq!((uuid.len(), uuids.len()), (36, 50));
    assert!(uuid < uuids[0] && uuids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(&uuids[0][14..15], "7", "the version digit");
    let ulids: Vec<String> = redis::cmd("ID.NEXT")
        .arg(3)
        .arg("FORMAT")
        .arg("ulid")
        .query(&mut con)
        .unwrap();
    assert!(ulids.len() == 3 && ulids.iter().all(|u| u.len() == 26));
    assert!(ulids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        redis::cmd("TICKET.NEXT")
            .arg("orders")
            .query::<u64>(&mut con)
            .unwrap(),
        1
    );
    assert_eq!(
        redis::cmd("TICKET.NEXT")
            .arg("orders")
            .arg(3)
            .query::<Vec<u64>>(&mut con)
            .unwrap(),
        vec![2, 3, 4]
    );
    assert_eq!(
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg("worker-1")
            .query::<String>(&mut con)
            .unwrap(),
        "OK"
    );
    assert_eq!(
        redis::cmd("CLIENT")
            .arg("GETNAME")
            .query::<String>(&mut con)
            .unwrap(),
        "worker-1"
    );
    assert!(
        redis::cmd("CLIENT")
            .arg("ID")
            .query::<i64>(&mut con)
            .unwrap()
            > 0
    );
}

#[test]
fn errors_are_redis_errors_and_the_connection_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut con = server.redis();
    let err = |r: redis::RedisResult<redis::Value>| r.unwrap_err().to_string();
    assert!(err(redis::cmd("ID.NEXT").arg("x").query(&mut con))
        .contains("value is not an integer or out of range"));
    assert!(err(redis::cmd("ID.NEXT").arg(8192).query(&mut con)).contains("out of range"));
    assert!(err(redis::cmd("ID.NEXT").arg(1).arg(0).query(&mut con)).contains("count"));
    assert!(err(redis::cmd("ID.NEXT")
        .arg("FORMAT")
        .arg("uuid4")
        .query(&mut con))
    .contains("FORMAT must be snowflake, uuid7 or ulid"));
    assert!(err(redis::cmd("ID.NEXT")
        .arg(1)
        .arg(2)
        .arg("FORMAT")
        .arg("uuid7")
        .query(&mut con))
    .contains("uuid7 ids have no shard"));
    assert!(err(redis::cmd("ID.NEXT")
        .arg(0)
        .arg("FORMAT")
        .arg("ulid")
        .query(&mut con))
    .contains("count"));
    assert!(
        err(redis::cmd("ID.NEXT").arg(1).arg(2).arg(3).query(&mut con))
            .contains("wrong number of arguments")
    );
    assert!(err(redis::cmd("TICKET.NEXT").query(&mut con)).contains("wrong number of arguments"));
    assert!(err(redis::cmd("TICKET.NEXT").arg("no spaces").query(&mut con)).contains("invalid"));
    assert!(err(redis::cmd("NOSUCH").arg("a").query(&mut con)).contains("unknown command 'NOSUCH'"));
    assert!(err(redis::cmd("SELECT").arg(3).query(&mut con)).contains("DB index is out of range"));
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut con).unwrap(),
        "PONG"
    );
}

#[test]
fn pipelines_get_every_reply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut con = server.redis();
    let mut pipe = redis::pipe();
    for i in 0..500 {
        pipe.cmd("ECHO").arg(i);
    }
    let echoed: Vec<String> = pipe.query(&mut con).unwrap();
    assert_eq!(echoed, (0..500).map(|i| i.to_string()).collect::<Vec<_>>());
    let answer = raw(&server, b"PING\r\nECHO \"a b\"\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(answer, "+PONG\r\n$3\r\na b\r\n+PONG\r\n");
}

#[test]
fn garbage_and_huge_announcements_get_errors_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // A 4 GB bulk is refused before anything is allocated, and the connection closed.
    let answer = raw(&server, b"*1\r\n$4294967296\r\n");
    assert_eq!(answer, "-ERR Protocol error: invalid bulk length\r\n");
    let answer = raw(&server, b"*1\r\n$1073741824\r\n");
    assert_eq!(answer, "-ERR Protocol error: invalid bulk length\r\n");
    let answer = raw(&server, b"*2\r\n:1\r\n");
    assert!(
        answer.starts_with("-ERR Protocol error: expected '$'"),
        "{answer}"
    );
    // An unbalanced inline line has a known end: error, then the next command works.
    let answer = raw(&server, b"ECHO \"open\r\nPING\r\n");
    assert_eq!(
        answer,
        "-ERR Protocol error: unbalanced quotes in request\r\n+PONG\r\n"
    );
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let _ = raw(&server, &noise);
    let mut con = server.redis();
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut con).unwrap(),
        "PONG"
    );
}

#[test]
fn with_an_api_key_commands_need_auth() {
    let dir = tempfile::tempdir().unwrap();
    let key = "k3y-0123456789abcdef";
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", key)]);
    let mut con = server.redis();
    let refused = redis::cmd("ID.NEXT")
        .query::<u64>(&mut con)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("NOAUTH"), "{refused}");
    assert!(redis::cmd("AUTH")
        .arg("wrong")
        .query::<String>(&mut con)
        .is_err());
    assert_eq!(
        redis::cmd("AUTH")
            .arg(key)
            .query::<String>(&mut con)
            .unwrap(),
        "OK"
    );
    assert!(redis::cmd("ID.NEXT").query::<u64>(&mut con).is_ok());
    let url = format!("redis://:{key}@{}/", server.resp);
    let mut authed = redis::Client::open(url).unwrap().get_connection().unwrap();
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut authed).unwrap(),
        "PONG"
    );
}
