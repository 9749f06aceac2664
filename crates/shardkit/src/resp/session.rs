//! Per-connection state: authentication, the writes waiting for the disk, the id.

use std::sync::atomic::{AtomicU64, Ordering};

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
    /// This connection's id, unique for the life of the process.
    pub id: u64,
    /// `CLIENT SETNAME`'s name.
    pub name: Option<Vec<u8>>,
    /// Set by `QUIT`: write the replies, then close.
    pub closing: bool,
}

impl Session {
    /// A session; `authenticated` from the start when no API key is configured.
    pub fn new(authenticated: bool) -> Self {
        Self {
            pending: shardkit_counters::Pending::NONE,
            authenticated,
            id: NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed),
            name: None,
            closing: false,
        }
    }

    /// Waits for `p` too before the batch's replies go out.
    #[inline]
    pub fn wait_for(&mut self, p: shardkit_counters::Pending) {
        self.pending = self.pending.max(p);
    }
}
