//! Who writes: the lease in the KV bucket, the catch-up and fencing a new leader does
//! before it takes writes, the renewal, and stepping down.
//!
//! Taking over: create the lease key (refused while another holds it), or take over
//! one not renewed for a whole lease (compare-and-set on its revision); the revision
//! won is the new leader's term. Read the stream's last sequence L, wait until the
//! follower applied L, check that this node's chain at L is the stream leader's,
//! publish an empty marker expecting L (refused if a deposed writer appended meanwhile:
//! then read again), stop following, attach the [`JetStreamLog`] and take writes. From the marker on, any
//! publish of an older writer expects a sequence that is no longer the last: refused.
//!
//! Why one file of this size: take-over, renewal and step-down share the lease's state
//! and its fencing rule; kept together so that every path that may write checks the
//! same term.

use super::follower::follow;
use super::joint::joint_head;
use super::kv_agreed::Agreed;
use super::names::{Names, LEADER_HEADER, LEASE_KEY, LSN_HEADER};
use super::publisher::{JetStreamLog, Lease};
use super::stamp::{Diverged, Stamp, CHAIN_HEADER, TERM_HEADER};
use super::EXIT_DEPOSED;
use crate::replication::log_chain::Head;
use crate::replication::store::CounterStore;
use crate::replication::store::StoreSpec;
use crate::replication::{LeaderAddr, Role};
use async_nats::jetstream::{self, kv, message::PublishMessage, stream};
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many leases a publish without an answer is held and sent again before the
/// leader gives up (NATS weather: a stream leader election on nats-server 2.9 takes up
/// to ~10 s).
const HOLD_LEASES: u32 = 10;

/// The store's NATS objects, made at start.
pub struct Store {
    pub(super) js: jetstream::Context,
    stream: stream::Stream,
    lease: LeaseBucket,
    snapshots: jetstream::object_store::ObjectStore,
    names: Names,
    lease_for: Duration,
    /// Where every task of the store runs (follower, renewal, publisher, snapshot
    /// shipping): this store's runtime, or for a cluster node's groups the node's shared
    /// one (beside its NATS connection), so the commits and timers of many groups wake
    /// one thread.
    pub(super) tasks: super::tasks::Tasks,
}

impl Store {
    /// Connects and makes the stream and the lease bucket if missing; the store's tasks
    /// will run among `tasks`.
    pub async fn connect(
        spec: &StoreSpec,
        client_name: &str,
        tasks: super::tasks::Tasks,
    ) -> anyhow::Result<Self> {
        let client = crate::nats_connect::connect(&spec.nats, client_name).await?;
        Self::on(spec, client, tasks).await
    }

