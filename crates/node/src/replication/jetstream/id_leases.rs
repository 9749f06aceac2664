//! The NATS side of [`crate::id_leases`]: the KV bucket `shardkit_ids_<store>` (values
//! live one lease), a key `block-<n>` per block of id shards held by the node named in
//! its value. This node takes the lowest free block at start and again whenever it holds
//! none, renews what it holds every third of the lease, forgets a block as soon as a
//! renewal is refused, and deletes its keys when it stops.

use super::election::lease_bucket;
use crate::id_leases::{Held, IdLeases};
use crate::replication::store::StoreSpec;
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many blocks a node holds (it issues from all of them round-robin).
const WANTED: usize = 1;

/// The id lease bucket of store `store`.
pub fn bucket_name(store: &str) -> String {
    format!("shardkit_ids_{store}")
}

fn key(block: u64) -> String {
    format!("block-{block}")
}

/// The bucket, made if missing.
pub async fn open(js: &jetstream::Context, spec: &StoreSpec) -> anyhow::Result<kv::Store> {
    lease_bucket(
        js,
        &bucket_name(&spec.name),
        Duration::from_millis(spec.lease_ms),
        spec.stream_replicas,
    )
    .await
}

/// Takes, renews and gives back this node's id shard blocks until the runtime stops.
pub async fn run(leases: Arc<IdLeases>, kv: kv::Store, me: String, lease_for: Duration) {
    let value = Bytes::from(me);
    loop {
        for held in leases.held() {
            let asked = Instant::now();
            match kv
                .update(key(held.block), value.clone(), held.revision)
                .await
            {
                Ok(revision) => leases.hold(Held {
                    revision,
                    valid_until: asked + lease_for,
                    ..held
                }),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                    tracing::warn!(
                        block = held.block,
                        "another node holds this node's id shard block now"
                    );
                    leases.release(held.block);
                }
                // It lapses by itself if this goes on.
                Err(e) => tracing::warn!(error = %e, "cannot renew an id shard lease; retrying"),
            }
        }
        if leases.held().len() < WANTED {
            take_one(&leases, &kv, &value, lease_for).await;
        }
        tokio::time::sleep(lease_for / 3).await;
    }
}

/// Takes the lowest free block, if any.
async fn take_one(leases: &IdLeases, kv: &kv::Store, value: &Bytes, lease_for: Duration) {
    let mine: Vec<u64> = leases.held().iter().map(|h| h.block).collect();
    for block in (0..leases.blocks()).filter(|b| !mine.contains(b)) {
        let asked = Instant::now();
        match kv.create(key(block), value.clone()).await {
            Ok(revision) => {
                tracing::info!(block, "took an id shard lease");
                leases.hold(Held {
                    block,
                    revision,
                    valid_until: asked + lease_for,
                    usable_from: asked + IdLeases::allowance(lease_for),
                });
                return;
            }
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => continue,
            Err(e) => {
                tracing::warn!(error = %e, "cannot take an id shard lease; retrying");
                return;
            }
        }
    }
    tracing::error!("every id shard block is leased to another node: this node issues no ids");
}

/// Gives the held blocks back (clean shutdown), so another node may take them at once.
pub async fn leave(leases: &IdLeases, kv: &kv::Store) {
    for held in leases.held() {
        leases.release(held.block);
        if let Err(e) = kv.delete(key(held.block)).await {
            tracing::warn!(error = %e, "cannot give back an id shard lease");
        }
    }
}
