//! Flickr's ticket servers on MariaDB/MySQL.
//!
//! Each sequence is a table `tickets64_<name>` with an auto-increment `id` and a unique
//! one-character `stub`; `REPLACE INTO … (stub) VALUES ('a')` deletes and re-inserts
//! the single row, so the table never grows, and `LAST_INSERT_ID()` (the OK packet's
//! insert id) is the ticket. Each server's sessions set `auto_increment_increment` and
//! `auto_increment_offset` (2 and 1 on one server, 2 and 2 on the other: odd and even
//! tickets), so two servers never hand out the same ticket.
//!
//! [`MysqlTicketServers`] is the client over several servers: it round-robins the
//! reservations, and a server that fails or does not answer within the attempt timeout
//! is skipped for a while and the next one asked, so tickets keep coming while one is
//! down and it is used again once it answers.

use super::{store_error, BlockSize};
use crate::blocking::Bridge;
use crate::error::redact_url;
use mysql_async::prelude::Queryable;
use parking_lot::Mutex;
use shardkit_ids::tickets::{validate_name, SequenceSpec, TicketStore};
use shardkit_ids::TicketError;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Timeouts of the client: how long one attempt may take, how long a failed server is skipped.
#[derive(Debug, Clone, Copy)]
pub struct FailoverOptions {
    /// One reservation on one server, connection included; past it the next server is asked.
    pub attempt_timeout: Duration,
    /// How long a server that failed is skipped before it is tried again.
    pub retry_after: Duration,
}

impl Default for FailoverOptions {
    /// 2 s per attempt, a failed server skipped for 1 s.
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(2),
            retry_after: Duration::from_secs(1),
        }
    }
}

/// One ticket server: a connection pool whose sessions use this server's increment and offset.
#[derive(Debug)]
struct Server {
    name: String,
    pool: mysql_async::Pool,
    /// Sequences whose table and block size are known to be in place on this server.
    ready: Mutex<HashSet<String>>,
    /// Skipped until this instant after a failure.
    down_until: Mutex<Option<Instant>>,
}

/// The table of sequence `name`: `tickets64_<name>`, or for names too long for a MySQL
/// identifier (64 characters) a prefix plus a hash of the whole name.
pub fn table_name(name: &str) -> String {
    let plain = format!("tickets64_{name}");
    if plain.len() <= 64 {
        return plain;
    }
    let hash = shardkit_ring::hash_bytes(name.as_bytes());
    format!("tickets64_{}_{hash:016x}", &name[..37])
}

/// Flickr's ticket servers: a client over one or more MariaDB/MySQL servers, each
/// handing out every `increment`-th ticket from its own `offset`; see the module docs.
#[derive(Debug)]
pub struct MysqlTicketServers {
    servers: Arc<Vec<Server>>,
    block: BlockSize,
    options: FailoverOptions,
    next: AtomicUsize,
    bridge: Bridge,
}

impl MysqlTicketServers {
    /// A client over `urls` (`mysql://user:pass@host:3306/db`): server i gets
    /// `auto_increment_increment = urls.len()` and `auto_increment_offset = i + 1`.
    /// Nothing is connected until the first reservation.
    pub fn new(
        urls: &[String],
        block: BlockSize,
        options: FailoverOptions,
    ) -> Result<Self, TicketError> {
        if urls.is_empty() {
            return Err(store_error("mysql", "no ticket servers given"));
        }
        let increment = urls.len() as u64;
        let bridge = Bridge::new("shardkit-tickets-mysql")
            .map_err(|e| store_error("mysql", format!("starting the runtime: {e}")))?;
        let mut servers = Vec::with_capacity(urls.len());
        for (i, url) in urls.iter().enumerate() {
            let name = redact_url(url);
            let opts = mysql_async::Opts::from_url(url)
                .map_err(|e| store_error(&name, format!("bad URL: {e}")))?;
            let lock_wait = options.attempt_timeout.as_secs().max(1);
            let init = vec![
                format!("SET SESSION auto_increment_increment = {increment}"),
                format!("SET SESSION auto_increment_offset = {}", i + 1),
                // A locked table makes the server give up on its own, not hold the session forever.
                format!("SET SESSION lock_wait_timeout = {lock_wait}"),
                format!("SET SESSION innodb_lock_wait_timeout = {lock_wait}"),
            ];
            let constraints = mysql_async::PoolConstraints::new(0, 8).unwrap_or_default();
            let opts = mysql_async::OptsBuilder::from_opts(opts)
                .init(init)
                .pool_opts(mysql_async::PoolOpts::default().with_constraints(constraints));
            // The pool's background work runs on the bridge's runtime.
            let handle = bridge.handle();
            let _guard = handle.enter();
            let pool = mysql_async::Pool::new(opts);
            servers.push(Server {
                name,
                pool,
                ready: Mutex::new(HashSet::new()),
                down_until: Mutex::new(None),
            });
        }
        Ok(Self {
            servers: Arc::new(servers),
            block,
            options,
            next: AtomicUsize::new(0),
            bridge,
        })
    }

