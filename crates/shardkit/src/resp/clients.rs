//! The connected RESP clients, for `CLIENT LIST`, `CLIENT INFO`, `CLIENT KILL` and
//! `INFO clients`: one registry per RESP listener, which every session holds; one entry per open connection, added when it is accepted and
//! removed when it closes (by the [`Registration`] guard, on every exit path).
//!
//! The hot path does not touch the registry: a connection updates its entry's
//! "last command" and "last active" once per batch of commands it reads, not per
//! command.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Every open RESP connection of one server, by client id.
#[derive(Debug, Default)]
pub struct Clients {
    open: Arc<Mutex<BTreeMap<u64, Arc<Client>>>>,
    /// Connections accepted since start (`INFO stats`' `total_connections_received`).
    accepted: AtomicU64,
}

/// What the server knows of one connection.
#[derive(Debug)]
pub struct Client {
    /// The connection's id (`CLIENT ID`).
    pub id: u64,
    /// The peer's address, `ip:port`.
    pub addr: String,
    /// The server's end, `ip:port`.
    pub laddr: String,
    created: Instant,
    /// Milliseconds after `created` of the last batch of commands.
    last_active_ms: AtomicU64,
    details: Mutex<Details>,
    killed: AtomicBool,
    kill: tokio::sync::Notify,
}

/// The parts a client sets about itself.
#[derive(Debug, Default, Clone)]
struct Details {
    name: Option<Vec<u8>>,
    lib_name: Option<Vec<u8>>,
    lib_ver: Option<Vec<u8>>,
    last_command: &'static str,
    resp: u8,
}

/// Removes its client from the registry when the connection ends.
#[derive(Debug)]
pub struct Registration {
    open: Arc<Mutex<BTreeMap<u64, Arc<Client>>>>,
    /// The registered client.
    pub client: Arc<Client>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.open.lock().remove(&self.client.id);
    }
}

impl Clients {
    /// Adds a connection; it stays listed until the returned guard is dropped.
    pub fn register(&self, id: u64, addr: String, laddr: String) -> Registration {
        let client = Arc::new(Client {
            id,
            addr,
            laddr,
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            details: Mutex::new(Details {
                resp: 2,
                last_command: "NULL",
                ..Details::default()
            }),
            killed: AtomicBool::new(false),
            kill: tokio::sync::Notify::new(),
        });
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.lock().insert(id, Arc::clone(&client));
        Registration {
            open: Arc::clone(&self.open),
            client,
        }
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.open.lock().is_empty()
    }

    /// Connections accepted since the server started.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// The open connections, by id.
    pub fn list(&self) -> Vec<Arc<Client>> {
        self.open.lock().values().cloned().collect()
    }

    /// Closes the connections `matches` picks (after their current batch is answered);
    /// answers how many.
    pub fn kill(&self, matches: impl Fn(&Client) -> bool) -> usize {
        let mut killed = 0;
        for client in self.open.lock().values() {
            if matches(client) && !client.killed.swap(true, Ordering::AcqRel) {
                client.kill.notify_one();
                killed += 1;
            }
        }
        killed
    }
}

impl Client {
    /// Resolves when `CLIENT KILL` picked this connection.
    pub async fn killed(&self) {
        if self.killed.load(Ordering::Acquire) {
            return;
        }
        self.kill.notified().await;
    }

    /// Notes a batch of commands that ended with `last_command`.
    pub fn touch(&self, last_command: &'static str) {
        self.last_active_ms
            .store(self.created.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.details.lock().last_command = last_command;
    }

    /// `CLIENT SETNAME` (an empty name clears it).
    pub fn set_name(&self, name: &[u8]) {
        self.details.lock().name = Some(name.to_vec()).filter(|n| !n.is_empty());
    }

    /// `CLIENT GETNAME`.
    pub fn name(&self) -> Option<Vec<u8>> {
        self.details.lock().name.clone()
    }

    /// `CLIENT SETINFO LIB-NAME|LIB-VER value`.
    pub fn set_lib(&self, lib_name: Option<&[u8]>, lib_ver: Option<&[u8]>) {
        let mut details = self.details.lock();
        if let Some(name) = lib_name {
            details.lib_name = Some(name.to_vec());
        }
        if let Some(ver) = lib_ver {
            details.lib_ver = Some(ver.to_vec());
        }
    }

    /// Notes the protocol version the connection switched to.
    pub fn set_resp(&self, resp: u8) {
        self.details.lock().resp = resp;
    }

    /// One line of `CLIENT LIST` in Redis 7's format (the fields shardkit has; buffer
    /// and memory figures Redis keeps per client are not kept here and not listed).
    pub fn line(&self) -> String {
        let details = self.details.lock().clone();
        let age = self.created.elapsed().as_secs();
        let idle = self
            .created
            .elapsed()
            .as_millis()
            .saturating_sub(u128::from(self.last_active_ms.load(Ordering::Relaxed)))
            / 1000;
        let text = |v: &Option<Vec<u8>>| {
            v.as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let mut line = String::with_capacity(200);
        let _ = write!(
            line,
            "id={} addr={} laddr={} fd=-1 name={} age={age} idle={idle} flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            text(&details.name),
            details.last_command,
            details.resp,
            text(&details.lib_name),
            text(&details.lib_ver),
        );
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u64) -> Arc<Client> {
        Arc::new(Client {
            id,
            addr: "127.0.0.1:5000".into(),
            laddr: "127.0.0.1:6380".into(),
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            details: Mutex::new(Details {
                resp: 2,
                last_command: "NULL",
                ..Details::default()
            }),
            killed: AtomicBool::new(false),
            kill: tokio::sync::Notify::new(),
        })
    }

    #[test]
    fn a_line_has_redis_fields_and_what_the_client_set() {
        let c = client(7);
        c.set_name(b"worker");
        c.set_lib(Some(b"redis-py"), Some(b"8.1.0"));
        c.set_resp(3);
        c.touch("incr");
        let line = c.line();
        assert!(line.starts_with("id=7 addr=127.0.0.1:5000 laddr=127.0.0.1:6380 "));
        for part in [
            "name=worker",
            "cmd=incr",
            "resp=3",
            "lib-name=redis-py",
            "lib-ver=8.1.0",
            "db=0",
        ] {
            assert!(line.contains(part), "{part} in {line}");
        }
    }

    #[test]
    fn kill_marks_once_and_counts() {
        let clients = Clients::default();
        clients.open.lock().insert(1, client(1));
        clients.open.lock().insert(2, client(2));
        assert_eq!(clients.kill(|c| c.id == 2), 1);
        assert_eq!(clients.kill(|c| c.id == 2), 0);
        assert_eq!(clients.kill(|_| true), 1);
    }
}
