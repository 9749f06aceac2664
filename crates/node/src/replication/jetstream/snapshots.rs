//! Snapshots in the store's JetStream object store, so a node with an empty data
//! directory starts from the newest one plus the stream's tail, and the stream can be
//! purged.
//!
//! - Object store `shardkit_snapshots_<store>`; one object per snapshot, named
//!   `snap-<X>-seq-<S>` (both 20 digits): X is the snapshot's lsn (every record below it
//!   is in it), S the first stream sequence a node restored from it applies (the first
//!   message whose records reach X, see [`super::lsn_seq`]). The bytes are the engine's
//!   snapshot file as written, CRCs and end frame included; the restoring node checks
//!   them ([`shardkit_counters::restore_snapshot`]).
//! - The leader puts every snapshot its engine writes (newer than the newest stored),
//!   keeps the newest `[counters] snapshots_kept`, deletes the older ones, then purges
//!   the stream below the S of the oldest kept one.

use super::lsn_seq::first_seq_reaching;
use super::names::Names;
use crate::replication::distrusted::Distrusted;
use crate::replication::resync::Resync;
use crate::replication::store::CounterStore;
use crate::replication::Role;
use anyhow::Context;
use async_nats::jetstream::{self, object_store::ObjectStore, stream};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// One snapshot in the object store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The object's name.
    pub name: String,
    /// Its lsn X.
    pub lsn: u64,
    /// The first stream sequence to apply after restoring it.
    pub from_seq: u64,
}

/// The object name of a snapshot at lsn `lsn` whose tail starts at `from_seq`.
pub fn object_name(lsn: u64, from_seq: u64) -> String {
    format!("snap-{lsn:020}-seq-{from_seq:020}")
}

/// Reads an object name back (`None` for anything else in the bucket).
pub fn parse_name(name: &str) -> Option<Stored> {
    let rest = name.strip_prefix("snap-")?;
    let (lsn, seq) = rest.split_once("-seq-")?;
    Some(Stored {
        name: name.to_string(),
        lsn: lsn.parse().ok()?,
        from_seq: seq.parse().ok()?,
    })
}