    /// The block size every ticket stands for.
    pub fn block(&self) -> BlockSize {
        self.block
    }

    /// One ticket of sequence `name` from server `index`, within the attempt timeout.
    fn ticket_from(&self, index: usize, name: &str) -> Result<u64, TicketError> {
        let servers = Arc::clone(&self.servers);
        let name_owned = name.to_string();
        let block = self.block.get();
        let timeout = self.options.attempt_timeout;
        let server_name = self.servers[index].name.clone();
        let result = self.bridge.run(async move {
            let server = &servers[index];
            match tokio::time::timeout(timeout, replace_once(server, &name_owned, block)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
            }
        });
        match result {
            Some(Ok(ticket)) => Ok(ticket),
            Some(Err(message)) => Err(store_error(&server_name, message)),
            None => Err(store_error(&server_name, "the client's runtime stopped")),
        }
    }
}

/// Creates the sequence's table and records its block size (once per server and
/// sequence), then takes one ticket: `REPLACE INTO` and the insert id.
async fn replace_once(server: &Server, name: &str, block: u64) -> Result<u64, String> {
    let mut conn = server
        .pool
        .get_conn()
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let table = table_name(name);
    if !server.ready.lock().contains(name) {
        conn.query_drop(format!(
            "CREATE TABLE IF NOT EXISTS `{table}` (\
             id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             stub CHAR(1) NOT NULL DEFAULT '' UNIQUE) ENGINE=InnoDB"
        ))
        .await
        .map_err(|e| format!("creating {table}: {e}"))?;
        conn.query_drop(
            "CREATE TABLE IF NOT EXISTS shardkit_ticket_blocks (\
             name VARCHAR(64) NOT NULL PRIMARY KEY, block_size BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB",
        )
        .await
        .map_err(|e| format!("creating shardkit_ticket_blocks: {e}"))?;
        conn.exec_drop(
            "INSERT IGNORE INTO shardkit_ticket_blocks (name, block_size) VALUES (?, ?)",
            (name, block),
        )
        .await
        .map_err(|e| format!("recording the block size: {e}"))?;
        let stored: Option<u64> = conn
            .exec_first(
                "SELECT block_size FROM shardkit_ticket_blocks WHERE name = ?",
                (name,),
            )
            .await
            .map_err(|e| format!("reading the block size: {e}"))?;
        if stored != Some(block) {
            return Err(format!(
                "sequence {name:?} was created with block size {stored:?}, not {block}; changing it would reissue numbers"
            ));
        }
        server.ready.lock().insert(name.to_string());
    }
    conn.query_drop(format!("REPLACE INTO `{table}` (stub) VALUES ('a')"))
        .await
        .map_err(|e| format!("REPLACE INTO {table}: {e}"))?;
    conn.last_insert_id()
        .filter(|&t| t > 0)
        .ok_or_else(|| format!("REPLACE INTO {table} returned no insert id"))
}

impl TicketStore for MysqlTicketServers {
    /// One `REPLACE` on the next server in turn (the spec is applied by the caller's
    /// allocator; server separation comes from the servers' increment and offset).
    fn reserve(&self, name: &str, _spec: SequenceSpec, count: u64) -> Result<u64, TicketError> {
        validate_name(name)?;
        self.block.check_count(count)?;
        let n = self.servers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut failures = Vec::new();
        // First the servers not marked down, in turn; then, if all are down, every one anyway.
        for pass in 0..2 {
            for k in 0..n {
                let i = (start + k) % n;
                let server = &self.servers[i];
                let skipped = server
                    .down_until
                    .lock()
                    .is_some_and(|until| Instant::now() < until);
                if skipped != (pass == 1) {
                    continue;
                }
                match self.ticket_from(i, name) {
                    Ok(ticket) => {
                        *server.down_until.lock() = None;
                        return self.block.first_position(name, ticket);
                    }
                    Err(e) => {
                        *server.down_until.lock() = Some(Instant::now() + self.options.retry_after);
                        failures.push(e.to_string());
                    }
                }
            }
        }
        Err(store_error(
            "mysql",
            format!("every ticket server failed: {}", failures.join("; ")),
        ))
    }
}

impl Drop for MysqlTicketServers {
    fn drop(&mut self) {
        // Close the pools on their runtime so connections end cleanly before it stops.
        let servers = Arc::clone(&self.servers);
        let _ = self.bridge.run(async move {
            for server in servers.iter() {
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), server.pool.clone().disconnect())
                        .await;
            }
        });
    }
}
