//! Membership: every node announces itself (addresses, role, applied sequence) under
//! its node id in the store's members bucket, every third of a lease, and watches the
//! bucket to know the others ([`crate::replication::members`]), which the Sentinel
//! replies read. The bucket keeps a value [`KEEP_LEASES`] leases, so a node that died
//! without leaving drops out on its own; a node that stops cleanly deletes its key.

use super::election::lease_bucket;
use super::names::Names;
use crate::replication::members::Member;
use crate::replication::sentinel::role_name;
use crate::replication::store::CounterStore;
use crate::replication::store::StoreSpec;
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// How many leases an announcement lives in the bucket without a refresh.
pub const KEEP_LEASES: u32 = 3;

/// This node's key in the members bucket.
#[derive(Clone)]
pub struct Membership {
    kv: kv::Store,
    key: String,
    every: Duration,
    keep: Duration,
    may_lead: bool,
}

impl Membership {
    /// Makes the members bucket if missing (as the lease bucket is made: see
    /// `election::lease_bucket`) and binds it.
    pub async fn open(
        js: &jetstream::Context,
        spec: &StoreSpec,
        node: &str,
    ) -> anyhow::Result<Self> {
        let names = Names::new(&spec.name);
        let lease_for = Duration::from_millis(spec.lease_ms);
        let kv = lease_bucket(
            js,
            &names.members_bucket,
            lease_for * KEEP_LEASES,
            spec.stream_replicas,
        )
        .await?;
        Ok(Self {
            kv,
            key: node.to_string(),
            every: lease_for / 3,
            keep: lease_for * KEEP_LEASES,
            may_lead: spec.may_lead,
        })
    }

    /// Removes this node's announcement (clean shutdown).
    pub async fn leave(&self) {
        if let Err(e) = self.kv.delete(&self.key).await {
            tracing::warn!(error = %e, "cannot remove this node from the counters' members");
        }
    }
}

/// Announces this node every third of a lease and records every announcement heard,
/// until the runtime stops.
pub async fn run(state: Arc<CounterStore>, membership: Membership) {
    let members = &state.replication.members;
    members.set_forget_after(membership.keep.as_millis() as u64);
    let mut watch = None;
    let mut tick = tokio::time::interval(membership.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if watch.is_none() {
            match membership.kv.watch_with_history(">").await {
                Ok(w) => watch = Some(w),
                Err(e) => {
                    if WATCH_FAILED.due() {
                        tracing::warn!(error = %e, "cannot watch the counters' members (logged at most every 10 s)")
                    }
                }
            }
        }
        tokio::select! {
            _ = tick.tick() => announce(&state, &membership).await,
            heard = next(&mut watch) => match heard {
                Some(Ok(entry)) => {
                    let at_ms = (entry.created.unix_timestamp_nanos() / 1_000_000) as u64;
                    match entry.operation {
                        kv::Operation::Put => match serde_json::from_slice::<Member>(&entry.value) {
                            Ok(member) if member.node == state.replication.me.node => {
                                members.record_own(member, at_ms)
                            }
                            Ok(member) => members.record(member, at_ms),
                            Err(e) => tracing::warn!(key = %entry.key, error = %e, "unreadable member announcement"),
                        },
                        kv::Operation::Delete | kv::Operation::Purge => members.forget(&entry.key),
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "watching the counters' members stopped; watching again");
                    watch = None;
                    tokio::time::sleep(membership.every).await;
                }
                None => {
                    watch = None;
                    tokio::time::sleep(membership.every).await;
                }
            },
        }
    }
}

/// The next entry of the watch, or never when there is none.
async fn next(watch: &mut Option<kv::Watch>) -> Option<Result<kv::Entry, kv::WatcherError>> {
    match watch {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

/// Puts this node's announcement.
async fn announce(state: &CounterStore, membership: &Membership) {
    let status = &state.replication;
    let member = Member {
        node: status.me.node.clone(),
        resp: status.me.resp.clone(),
        http: status.me.http.clone(),
        role: role_name(&status.role()).to_string(),
        applied_seq: status.progress().0,
        may_lead: membership.may_lead,
    };
    let Ok(value) = serde_json::to_vec(&member) else {
        return;
    };
    if let Err(e) = membership.kv.put(&membership.key, Bytes::from(value)).await {
        if ANNOUNCE_FAILED.due() {
            tracing::warn!(error = %e, "cannot announce this node in the counters' members (logged at most every 10 s)");
        }
    }
}

/// NATS weather repeats these failures every tick: logged once per period.
static WATCH_FAILED: shardkit_util::log_every::LogEvery =
    shardkit_util::log_every::LogEvery::every(std::time::Duration::from_secs(10));
static ANNOUNCE_FAILED: shardkit_util::log_every::LogEvery =
    shardkit_util::log_every::LogEvery::every(std::time::Duration::from_secs(10));
