//! Per-connection state: authentication, the writes waiting for the disk, the id.

use super::clients::{Client, Clients};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Connection ids (`CLIENT ID`, `HELLO`'s `id`): one global counter, as Redis has.
static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

/// What one connection carries between its commands.
#[derive(Debug)]
pub struct Session {
    /// Log position the replies computed so far wait for: value writes are applied at
    /// once and made durable once per batch, before any reply of the batch is sent.
    pub pending: shardkit_counters::Pending,
    /// Whether the connection may run commands (no key configured, or `AUTH` passed).
    pub authenticated: bool,
    /// The key `AUTH` proved (its name and roles); `None` before, or with no key
    /// configured.
    pub grant: Option<shardkit_node::api_keys::Grant>,
    /// Whether every command may run without a role check: no key is configured, or
    /// the key is an admin key (the hot path then skips [`super::permissions`]).
    pub unrestricted: bool,
    /// This connection's id, unique for the life of the process.
    pub id: u64,
    /// Whether the connection switched to RESP3 (`HELLO 3`).
    pub resp3: bool,
    /// This connection's entry in the server's client list (name, library, kill).
    pub client: Arc<Client>,
    /// Every open connection of this listener (`CLIENT LIST|KILL`, `INFO clients`).
    pub clients: Arc<Clients>,
    /// Set by `QUIT`: write the replies, then close.
    pub closing: bool,
    /// Increments of the batch waiting to reach the engine together.
    pub incrs: super::incr_run::IncrRun,
    /// The command this connection ran last, checked before the table's look-up.
    pub last_spec: Option<&'static super::table::CommandSpec>,
    /// After `READONLY` on a cluster node: reads of slots this node follows (but does
    /// not own) are served from its follower copy instead of `-MOVED`.
    pub read_replicas: bool,
    /// On a cluster node: the slot map this connection routed its last command by,
    /// kept while it is the newest ([`shardkit_node::cluster::live::Live::map_after`]).
    pub cluster_map: Option<Arc<shardkit_node::cluster::map::SlotMap>>,
    /// On a cluster node: the log positions the batch's replies wait for in the stores
    /// of slot groups (one entry per store), besides `pending` of the node's own.
    pub group_pending: Vec<(
        std::sync::Arc<shardkit_node::counters::Counters>,
        shardkit_counters::Pending,
    )>,
}

impl Session {
    /// A session; `authenticated` from the start when no API key is configured.
    pub fn new(authenticated: bool, client: Arc<Client>, clients: Arc<Clients>) -> Self {
        Self {
            pending: shardkit_counters::Pending::NONE,
            authenticated,
            grant: None,
            unrestricted: authenticated,
            id: client.id,
            resp3: false,
            client,
            clients,
            closing: false,
            incrs: Default::default(),
            last_spec: None,
            group_pending: Vec::new(),
            cluster_map: None,
            read_replicas: false,
        }
    }

    /// Takes the grant of a key that `AUTH`/`HELLO … AUTH` proved.
    pub fn authenticate(&mut self, grant: shardkit_node::api_keys::Grant) {
        self.authenticated = true;
        self.unrestricted = grant.allows(shardkit_node::api_keys::Need::Admin);
        self.grant = Some(grant);
    }

    /// A fresh connection id, unique for the life of the process.
    pub fn next_id() -> u64 {
        NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits for `p` of group store `counters` too before the batch's replies go out.
    pub fn wait_for_store(
        &mut self,
        counters: &std::sync::Arc<shardkit_node::counters::Counters>,
        p: shardkit_counters::Pending,
    ) {
        if p.is_none() {
            return;
        }
        match self
            .group_pending
            .iter_mut()
            .find(|(c, _)| std::sync::Arc::ptr_eq(c, counters))
        {
            Some((_, held)) => *held = (*held).max(p),
            None => self
                .group_pending
                .push((std::sync::Arc::clone(counters), p)),
        }
    }

    /// Waits for `p` too before the batch's replies go out.
    #[inline]
    pub fn wait_for(&mut self, p: shardkit_counters::Pending) {
        self.pending = self.pending.max(p);
    }
}