    /// [`Store::connect`] over a connection already made: a cluster node's group
    /// stores share one, so the publishes of groups committing together go out in one
    /// write and their acks come back in one read (and the NATS server serves one
    /// client, not one per group).
    pub async fn on(
        spec: &StoreSpec,
        client: async_nats::Client,
        tasks: super::tasks::Tasks,
    ) -> anyhow::Result<Self> {
        let names = Names::new(&spec.name);
        let lease_for = Duration::from_millis(spec.lease_ms);
        let js = jetstream::new(client);
        let replicas = spec.stream_replicas;
        let stream = js
            .get_or_create_stream(stream::Config {
                name: names.stream.clone(),
                subjects: vec![names.subject.clone()],
                num_replicas: replicas,
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await?;
        let lease = LeaseBucket {
            kv: lease_bucket(&js, &names.lease_bucket, lease_for, replicas).await?,
            stream: js.get_stream(format!("KV_{}", names.lease_bucket)).await?,
            name: names.lease_bucket.clone(),
        };
        let snapshots = super::snapshots::bucket(&js, &names, replicas).await?;
        Ok(Self {
            js,
            stream,
            lease,
            snapshots,
            names,
            lease_for,
            tasks,
        })
    }
}

/// The lease bucket, made if missing: a [`kv_bucket`] of one value per key whose
/// values live `lease_for`; the membership bucket is made the same way with a longer life.
pub(crate) async fn lease_bucket(
    js: &jetstream::Context,
    bucket: &str,
    lease_for: Duration,
    replicas: usize,
) -> anyhow::Result<kv::Store> {
    kv_bucket(js, bucket, lease_for, 1, replicas).await
}

/// A KV bucket, made if missing. Its stream is made here with the KV conventions
/// (`KV_<bucket>`, subjects `$KV.<bucket>.>`, `history` values per key, rollups, direct
/// gets) rather than by `create_key_value`, whose reply from a 2.9 server async-nats
/// 0.51 cannot parse; `get_key_value` then binds it as usual. Values live `max_age`
/// (zero: for good).
pub(crate) async fn kv_bucket(
    js: &jetstream::Context,
    bucket: &str,
    max_age: Duration,
    history: i64,
    replicas: usize,
) -> anyhow::Result<kv::Store> {
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: history,
        max_age,
        duplicate_window: if max_age.is_zero() {
            Duration::from_secs(120)
        } else {
            max_age
        },
        discard: stream::DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: replicas,
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await?;
    Ok(js.get_key_value(bucket).await?)
}

/// Follows the stream; stands for the lease every third of it (role `auto`), and at
/// once when the lease key changes (a holder giving it back); leads once it has it;
/// starts the store over when it loses it (the server restarts in place, exiting with
/// [`EXIT_DEPOSED`] only if it cannot; a cluster group is reopened by its node).
///
/// A lease lapses when its holder has not renewed it for a whole lease: every node
/// notes, on its own monotonic clock, when it first saw the lease's current revision
/// (read from the bucket's stream leader; the clock starts again whenever the bucket
/// cannot be read, as its holder could not renew then either), and once that
/// revision is a lease old it takes the lease over with a compare-and-set on that
/// revision. This does not wait for NATS to expire the key
/// (late while the bucket's stream elects a leader) and trusts no wall clock. The
/// lease decides who may try to write, not what is acknowledged: a holder that lost
/// it without knowing (paused, cut off) still publishes, and the stream takes its
/// batch only if nobody appended since its own last message (the expected sequence,
/// [`super::publisher`]); what it acknowledges is then in the agreed log. The new
/// holder reads such a late batch before its leader marker lands (a marker refused
/// for it catches up and is sent again), and once the marker is in, the old holder's
/// next publish is refused and fences it. So a lease that runs out costs neither an
/// acknowledged write nor a second writer, and no write waits on this node's clock.
pub async fn run(state: Arc<CounterStore>, store: Store) {
    let me = state.replication.me.clone();
    let me_json = serde_json::to_string(&me).unwrap_or_default();
    let from = state.replication.progress().0 + 1;
    if from == 1 {
        // No snapshot: the first message of the stream continues the empty chain.
        state
            .replication
            .set_head(Some(crate::replication::log_chain::GENESIS));
    } else {
        state.replication.set_snapshot_joint(from);
        // After a snapshot: the agreed chain at its joint, as the stream leader holds
        // it, is where this copy's chain stands. Known, a deposed leader's late write
        // met first is skipped for its older term, as every other reader skips it,
        // instead of being applied as the first message.
        let read = tokio::time::timeout(store.lease_for, joint_head(&store.stream, from));
        if let Ok(Some(head)) = read.await {
            state.replication.set_head(Some(head));
        }
    }
    // After what the start restored from a snapshot (0 without one: from the start).
    let mut follower = store.tasks.spawn(follow(
        Arc::clone(&state),
        store.stream.clone(),
        store.names.clone(),
        from,
    ));
    let tick = store.lease_for / 3;
    // How long the lease's revision has stood (this node's clock).
    let mut seen = shardkit_util::revision_clock::RevisionClock::default();
    // Since when the lease cannot be read (the bucket electing a stream leader, NATS
    // out of reach): logged when it can again, so a failover's time can be told apart
    // from NATS's own election.
    let mut unreadable_since: Option<Instant> = None;
    // Changes of the lease key (renewals, a hand-back) wake the loop early; without a
    // watch (NATS trouble) it still runs every tick.
    let mut changes = store.lease.kv.watch(LEASE_KEY).await.ok();
    loop {
        match changes.as_mut() {
            Some(watch) => {
                tokio::select! {
                    _ = super::ticks::until_next(tick) => {}
                    event = futures_util::StreamExt::next(watch) => {
                        if !matches!(event, Some(Ok(_))) {
                            changes = None;
                        }
                    }
                }
            }
            None => super::ticks::until_next(tick).await,
        }
        if follower.is_finished() {
            match (&mut follower).await {
                Ok(Some(Err(e))) => {
                    super::follower::start_over(&state, &e);
                    return;
                }
                _ => tracing::error!("following the counters' stream stopped"),
            }
            // Start again after what was applied (a new ordered consumer).
            let (applied, _, _) = state.replication.progress();
            follower = store.tasks.spawn(follow(
                Arc::clone(&state),
                store.stream.clone(),
                store.names.clone(),
                applied + 1,
            ));
            continue;
        }
        // Bounded: while the counters stream elects a leader (its leader's host cut
        // off) the question waits for NATS's request timeout, and the lease must still
        // be watched on time meanwhile, or the failover waits for that election twice.
        let behind = tokio::time::timeout(
            store.lease_for / 3,
            super::follower::behind(&state, &store.stream),
        )
        .await
        .ok()
        .flatten();
        if let Some(behind) = behind {
            super::follower::start_over(&state, &behind);
            return;
        }
        let stands = state
            .stands_for_lease
            .load(std::sync::atomic::Ordering::Acquire);
        let asked = Instant::now();
        let read = tokio::time::timeout(store.lease_for / 3, store.lease.read())
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("timed out")));
        if read.is_ok() {
            if let Some(since) = unreadable_since.take() {
                tracing::info!(
                    unreadable_ms = since.elapsed().as_millis() as u64,
                    "the counters' lease can be read again"
                );
            }
        }
        let taken = match read {
            Ok(Agreed::Value(revision, value)) => {
                if seen.stood(revision, asked) < store.lease_for {
                    if let Ok(leader) = serde_json::from_slice::<LeaderAddr>(&value) {
                        state.replication.set_role(Role::Replica {
                            leader: Some(leader),
                        });
                    }
                    continue;
                }
                // Not renewed for a whole lease while the bucket took writes: its
                // holder is gone or cut off.
                state.replication.set_role(Role::Replica { leader: None });
                if !stands {
                    continue;
                }
                tracing::warn!(
                    revision,
                    "the counters' lease was not renewed for a whole lease; taking it over"
                );
                store
                    .lease
                    .kv
                    .update(LEASE_KEY, Bytes::from(me_json.clone()), revision)
                    .await
                    .ok()
            }
            Ok(free @ (Agreed::Deleted | Agreed::Missing)) => {
                // A key with no message that was set before was expired by the
                // bucket, not given back: NATS drops a key a new stream leader finds
                // past its age, also when its holder could not renew only because the
                // bucket had no leader. The holder sets it again when it can (see
                // `renew`); it is taken only once it stayed missing for a whole lease
                // on this node's clock (0 is no revision). Given back (a delete) or
                // never set: free now.
                let expired = free == Agreed::Missing && store.lease.ever_set().await;
                if !expired {
                    seen.reset();
                } else if seen.stood(0, asked) < store.lease_for {
                    continue;
                }
                state.replication.set_role(Role::Replica { leader: None });
                if !stands {
                    continue;
                }
                if expired {
                    tracing::warn!(
                        "the counters' lease stayed missing for a whole lease; taking it"
                    );
                }
                store
                    .lease
                    .kv
                    .create(LEASE_KEY, Bytes::from(me_json.clone()))
                    .await
                    .ok()
            }
            Err(e) => {
                // No leader for the bucket (an election) or NATS trouble: the holder
                // cannot renew either, so the time it had to renew starts again once
                // the bucket answers.
                seen.reset();
                unreadable_since.get_or_insert(asked);
                static FAILED: shardkit_util::log_every::LogEvery =
                    shardkit_util::log_every::LogEvery::every(Duration::from_secs(10));
                if FAILED.due() {
                    tracing::warn!(error = %e, "cannot read the counters' lease (logged at most every 10 s)");
                }
                continue;
            }
        };
        let Some(revision) = taken else {
            continue;
        };
        tracing::info!(
            term = revision,
            "took the counters' lease; catching up with the stream"
        );
        let fenced = Arc::new(AtomicBool::new(false));
        let lease = Lease {
            term: revision,
            hold: store.lease_for * HOLD_LEASES,
        };
        store.tasks.spawn(renew(
            Arc::clone(&state),
            store.lease.clone(),
            me_json.clone(),
            revision,
            store.lease_for,
            Arc::clone(&fenced),
        ));
        match take_over(&state, &store, &me_json, &lease, &fenced).await {
            Ok(marker) => {
                follower.abort();
                let _ = (&mut follower).await;
                if let Err(e) = lead(&state, &store, marker, lease, fenced).await {
                    tracing::error!(error = %e, "cannot start leading the counters");
                    step_down(&state);
                    return;
                }
                // From finding the lease free to taking writes: catching up, the
                // stream's own leader election when its leader was lost, the marker.
                tracing::info!(
                    takeover_ms = asked.elapsed().as_millis() as u64,
                    "took over the counters"
                );
                return;
            }
            Err(e) if e.is::<Diverged>() => {
                // Give the lease back at once: another node can lead while this one
                // starts over.
                fenced.store(true, Ordering::Release);
                let _ = store
                    .lease
                    .kv
                    .delete_expect_revision(LEASE_KEY, Some(revision))
                    .await;
                super::follower::start_over(&state, &e);
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "taking over the counters failed");
                step_down(&state);
                return;
            }
        }
    }
}

