//! Which id shards this node may issue from.
//!
//! A lone node issues from every shard. Nodes that share a counter store on NATS
//! (`[counters] log = "jetstream"`) could otherwise issue the same id: two nodes, one
//! shard, one millisecond. So there each node holds leases on blocks of shard values
//! (a range of Instagram's logical shards, of Snowflake's worker ids) in a KV bucket,
//! taken with a create that fails while another node holds the block, and renewed every
//! third of the lease. A node issues only from blocks it holds, and only while its lease
//! is valid by its own clock (measured from when it asked for the renewal, so it lapses
//! here before NATS lets another node take the block). A freshly taken block is usable a
//! third of a lease later, which covers clocks up to that far apart between nodes.
//! The NATS side is `replication::jetstream::id_leases`.

use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many blocks the shard values are split into when leased (fewer when the layout
/// has fewer shards: one shard a block).
pub const BLOCKS: u64 = 64;

/// One block this node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The block number (its shards are `block * size .. (block + 1) * size`).
    pub block: u64,
    /// The KV revision of this node's last write of the lease.
    pub revision: u64,
    /// Ids may come from it until then (by this node's monotonic clock).
    pub valid_until: Instant,
    /// ... and not before then (a block just taken waits out the clock allowance).
    pub usable_from: Instant,
}

/// The shards this node may issue from.
#[derive(Debug)]
pub struct IdLeases {
    shards: u64,
    /// `None`: a lone node, every shard is its own.
    leased: Option<Leased>,
    /// Round-robin position for requests that name no shard.
    next: AtomicU64,
}

#[derive(Debug)]
struct Leased {
    block_size: u64,
    held: RwLock<Vec<Held>>,
}

impl IdLeases {
    /// A lone node: every shard, no lease.
    pub fn unleased(shards: u64) -> Self {
        Self {
            shards,
            leased: None,
            next: AtomicU64::new(0),
        }
    }

    /// A node that issues only from the blocks it leases (none until it takes one).
    pub fn leased(shards: u64) -> Self {
        let blocks = BLOCKS.min(shards).max(1);
        Self {
            shards,
            leased: Some(Leased {
                block_size: shards.div_ceil(blocks),
                held: RwLock::new(Vec::new()),
            }),
            next: AtomicU64::new(0),
        }
    }

    /// Whether shards are leased here (the NATS task runs only then).
    pub fn is_leased(&self) -> bool {
        self.leased.is_some()
    }

    /// How many blocks there are (leased mode; 1 otherwise).
    pub fn blocks(&self) -> u64 {
        self.leased
            .as_ref()
            .map_or(1, |l| self.shards.div_ceil(l.block_size))
    }

    /// The blocks held now.
    pub fn held(&self) -> Vec<Held> {
        self.leased
            .as_ref()
            .map_or_else(Vec::new, |l| l.held.read().clone())
    }

    /// Records a block taken or renewed.
    pub fn hold(&self, held: Held) {
        if let Some(l) = &self.leased {
            let mut all = l.held.write();
            match all.iter_mut().find(|h| h.block == held.block) {
                Some(h) => *h = held,
                None => {
                    all.push(held);
                    all.sort_by_key(|h| h.block);
                }
            }
        }
    }

    /// Forgets a block (another node holds it now).
    pub fn release(&self, block: u64) {
        if let Some(l) = &self.leased {
            l.held.write().retain(|h| h.block != block);
        }
    }

