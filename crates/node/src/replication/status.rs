//! The node's replication role and progress, written by the replication tasks and read
//! by every request (write gate, `ROLE`, `INFO replication`).

use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where clients reach a leader.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaderAddr {
    /// The leader's node id (random per process start).
    pub node: String,
    /// Its Redis-protocol address, `host:port`.
    pub resp: String,
    /// Its HTTP address, `host:port`.
    pub http: String,
}

/// What this node does with writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// `local` log: the only copy, takes every write.
    Standalone,
    /// Holds the store's lease and writes the stream.
    Leader,
    /// Follows the stream; knows the leader once it has seen its lease.
    Replica {
        /// The leader, if one holds the lease.
        leader: Option<LeaderAddr>,
    },
    /// Was leader and lost the lease (or was fenced): takes no writes, exits to rejoin.
    Deposed,
}

/// The shared role and progress figures.
#[derive(Debug)]
pub struct Status {
    role: RwLock<Role>,
    /// Whether `role` is [`Role::Leader`], read without the lock ([`Status::is_leader`],
    /// on a cluster node's every command).
    leader: std::sync::atomic::AtomicBool,
    /// This node's id and addresses, as it announces them in the lease.
    pub me: LeaderAddr,
    /// Stream sequence of the last message applied (or published, on the leader).
    applied_seq: AtomicU64,
    /// Messages in the stream after the last applied one, as last seen.
    lag_records: AtomicU64,
    /// Age of the oldest unapplied message when last seen, ms (0 when caught up).
    lag_ms: AtomicU64,
    /// The store's other nodes as last announced (the Sentinel replies read them).
    pub members: super::members::Members,
    /// Where this node's copy of the log ends, term and chain included (`None` while
    /// not known: a local log, or a start from a snapshot before its first message).
    head: parking_lot::Mutex<Option<super::log_chain::Head>>,
    /// Why this node's copy stopped continuing the agreed log, while it starts over:
    /// reads of counters are refused meanwhile.
    diverged: parking_lot::Mutex<Option<String>>,
    /// The NATS server's version and what its log cannot promise (see
    /// `jetstream::durability`), for `INFO replication`.
    durability: parking_lot::Mutex<Option<(String, Option<String>)>>,
    /// Whether this replica is reading the stream now (false while following fails:
    /// its NATS server lost, no stream leader), so `ROLE` and `INFO` say a replica
    /// serves what it had, as Redis's `master_link_status:down` does.
    link_up: std::sync::atomic::AtomicBool,
    /// Whether `diverged` is set, read without the lock on every keyed command.
    is_diverged: std::sync::atomic::AtomicBool,
    /// The first stream sequence after the snapshot this node started from (0: none):
    /// that message alone may repeat records the snapshot already holds.
    snapshot_joint: AtomicU64,
    /// Whether the follower has checked this copy's end against the stream leader's
    /// since the start: until then a mismatch may be the snapshot's fault.
    joint_checked: std::sync::atomic::AtomicBool,
}

impl Status {
    /// A node in `role` with the given addresses.
    pub fn new(role: Role, me: LeaderAddr) -> Self {
        Self {
            leader: std::sync::atomic::AtomicBool::new(matches!(role, Role::Leader)),
            role: RwLock::new(role),
            me,
            applied_seq: AtomicU64::new(0),
            lag_records: AtomicU64::new(0),
            lag_ms: AtomicU64::new(0),
            members: Default::default(),
            head: parking_lot::Mutex::new(None),
            diverged: parking_lot::Mutex::new(None),
            is_diverged: std::sync::atomic::AtomicBool::new(false),
            durability: parking_lot::Mutex::new(None),
            link_up: std::sync::atomic::AtomicBool::new(true),
            snapshot_joint: AtomicU64::new(0),
            joint_checked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The first stream sequence after the snapshot this node started from (0: none).
    pub fn snapshot_joint(&self) -> u64 {
        self.snapshot_joint.load(Ordering::Acquire)
    }

    /// Notes where the stream continues the snapshot this node started from.
    pub fn set_snapshot_joint(&self, seq: u64) {
        self.snapshot_joint.store(seq, Ordering::Release);
    }

    /// Whether this copy's end has matched the stream leader's since the start (see
    /// [`crate::replication::distrusted`]).
    pub fn joint_checked(&self) -> bool {
        self.joint_checked.load(Ordering::Acquire)
    }

    /// Notes that this copy's end matched the stream leader's.
    pub fn set_joint_checked(&self) {
        self.joint_checked.store(true, Ordering::Release);
    }

    /// The role now.
    pub fn role(&self) -> Role {
        self.role.read().clone()
    }

    /// Changes the role.
    pub fn set_role(&self, role: Role) {
        let mut held = self.role.write();
        self.leader
            .store(matches!(role, Role::Leader), Ordering::Release);
        *held = role;
    }

    /// Whether this node leads its store (a cluster node checks it on every command
    /// of a group it serves: no copy of the role).
    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::Acquire)
    }

    /// Whether this node may take writes.
    pub fn writable(&self) -> bool {
        matches!(*self.role.read(), Role::Standalone | Role::Leader)
    }

    /// Records progress: the stream sequence applied and what is left.
    pub fn set_progress(&self, applied_seq: u64, lag_records: u64, lag_ms: u64) {
        self.applied_seq.store(applied_seq, Ordering::Relaxed);
        self.lag_records.store(lag_records, Ordering::Relaxed);
        self.lag_ms.store(lag_ms, Ordering::Relaxed);
    }

    /// (applied stream sequence, lag in messages, lag in ms).
    pub fn progress(&self) -> (u64, u64, u64) {
        (
            self.applied_seq.load(Ordering::Relaxed),
            self.lag_records.load(Ordering::Relaxed),
            self.lag_ms.load(Ordering::Relaxed),
        )
    }

    /// Where this node's copy of the log ends (term and chain), if known.
    pub fn head(&self) -> Option<super::log_chain::Head> {
        *self.head.lock()
    }

    /// Records where this node's copy of the log ends.
    pub fn set_head(&self, head: Option<super::log_chain::Head>) {
        *self.head.lock() = head;
    }

    /// Why this node's copy no longer continues the agreed log, if it does not.
    pub fn diverged(&self) -> Option<String> {
        self.diverged.lock().clone()
    }

    /// Marks this node's copy as diverged (`Some(why)`), or whole again.
    pub fn set_diverged(&self, why: Option<String>) {
        let mut held = self.diverged.lock();
        self.is_diverged.store(why.is_some(), Ordering::Release);
        *held = why;
    }

    /// Whether this node's copy diverged (one atomic load: checked before every read).
    pub fn is_diverged(&self) -> bool {
        self.is_diverged.load(Ordering::Acquire)
    }

    /// Records the NATS server's version and what the log on it cannot promise.
    pub fn set_durability(&self, nats_version: String, warning: Option<String>) {
        *self.durability.lock() = Some((nats_version, warning));
    }

    /// The NATS server's version and the durability warning, once connected.
    pub fn durability(&self) -> Option<(String, Option<String>)> {
        self.durability.lock().clone()
    }

    /// Records whether this replica is reading the stream now.
    pub fn set_link_up(&self, up: bool) {
        self.link_up.store(up, Ordering::Relaxed);
    }

    /// Whether this replica is reading the stream now.
    pub fn link_up(&self) -> bool {
        self.link_up.load(Ordering::Relaxed)
    }
}
