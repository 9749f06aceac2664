//! The nodes of a counter store as this node last heard of them: what every node
//! announces in the membership bucket (`jetstream` log), kept here for the Sentinel
//! replies, which must answer from memory without waiting on NATS.
//!
//! Ages are measured against the time NATS stamped on each announcement, so a node
//! that stopped announcing (killed, partitioned) shows its silence, and one silent for
//! longer than the bucket keeps values is forgotten even if no removal was seen. "Now"
//! is NATS's clock too: the stamp of this node's own latest announcement plus the time
//! since it was heard, so a node whose clock is off does not see the others as down.

use parking_lot::RwLock;
use std::collections::HashMap;

/// What one node announces about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// Its node id (random per process start); the Sentinel `runid`.
    pub node: String,
    /// Its Redis-protocol address, `host:port`.
    pub resp: String,
    /// Its HTTP address, `host:port`.
    pub http: String,
    /// `master`, `slave` or `deposed`, as it sees itself.
    pub role: String,
    /// The stream sequence it has applied (or published, as leader).
    pub applied_seq: u64,
    /// Whether it stands for the lease (`role = "auto"`); a Sentinel replica with
    /// priority 0 when not.
    pub may_lead: bool,
}

/// A member and when its announcement was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The announcement.
    pub member: Member,
    /// When NATS stored it, Unix milliseconds.
    pub at_ms: u64,
}

impl Seen {
    /// Milliseconds since the announcement, at `now_ms`.
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.at_ms)
    }
}

/// The announcements heard, by node id. Empty with the `local` log.
#[derive(Debug, Default)]
pub struct Members {
    seen: RwLock<HashMap<String, Seen>>,
    /// How long the bucket keeps an announcement, ms (0: never set, keep all).
    forget_after_ms: std::sync::atomic::AtomicU64,
    /// NATS's stamp of this node's latest own announcement and when it was heard.
    clock: RwLock<Option<(u64, std::time::Instant)>>,
}

impl Members {
    /// Sets how long an announcement counts without being refreshed.
    pub fn set_forget_after(&self, ms: u64) {
        self.forget_after_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records an announcement (the newer one wins).
    pub fn record(&self, member: Member, at_ms: u64) {
        let mut seen = self.seen.write();
        let newer = seen.get(&member.node).is_none_or(|s| s.at_ms <= at_ms);
        if newer {
            seen.insert(member.node.clone(), Seen { member, at_ms });
        }
    }

    /// Records this node's own announcement as heard back: NATS's clock reading.
    pub fn record_own(&self, member: Member, at_ms: u64) {
        *self.clock.write() = Some((at_ms, std::time::Instant::now()));
        self.record(member, at_ms);
    }

    /// Now on NATS's clock, Unix milliseconds (this machine's clock until this node has
    /// heard its own announcement).
    pub fn now_ms(&self) -> u64 {
        match *self.clock.read() {
            Some((at_ms, heard)) => at_ms + heard.elapsed().as_millis() as u64,
            None => now_ms(),
        }
    }

    /// Forgets a node that left (its announcement was deleted).
    pub fn forget(&self, node: &str) {
        self.seen.write().remove(node);
    }

    /// The members heard within the bucket's lifetime, by node id.
    pub fn snapshot(&self, now_ms: u64) -> Vec<Seen> {
        let limit = self
            .forget_after_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        let mut all: Vec<Seen> = self
            .seen
            .read()
            .values()
            .filter(|s| limit == 0 || s.age_ms(now_ms) <= limit)
            .cloned()
            .collect();
        all.sort_by(|a, b| a.member.node.cmp(&b.member.node));
        all
    }
}

/// Now, Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(node: &str, seq: u64) -> Member {
        Member {
            node: node.into(),
            resp: "127.0.0.1:1".into(),
            http: "127.0.0.1:2".into(),
            role: "slave".into(),
            applied_seq: seq,
            may_lead: true,
        }
    }

    #[test]
    fn newer_announcements_win_and_silent_nodes_are_forgotten() {
        let members = Members::default();
        members.set_forget_after(1_000);
        members.record(member("b", 5), 10_000);
        members.record(member("b", 3), 9_000);
        members.record(member("a", 1), 9_500);
        let now = members.snapshot(10_100);
        assert_eq!(now.len(), 2);
        assert_eq!(
            (now[0].member.node.as_str(), now[1].member.applied_seq),
            ("a", 5)
        );
        assert_eq!(members.snapshot(10_600).len(), 1, "a was silent too long");
        members.forget("b");
        assert!(members
            .snapshot(10_100)
            .iter()
            .all(|s| s.member.node != "b"));
    }

    #[test]
    fn now_is_read_on_the_clock_of_nats() {
        let members = Members::default();
        let machine = now_ms();
        assert!(members.now_ms() >= machine);
        // NATS's clock an hour behind this machine's: ages stay small all the same.
        members.record_own(member("me", 1), machine - 3_600_000);
        let now = members.now_ms();
        assert!(
            now >= machine - 3_600_000 && now < machine - 3_599_000,
            "{now}"
        );
    }
}
