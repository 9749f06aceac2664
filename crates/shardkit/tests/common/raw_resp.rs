//! A raw RESP2 client for byte-for-byte comparisons, and a private `redis-server` on a
//! free loopback port (no persistence, so `FLUSHALL` is harmless).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One reply, parsed, with the exact bytes it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+text`
    Simple(String),
    /// `-text`
    Error(String),
    /// `:n`
    Int(i64),
    /// `$n` (None: `$-1`)
    Bulk(Option<Vec<u8>>),
    /// `*n` (None: `*-1`)
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as RESP bytes (what the server sent).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(s) => out.extend_from_slice(format!("+{s}\r\n").as_bytes()),
            Reply::Error(s) => out.extend_from_slice(format!("-{s}\r\n").as_bytes()),
            Reply::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            Reply::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
            Reply::Bulk(Some(b)) => {
                out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(Some(items)) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for item in items {
                    item.write(out);
                }
            }
        }
    }

    /// The bulk string as text, if it is one.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// One command as a RESP multibulk array.
fn frame(args: &[&[u8]]) -> Vec<u8> {
    let mut frame = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        frame.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        frame.extend_from_slice(a);
        frame.extend_from_slice(b"\r\n");
    }
    frame
}

/// A connection that sends commands and reads whole replies, keeping their bytes.
pub struct RawClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl RawClient {
    /// Connects to `addr`.
    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Sends one command as a multibulk array and reads its reply; `raw` also returns
    /// the exact bytes.
    pub fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.raw(args).0
    }

    /// Sends one command; the reply and its exact bytes.
    pub fn raw(&mut self, args: &[&[u8]]) -> (Reply, Vec<u8>) {
        self.writer.write_all(&frame(args)).unwrap();
        let mut bytes = Vec::new();
        let reply = self.read(&mut bytes);
        (reply, bytes)
    }

    /// Sends every command in one write (a pipeline), then reads one reply each.
    pub fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Vec<Reply> {
        let mut all = Vec::new();
        for args in commands {
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            all.extend_from_slice(&frame(&args));
        }
        self.writer.write_all(&all).unwrap();
        let mut bytes = Vec::new();
        commands.iter().map(|_| self.read(&mut bytes)).collect()
    }

    /// Sends a command given as text split on spaces.
    pub fn cmd(&mut self, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        self.call(&args)
    }

    fn line(&mut self, bytes: &mut Vec<u8>) -> String {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).unwrap();
        bytes.extend_from_slice(&line);
        assert!(line.ends_with(b"\r\n"), "a reply line: {line:?}");
        String::from_utf8_lossy(&line[..line.len() - 2]).into_owned()
    }

    fn read(&mut self, bytes: &mut Vec<u8>) -> Reply {
        let line = self.line(bytes);
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut body = vec![0u8; n as usize + 2];
                self.reader.read_exact(&mut body).unwrap();
                bytes.extend_from_slice(&body);
                body.truncate(n as usize);
                Reply::Bulk(Some(body))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Array(None);
                }
                Reply::Array(Some((0..n).map(|_| self.read(bytes)).collect()))
            }
            other => panic!("not a RESP reply: {other}{rest}"),
        }
    }
}

/// A private `redis-server` (from PATH) on a free loopback port; killed on drop.
pub struct RedisServer {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl RedisServer {
    /// Starts one with no persistence and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Same, with more `redis-server` arguments (e.g. `--cluster-enabled yes`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(stream) = TcpStream::connect(addr) {
                drop(stream);
                let mut client = RawClient::connect(addr);
                if client.cmd("PING") == Reply::Simple("PONG".into()) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        RedisServer { child, addr }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