/// The stream leader's end is behind this node's copy (a leader just elected that has
/// not applied everything yet): read it again.
#[derive(Debug, thiserror::Error)]
#[error("the stream leader's end is behind this node's copy")]
struct Lagging;

/// The lease bucket: renewals and take-overs by compare-and-set on its KV, reads from
/// its stream's leader.
#[derive(Clone)]
struct LeaseBucket {
    kv: kv::Store,
    /// The bucket's stream, read from its leader ([`LeaseBucket::read`]).
    stream: stream::Stream,
    name: String,
}

impl LeaseBucket {
    /// The lease as the bucket's stream leader holds it: a value at its revision,
    /// given back (a delete marker), or missing (never set, or expired by the bucket's
    /// `max_age`). Not a direct get, which any replica of the bucket answers even
    /// while no leader could take a write (or, on nats-server 2.9 after a partition,
    /// from a copy that lost writes the others took): a read that succeeds here means
    /// the holder could have renewed too, so a lease is found unrenewed only over time
    /// in which renewing was possible.
    async fn read(&self) -> anyhow::Result<Agreed> {
        Ok(super::kv_agreed::agreed_key(&self.stream, &self.name, LEASE_KEY).await?)
    }

    /// Whether the lease was ever set (the bucket's stream holds or held a message):
    /// a missing lease that was never set is free at once. Unknown (NATS trouble)
    /// counts as set, the side that waits.
    async fn ever_set(&self) -> bool {
        let mut stream = self.stream.clone();
        !matches!(stream.info().await, Ok(info) if info.state.last_sequence == 0)
    }
}

