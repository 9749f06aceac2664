//! Where a copy restored from a snapshot stands in the stream's chain.
//!
//! A snapshot covers the stream up to some message; the copy restored from it goes on
//! with the message after. Its head is the chain the agreed log has at that joint,
//! read from the stream leader. Usually that is the stamp of the message just before
//! the joint; but NATS (2.9, after a partition healed) was seen appending a deposed
//! leader's write after a newer term's messages, and when such a write sits right
//! before the joint its chain is the deposed leader's branch, not the agreed one: the
//! next message would then never continue the restored copy. Such a write is told by
//! the message after it, of a newer term, not building on it; the head is then the
//! message that one does build on.

use super::stamp::Stamp;
use crate::replication::log_chain::Head;
use async_nats::jetstream::stream::Stream;

/// How far back from the joint a deposed leader's late writes are looked past.
const LOOK_BACK: u64 = 64;

/// The head of a copy restored from a snapshot whose tail starts at stream sequence
/// `from` (above 1), or `None` when the stream does not say (messages without stamps,
/// NATS not answering): the follower then takes the first message on trust.
pub async fn joint_head(stream: &Stream, from: u64) -> Option<Head> {
    let before = stamp_at(stream, from - 1).await?;
    let head = Head {
        seq: from - 1,
        term: before.term,
        chain: before.after,
    };
    let Some(next) = stamp_at(stream, from).await else {
        return Some(head);
    };
    if next.before == before.after || next.term <= before.term {
        // It continues, or the next is itself an older term's late write (skipped by
        // the follower for its term).
        return Some(head);
    }
    let oldest = from.saturating_sub(1 + LOOK_BACK).max(1);
    for seq in (oldest..from - 1).rev() {
        let Some(stamp) = stamp_at(stream, seq).await else {
            break;
        };
        if stamp.after == next.before {
            tracing::warn!(
                joint = from,
                head = seq,
                "the messages just before the snapshot's joint are a deposed leader's late writes; the copy continues from the message the newer term builds on"
            );
            return Some(Head {
                seq,
                term: stamp.term,
                chain: stamp.after,
            });
        }
    }
    Some(head)
}

/// The stamp of stream message `seq` as the stream leader holds it.
async fn stamp_at(stream: &Stream, seq: u64) -> Option<Stamp> {
    let message = stream.get_raw_message(seq).await.ok()?;
    Stamp::read(Some(&message.headers)).ok().flatten()
}