/// The snapshot bucket, made if missing. Its stream is made here with the object-store
/// conventions (`OBJ_<bucket>`, chunk and meta subjects, rollups, direct gets), as the
/// lease bucket is (see `election::lease_bucket`), then bound as usual.
pub async fn bucket(
    js: &jetstream::Context,
    names: &Names,
    replicas: usize,
) -> anyhow::Result<ObjectStore> {
    let b = &names.snapshot_bucket;
    js.get_or_create_stream(stream::Config {
        name: format!("OBJ_{b}"),
        subjects: vec![format!("$O.{b}.C.>"), format!("$O.{b}.M.>")],
        discard: stream::DiscardPolicy::New,
        allow_rollup: true,
        allow_direct: true,
        num_replicas: replicas,
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .with_context(|| format!("cannot make the snapshot object store {b}"))?;
    js.get_object_store(b)
        .await
        .with_context(|| format!("cannot open the snapshot object store {b}"))
}

/// The snapshots in the bucket, newest (highest lsn) first.
pub async fn list(bucket: &ObjectStore) -> anyhow::Result<Vec<Stored>> {
    let mut out = Vec::new();
    let mut objects = bucket.list().await?;
    while let Some(info) = objects.next().await {
        if let Some(s) = parse_name(&info?.name) {
            out.push(s);
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.lsn));
    Ok(out)
}

/// The bytes of one snapshot (the object store checks its digest).
pub async fn download(bucket: &ObjectStore, snapshot: &Stored) -> anyhow::Result<Vec<u8>> {
    let mut object = bucket.get(&snapshot.name).await?;
    let mut bytes = Vec::new();
    object.read_to_end(&mut bytes).await?;
    Ok(bytes)
}

/// Puts the snapshot at lsn `lsn`, keeps the newest `kept`, purges the stream below
/// what the oldest kept one needs. Returns what was stored and the stream's new first
/// sequence.
pub async fn publish(
    bucket: &ObjectStore,
    log: &stream::Stream,
    lsn: u64,
    bytes: &[u8],
    kept: usize,
) -> anyhow::Result<(Stored, u64)> {
    let from_seq = first_seq_reaching(log, lsn).await?;
    let stored = Stored {
        name: object_name(lsn, from_seq),
        lsn,
        from_seq,
    };
    let mut data = bytes;
    bucket
        .put(stored.name.as_str(), &mut data)
        .await
        .with_context(|| format!("cannot put snapshot {}", stored.name))?;
    let all = list(bucket).await?;
    for old in all.iter().skip(kept.max(1)) {
        bucket
            .delete(&old.name)
            .await
            .with_context(|| format!("cannot delete old snapshot {}", old.name))?;
    }
    let purge_below = all
        .iter()
        .take(kept.max(1))
        .map(|s| s.from_seq)
        .min()
        .unwrap_or(1);
    log.purge()
        .sequence(purge_below)
        .await
        .with_context(|| format!("cannot purge the stream below sequence {purge_below}"))?;
    Ok((stored, purge_below))
}

/// While this node leads: every second, puts the engine's newest snapshot file if it is
/// newer than the newest stored one. The files are listed at the first look and then
/// only once the engine wrote another snapshot (an idle group reads no directory).
/// Failures are logged and tried again.
pub async fn ship(state: Arc<CounterStore>, bucket: ObjectStore, log: stream::Stream) {
    let kept = state.spec.snapshots_kept;
    let mut newest_stored = match list(&bucket).await {
        Ok(all) => all.first().map_or(0, |s| s.lsn),
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the stored snapshots");
            0
        }
    };
    // What the engine had written when the files were last listed (none yet).
    let mut listed_at: Option<u64> = None;
    loop {
        super::ticks::until_next(Duration::from_secs(1)).await;
        if state.replication.role() != Role::Leader {
            return;
        }
        let written = state.counters.engine.snapshots_written();
        if listed_at == Some(written) {
            continue;
        }
        let engine_state = Arc::clone(&state);
        let newest = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let files = engine_state.counters.engine.snapshot_files()?;
            match files.into_iter().next() {
                Some((lsn, path)) if lsn > newest_stored => {
                    let bytes = std::fs::read(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    Ok(Some((lsn, bytes)))
                }
                _ => Ok(None),
            }
        })
        .await;
        let (lsn, bytes) = match newest {
            Ok(Ok(Some(found))) => found,
            Ok(Ok(None)) => {
                listed_at = Some(written);
                continue;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the newest snapshot; trying again");
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the newest snapshot failed");
                continue;
            }
        };
        // The snapshot copied each stripe as it was, so it may hold records past its lsn
        // that the stream has not taken yet (or never will, if this node is being
        // deposed): it is stored only once everything the engine had when it was read
        // is in the stream.
        let reach = state.counters.engine.next_lsn();
        if !published_to(&state, reach).await {
            tracing::warn!(
                lsn,
                reach,
                "a snapshot holds records the stream has not taken; not storing it"
            );
            continue;
        }
        let started = std::time::Instant::now();
        match publish(&bucket, &log, lsn, &bytes, kept).await {
            Ok((stored, first)) => {
                newest_stored = lsn;
                listed_at = Some(written);
                tracing::info!(
                    snapshot = %stored.name,
                    bytes = bytes.len(),
                    stream_first_seq = first,
                    ms = started.elapsed().as_millis() as u64,
                    "snapshot stored; stream purged below what the oldest kept one needs"
                );
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot store a snapshot; trying again")
            }
        }
    }
}