/// Catches up, checks that this node's copy ends where the stream leader's does (same
/// chain at the last message), and appends the leader marker; returns the stream's
/// end after it.
async fn take_over(
    state: &CounterStore,
    store: &Store,
    me_json: &str,
    lease: &Lease,
    fenced: &AtomicBool,
) -> anyhow::Result<Head> {
    let mut ahead_since: Option<Instant> = None;
    loop {
        if fenced.load(Ordering::Acquire) {
            anyhow::bail!("lost the lease while catching up");
        }
        // A NATS failure here (a server of the cluster lost, a leader being elected)
        // is waited out while the lease holds: nothing was acknowledged yet.
        // Bounded by a third of the lease and asked again: a request sent while the
        // stream elects a leader is not answered before NATS's request timeout (10 s)
        // even when the election is over long before.
        let info = tokio::time::timeout(store.lease_for / 3, store.stream.get_info())
            .await
            .map_err(|_| anyhow::anyhow!("timed out"))
            .and_then(|info| Ok(info?));
        let stream_state = match info {
            Ok(info) => info.state,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the counters' stream end; trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let last = stream_state.last_sequence;
        if stream_state.first_sequence > state.replication.progress().0 + 1 {
            anyhow::bail!("this node fell behind the stream's purge point; it restarts from the newest snapshot");
        }
        let applied = state.replication.progress().0;
        if applied > last {
            // A stream leader just elected may not have applied what this node already
            // read elsewhere: ask again rather than compare ends that are not the same;
            // for a whole lease at most, after which this copy holds messages the
            // stream does not.
            if ahead_since.get_or_insert_with(Instant::now).elapsed() >= store.lease_for {
                return Err(Diverged {
                    seq: last,
                    why: format!(
                        "this copy applied up to message {applied}, the stream ends at {last}"
                    ),
                }
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        while state.replication.progress().0 < last {
            if fenced.load(Ordering::Acquire) {
                anyhow::bail!("lost the lease while catching up");
            }
            if let Some(why) = state.replication.diverged() {
                return Err(Diverged { seq: last, why }.into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let head = match agreed_end(state, store, last).await {
            Ok(head) => head,
            Err(e) if e.is::<Diverged>() => return Err(e),
            Err(e) if e.is::<Lagging>() => {
                if ahead_since.get_or_insert_with(Instant::now).elapsed() >= store.lease_for {
                    return Err(Diverged {
                        seq: last,
                        why: format!(
                            "this copy holds records past the stream's end (message {last}) for a whole lease"
                        ),
                    }
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the counters' stream end; trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let next_lsn = state.counters.engine.next_lsn();
        let lsns = (next_lsn, next_lsn);
        let stamp = Stamp::new(lease.term, head.chain, lsns, b"");
        let (term, chain) = stamp.header_values();
        let marker = PublishMessage::build()
            .payload(Bytes::new())
            .expected_last_sequence(last)
            .message_id(format!("{}.marker", lease.term).as_str())
            .header(LEADER_HEADER, me_json)
            .header(LSN_HEADER, format!("{next_lsn}-{next_lsn}").as_str())
            .header(TERM_HEADER, term.as_str())
            .header(CHAIN_HEADER, chain.as_str());
        let sent = match store
            .js
            .send_publish(store.names.subject.clone(), marker)
            .await
        {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match sent {
            Ok(ack) if ack.sequence == last + 1 => {
                return Ok(Head {
                    seq: ack.sequence,
                    term: lease.term,
                    chain: stamp.after,
                })
            }
            Ok(ack) => {
                // A repeated marker the stream had already stored (its duplicate
                // window answers with the first one's sequence): read what it holds.
                let stored = store.stream.get_raw_message(ack.sequence).await?;
                match Stamp::read(Some(&stored.headers)) {
                    Ok(Some(s)) if s.term == lease.term => {
                        return Ok(Head {
                            seq: ack.sequence,
                            term: s.term,
                            chain: s.after,
                        })
                    }
                    _ => anyhow::bail!(
                        "the leader marker was stored as message {} but that message is not this term's",
                        ack.sequence
                    ),
                }
            }
            Err(e) if e.kind() == jetstream::context::PublishErrorKind::WrongLastSequence => {
                // An old writer appended after we read: read to the new end and try again.
                continue;
            }
            Err(e) => {
                // The marker may have been stored all the same: reading the end again
                // finds it, and the next marker (same message id) is answered with it.
                tracing::warn!(error = %e, "the leader marker was not acknowledged; trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The stream's end at message `last` as its leader holds it, checked against this
/// node's copy: the same chain, or a [`Diverged`] (this node applied something else).
/// A node whose own end is not known (started from a snapshot with nothing after it)
/// takes the stream leader's; an unstamped last message (written by an older build)
/// starts the chain again from zero.
async fn agreed_end(state: &CounterStore, store: &Store, last: u64) -> anyhow::Result<Head> {
    if last == 0 {
        return Ok(crate::replication::log_chain::GENESIS);
    }
    let ours = state.replication.head();
    if ours.is_some_and(|o| o.seq > last) {
        // The follower went on past `last` meanwhile, or this stream leader has not
        // applied everything yet: compare ends that are the same message.
        return Err(Lagging.into());
    }
    let message = store.stream.get_raw_message(last).await?;
    let Some(stamp) =
        Stamp::read(Some(&message.headers)).map_err(|why| Diverged { seq: last, why })?
    else {
        return Ok(Head {
            seq: last,
            term: 0,
            chain: 0,
        });
    };
    if let Some(o) = ours.filter(|o| o.seq < last) {
        if stamp.term >= o.term {
            return Err(Lagging.into());
        }
        // The stream ends with a deposed leader's write that NATS appended after a
        // newer term's messages: every reader skips it (`follower::take`), so the
        // chain goes on from this node's end, which must be the stream leader's.
        let at = store.stream.get_raw_message(o.seq).await?;
        if let Ok(Some(s)) = Stamp::read(Some(&at.headers)) {
            if s.after != o.chain {
                return Err(Diverged {
                    seq: o.seq,
                    why: "the stream leader's copy of this node's last message is another one"
                        .into(),
                }
                .into());
            }
        }
        return Ok(Head { seq: last, ..o });
    }
    let agreed = Head {
        seq: last,
        term: stamp.term,
        chain: stamp.after,
    };
    // The next lsn must be the one after the stream's last record: a node that holds a
    // record the stream never took (or lacks one it has) would publish past a gap. A
    // node started from a snapshot that applied nothing since (its own end unknown)
    // may hold records of the message after `last`: then this stream leader has not
    // caught up with what the snapshot's leader wrote.
    if let Some((_, end)) = super::lsn_seq::lsn_range(&message.headers) {
        let next = state.counters.engine.next_lsn();
        match ours {
            Some(_) if next != end => {
                return Err(Diverged {
                    seq: last,
                    why: format!(
                        "this copy's next record is lsn {next}, the stream's last message ends before lsn {end}"
                    ),
                }
                .into())
            }
            None if next > end => return Err(Lagging.into()),
            _ => {}
        }
    }
    match ours {
        Some(ours) if ours != agreed => Err(Diverged {
            seq: last,
            why: format!(
                "this copy ends at chain {} (term {}, message {}), the stream leader's at {} (term {})",
                crate::replication::log_chain::hex(ours.chain),
                ours.term,
                ours.seq,
                crate::replication::log_chain::hex(agreed.chain),
                agreed.term
            ),
        }
        .into()),
        _ => Ok(agreed),
    }
}

/// Attaches the stream as the engine's log of record and opens for writes.
async fn lead(
    state: &Arc<CounterStore>,
    store: &Store,
    marker: Head,
    lease: Lease,
    fenced: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    // The status, not the state: the engine holds this log, and the state the engine.
    let status = Arc::clone(&state.replication);
    let log = JetStreamLog::start(
        &store.tasks,
        store.js.clone(),
        &store.names,
        marker,
        lease,
        Arc::clone(&fenced),
        move |head| {
            status.set_progress(head.seq, 0, 0);
            status.set_head(Some(head));
        },
    );
    let log: Arc<dyn shardkit_counters::LogOfRecord> = Arc::new(log);
    let engine_state = Arc::clone(state);
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let engine = &engine_state.counters.engine;
        engine.set_log_of_record(Some(log))?;
        engine.set_read_only(false);
        if let Some(prepare) = engine_state.spec.prepare_leader {
            prepare(engine)?;
        }
        Ok(())
    })
    .await??;
    state.replication.set_progress(marker.seq, 0, 0);
    state.replication.set_head(Some(marker));
    state.replication.set_role(Role::Leader);
    store.tasks.spawn(super::snapshots::ship(
        Arc::clone(state),
        store.snapshots.clone(),
        store.stream.clone(),
    ));
    store.tasks.spawn(super::snapshot_wanted::answer(
        Arc::clone(state),
        store.js.client(),
        store.names.snapshot_wanted.clone(),
    ));
    tracing::info!(
        stream_seq = marker.seq,
        term = marker.term,
        "leading the counters"
    );
    Ok(())
}

/// Renews the lease every third of it at the revision held. A renewal that fails for
/// NATS weather (a stream leader being elected, a server lost) is tried again every
/// [`RENEW_RETRY`], faster than another node can find the lease unrenewed for a whole
/// lease, so a holder that reaches NATS again keeps its lease: weather costs latency,
/// not a second failover. Meanwhile the publisher holds its batches (see
/// [`super::publisher`]); nothing is acknowledged that the stream did not take after
/// this leader's last append. Only a refused renewal (another node took the lease), a
/// refused publish or a hand-back ends the lead: the node is fenced and steps down.
async fn renew(
    state: Arc<CounterStore>,
    lease: LeaseBucket,
    me_json: String,
    mut revision: u64,
    lease_for: Duration,
    fenced: Arc<AtomicBool>,
) {
    let mut failing = false;
    loop {
        let wait = super::ticks::until_next(lease_for / 3);
        tokio::select! {
            // On the grid: a node's groups renew together, in one write to NATS.
            _ = wait, if !failing => {}
            _ = tokio::time::sleep(RENEW_RETRY), if failing => {}
            _ = state.release.asked.notified() => {
                // A cluster group moving away: stop writing, give the lease back so the
                // new owner need not wait for it to lapse, and stay up.
                fenced.store(true, Ordering::Release);
                state.counters.engine.set_read_only(true);
                state.replication.set_role(Role::Replica { leader: None });
                if let Err(e) = lease.kv.delete_expect_revision(LEASE_KEY, Some(revision)).await {
                    tracing::warn!(error = %e, "cannot give the lease back; it lapses instead");
                }
                state.release.done.notify_one();
                return;
            }
        }
        if fenced.load(Ordering::Acquire) {
            // A publish was refused (another writer appended) or got no answer for
            // longer than it may be held: this leader's idea of the stream's end may be
            // wrong, so it cannot go on.
            tracing::error!(
                "a counter batch was not acknowledged by the stream; giving up the lead"
            );
            break;
        }
        // Bounded well inside the lease: a renewal stuck on a NATS server that lost
        // its stream leader is asked again (after RENEW_RETRY) before another node can
        // find the lease a whole lease old.
        let renewal = tokio::time::timeout(
            lease_for / 3,
            lease
                .kv
                .update(LEASE_KEY, Bytes::from(me_json.clone()), revision),
        )
        .await
        .unwrap_or_else(|_| Err(kv::UpdateErrorKind::TimedOut.into()));
        match renewal {
            Ok(next) => {
                if failing {
                    tracing::info!("the counters' lease is renewed again");
                }
                failing = false;
                revision = next;
            }
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                // A renewal that timed out may have landed all the same, or (nats-server
                // 2.9, a partition healing) the bucket's new stream leader holds an
                // older renewal of this node's: either way the lease still names this
                // node, at another revision, and is renewed from there. Only the
                // bucket's agreed copy decides; one that cannot be read now is NATS
                // weather, asked again (meanwhile publishes still land only after this
                // leader's own last message). A lease the bucket expired (it had
                // no leader to take the renewals) is set again: nobody took it, and
                // one that took it meanwhile would have set its own value.
                match tokio::time::timeout(lease_for / 3, lease.read()).await {
                    Ok(Ok(Agreed::Value(at, value))) if value == me_json.as_bytes() => {
                        revision = at;
                        failing = true;
                    }
                    Ok(Ok(Agreed::Missing)) => {
                        match lease
                            .kv
                            .create(LEASE_KEY, Bytes::from(me_json.clone()))
                            .await
                        {
                            Ok(at) => {
                                tracing::info!("the counters' lease expired while it could not be renewed; set again");
                                revision = at;
                                failing = false;
                            }
                            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                                tracing::error!(
                                    "another node took the counters' lease after it expired"
                                );
                                break;
                            }
                            Err(_) => failing = true,
                        }
                    }
                    Ok(Ok(_)) => {
                        tracing::error!("another node holds the counters' lease now");
                        break;
                    }
                    _ => failing = true,
                }
            }
            Err(e) => {
                // A cluster node's groups fail together: said once per period.
                static FAILED: shardkit_util::log_every::LogEvery =
                    shardkit_util::log_every::LogEvery::every(Duration::from_secs(10));
                if !failing && FAILED.due() {
                    tracing::warn!(error = %e, "cannot renew the counters' lease; trying again (writes wait meanwhile; logged at most every 10 s)");
                }
                failing = true;
            }
        }
    }
    fenced.store(true, Ordering::Release);
    step_down(&state);
}

/// How soon a failed renewal is tried again.
const RENEW_RETRY: Duration = Duration::from_millis(100);

/// Stops taking writes and starts the store over ([`crate::replication::store::OnRestart`]):
/// the server restarts in place and comes back as a replica; a cluster group is
/// reopened by its node, which goes on serving its other groups.
fn step_down(state: &CounterStore) {
    state.counters.engine.set_read_only(true);
    state.replication.set_role(Role::Deposed);
    match &state.on_restart {
        crate::replication::store::OnRestart::RestartProcess => tracing::error!(
            code = EXIT_DEPOSED,
            "this node is no longer the counters' leader; restarting in place as a replica"
        ),
        crate::replication::store::OnRestart::Reopen { group, .. } => tracing::error!(
            group,
            "this node is no longer the group's leader; reopening the group from its snapshot and stream"
        ),
    }
    state.on_restart.restart(EXIT_DEPOSED);
}
