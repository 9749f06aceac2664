//! The lsn ↔ stream sequence mapping.
//!
//! Every message of the counters' stream carries one batch of records (or a run of whole
//! frames of one batch, when a batch is bigger than one message) and the header
//! `Shardkit-Lsn: <first>-<end>` (end exclusive) of that batch; a leader's marker carries
//! `<n>-<n>`, n being the next lsn when it took over. End lsns never go down along the
//! stream, so "the first message whose end is past lsn X" is found by a binary search
//! over the stream with direct gets: that message and everything after it is what a
//! snapshot at X still needs; everything before it is wholly inside the snapshot.

use super::names::LSN_HEADER;
use async_nats::jetstream::stream::Stream;

/// The `<first>-<end>` of a message's lsn header, if it has a readable one.
pub fn lsn_range(headers: &async_nats::HeaderMap) -> Option<(u64, u64)> {
    let value = headers.get(LSN_HEADER)?;
    let (first, end) = value.as_str().split_once('-')?;
    Some((first.parse().ok()?, end.parse().ok()?))
}

/// The end lsn of message `seq`, looking forward past messages without the header
/// (markers of older builds) up to `last`; `None` when none up to `last` has one.
async fn end_lsn_from(stream: &Stream, seq: u64, last: u64) -> anyhow::Result<Option<(u64, u64)>> {
    let mut at = seq;
    while at <= last {
        match stream.get_raw_message(at).await {
            Ok(message) => {
                if let Some((_, end)) = lsn_range(&message.headers) {
                    return Ok(Some((at, end)));
                }
            }
            Err(e)
                if e.kind()
                    == async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound =>
            {
                // Purged or deleted under us: the next one tells.
            }
            Err(e) => anyhow::bail!("cannot read stream message {at}: {e}"),
        }
        at += 1;
    }
    Ok(None)
}

/// The first stream sequence a node restored from a snapshot at lsn `x` must apply: the
/// first message whose records reach `x` or beyond (the stream's last sequence + 1 when
/// every message is wholly below `x`).
pub async fn first_seq_reaching(stream: &Stream, x: u64) -> anyhow::Result<u64> {
    let state = stream.get_info().await?.state;
    let (mut lo, mut hi) = (state.first_sequence.max(1), state.last_sequence + 1);
    // Invariant: every message below `lo` ends at or before `x`; `hi` is a message that
    // reaches past `x` (or the end of the stream).
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match end_lsn_from(stream, mid, hi - 1).await? {
            Some((_, end)) if end > x => hi = mid,
            Some((at, _)) => lo = at + 1,
            None => hi = mid,
        }
    }
    Ok(lo)
}