/// Waits (up to [`PUBLISHED_WITHIN`]) until every record below `reach` is stored in the
/// stream; whether it was.
async fn published_to(state: &CounterStore, reach: u64) -> bool {
    let deadline = std::time::Instant::now() + PUBLISHED_WITHIN;
    loop {
        if state.counters.engine.durable_lsn() >= reach {
            return true;
        }
        if std::time::Instant::now() >= deadline || state.replication.role() != Role::Leader {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How long a snapshot waits for the records it may hold to reach the stream.
const PUBLISHED_WITHIN: Duration = Duration::from_secs(5);

/// What a start restored from the object store.
#[derive(Debug, Clone)]
pub struct Restored {
    /// The snapshot used.
    pub snapshot: Stored,
    /// How long fetching and writing it took.
    pub took: Duration,
}

/// Seeds the empty engine directory `dir` with the newest usable snapshot of the
/// store's object store (an older one if the newest cannot be fetched, is damaged, or
/// is one the stream did not continue at an earlier start here: see
/// [`crate::replication::distrusted`]). A copy whose last replay broke in the stream
/// leader's copy ([`crate::replication::resync`]) waits for one past the break, asking
/// the leader. `None` when the store has none: the node
/// replays the stream from its start. Blocks: call it from a blocking thread, before
/// the engine is opened.
pub fn restore_newest(
    spec: &crate::replication::store::StoreSpec,
    dir: &std::path::Path,
) -> anyhow::Result<Option<Restored>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime to fetch the newest snapshot")?;
    runtime.block_on(async {
        let started = std::time::Instant::now();
        let names = Names::new(&spec.name);
        let (client, bucket, all) =
            super::until_up::until_up("listing the stored snapshots", || async {
                let client = crate::nats_connect::connect(&spec.nats, "shardkit snapshot fetch")
                    .await
                    .context("cannot fetch the counters' snapshot")?;
                let js = jetstream::new(client.clone());
                let bucket = bucket(&js, &names, spec.stream_replicas).await?;
                let all = list(&bucket).await?;
                Ok((client, bucket, all))
            })
            .await?;
        let resync = Resync::beside(dir);
        let all = match resync.past() {
            None => all,
            Some(past) => {
                super::snapshot_wanted::wait_past(&client, &names.snapshot_wanted, &bucket, past)
                    .await
                    .into_iter()
                    .filter(|s| s.from_seq > past)
                    .collect()
            }
        };
        for stored in usable(all, &Distrusted::beside(dir)) {
            let bytes = match download(&bucket, &stored).await {
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::warn!(snapshot = %stored.name, error = %e, "cannot fetch a stored snapshot; trying an older one");
                    continue;
                }
            };
            match shardkit_counters::restore_snapshot(dir, &bytes) {
                Ok(_) => {
                    tracing::info!(snapshot = %stored.name, bytes = bytes.len(), "counters start from the stored snapshot");
                    resync.clear();
                    return Ok(Some(Restored {
                        snapshot: stored,
                        took: started.elapsed(),
                    }));
                }
                Err(e @ shardkit_counters::Error::Restore { .. }) => {
                    tracing::error!(snapshot = %stored.name, error = %e, "a stored snapshot is unusable; trying an older one");
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    })
}

/// The stored snapshots to try, newest first, without those `distrusted` names (the
/// list forgets snapshots the store no longer has). When every one is distrusted the
/// list is cleared and all are tried again: a node with no snapshot to start from
/// could not start at all once the stream is purged.
fn usable(all: Vec<Stored>, distrusted: &Distrusted) -> Vec<Stored> {
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    if let Err(e) = distrusted.keep_only(&names) {
        tracing::warn!(error = %e, "cannot prune the list of snapshots not to start from");
    }
    let skipped = distrusted.names();
    let trusted: Vec<Stored> = all
        .iter()
        .filter(|s| !skipped.contains(&s.name))
        .cloned()
        .collect();
    if trusted.is_empty() && !all.is_empty() {
        tracing::warn!(
            skipped = ?skipped,
            "every stored snapshot is one the stream did not continue at an earlier start; trying them all again"
        );
        let _ = distrusted.keep_only(&[]);
        return all;
    }
    for name in &skipped {
        tracing::warn!(snapshot = %name, "not starting from this snapshot: the stream did not continue it at an earlier start");
    }
    trusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_lsn() {
        let name = object_name(1_234, 56);
        assert_eq!(name, "snap-00000000000000001234-seq-00000000000000000056");
        assert_eq!(
            parse_name(&name),
            Some(Stored {
                name: name.clone(),
                lsn: 1_234,
                from_seq: 56
            })
        );
        assert_eq!(parse_name("other"), None);
        assert_eq!(parse_name("snap-x-seq-1"), None);
    }
}