    /// The shard to issue from: `requested` if this node may issue from it, else the
    /// next one round-robin over what it may issue from. `Err` is the reason, ready to
    /// send to the client (`ERR …` for RESP; HTTP answers 503 with it).
    pub fn pick(&self, requested: Option<u64>) -> Result<u64, String> {
        if let Some(s) = requested {
            if s >= self.shards {
                return Err(format!(
                    "ERR shard {s} is out of range: this layout has shards 0 to {}",
                    self.shards - 1
                ));
            }
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(l) = &self.leased else {
            return Ok(requested.unwrap_or(n % self.shards));
        };
        let held = l.held.read();
        if held.is_empty() {
            return Err(
                "ERR this node holds no id shard lease now (it takes one on NATS at \
                        start and whenever it holds none); try again in a moment or send it to \
                        another node"
                    .into(),
            );
        }
        let (block, shard) = match requested {
            Some(s) => match held.iter().find(|h| h.block == s / l.block_size) {
                Some(h) => (*h, s),
                None => {
                    return Err(format!(
                        "ERR shard {s} is not leased to this node (it issues from shards {}); \
                         send ID.NEXT for it to the node that holds it",
                        ranges(&held, l.block_size, self.shards)
                    ))
                }
            },
            None => {
                let h = held[(n % held.len() as u64) as usize];
                let within = (n / held.len() as u64) % l.block_size;
                let shard = (h.block * l.block_size + within).min(self.shards - 1);
                (h, shard)
            }
        };
        let now = Instant::now();
        let (first, last) = span(block.block, l.block_size, self.shards);
        if now >= block.valid_until {
            return Err(format!(
                "ERR this node's lease on id shards {first}-{last} lapsed; it issues no ids \
                 from them until it renews it"
            ));
        }
        if now < block.usable_from {
            return Err(format!(
                "ERR this node took the lease on id shards {first}-{last} a moment ago; it \
                 issues from them in {} ms",
                (block.usable_from - now).as_millis() + 1
            ));
        }
        Ok(shard)
    }

    /// How long after taking a block it becomes usable, for a lease of `lease`.
    pub fn allowance(lease: Duration) -> Duration {
        lease / 3
    }
}

/// First and last shard of `block`.
fn span(block: u64, size: u64, shards: u64) -> (u64, u64) {
    let first = block * size;
    (first, (first + size).min(shards) - 1)
}

/// `0-127, 256-383`.
fn ranges(held: &[Held], size: u64, shards: u64) -> String {
    held.iter()
        .map(|h| {
            let (a, b) = span(h.block, size, shards);
            format!("{a}-{b}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(block: u64, from_now_ms: i64) -> Held {
        let now = Instant::now();
        Held {
            block,
            revision: 1,
            valid_until: if from_now_ms >= 0 {
                now + Duration::from_millis(from_now_ms as u64)
            } else {
                now - Duration::from_millis((-from_now_ms) as u64)
            },
            usable_from: now - Duration::from_millis(1),
        }
    }

    #[test]
    fn a_lone_node_issues_from_every_shard() {
        let l = IdLeases::unleased(8192);
        assert_eq!(l.pick(Some(77)), Ok(77));
        assert!(l.pick(Some(8192)).unwrap_err().contains("out of range"));
        assert!(l.pick(None).unwrap() < 8192);
    }

    #[test]
    fn a_leased_node_issues_only_from_valid_blocks_it_holds() {
        let l = IdLeases::leased(8192);
        assert_eq!(l.blocks(), 64);
        assert!(l
            .pick(None)
            .unwrap_err()
            .contains("holds no id shard lease"));
        l.hold(block(1, 10_000));
        for _ in 0..300 {
            let s = l.pick(None).unwrap();
            assert!((128..256).contains(&s), "{s}");
        }
        assert_eq!(l.pick(Some(130)), Ok(130));
        let err = l.pick(Some(5)).unwrap_err();
        assert!(
            err.contains("shard 5 is not leased") && err.contains("128-255"),
            "{err}"
        );
        l.hold(block(1, -1));
        assert!(l.pick(Some(130)).unwrap_err().contains("lapsed"));
        l.release(1);
        assert!(l
            .pick(Some(130))
            .unwrap_err()
            .contains("holds no id shard lease"));
        l.hold(block(0, 10_000));
        assert!(l.pick(Some(130)).unwrap_err().contains("not leased"));
        l.release(0);
        let mut fresh = block(2, 10_000);
        fresh.usable_from = Instant::now() + Duration::from_secs(5);
        l.hold(fresh);
        assert!(l.pick(None).unwrap_err().contains("a moment ago"));
    }

    #[test]
    fn small_layouts_have_a_block_per_shard() {
        let l = IdLeases::leased(4);
        assert_eq!(l.blocks(), 4);
        l.hold(block(3, 10_000));
        assert_eq!(l.pick(None), Ok(3));
        // Sonyflake's 65,536 machine ids: 1,024 a block.
        let l = IdLeases::leased(65_536);
        l.hold(block(63, 10_000));
        assert!((64_512..65_536).contains(&l.pick(None).unwrap()));
    }
}
