//! A KV key as its bucket's stream leader holds it.
//!
//! The KV get of async-nats is a direct get, which any copy of the bucket answers, even
//! one that is behind the agreed copy or (nats-server 2.9, after a partition) holds a
//! write the others never took, and even while no leader could take a write. The
//! lease, the cluster's map and its node records are read here instead: a value read
//! is one the bucket agreed on, and a read that succeeds means a write could have too.

use async_nats::jetstream::stream::{
    InfoError, LastRawMessageError, LastRawMessageErrorKind, Stream,
};
use bytes::Bytes;
use futures_util::TryStreamExt;

/// What the agreed copy holds for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agreed {
    /// A value, at its revision.
    Value(u64, Bytes),
    /// A delete or purge marker: someone freed the key on purpose (a lease handed
    /// back).
    Deleted,
    /// No message at all: never set, or expired by the bucket's `max_age` (which a
    /// new stream leader may do at once for a key that could not be renewed while the
    /// bucket had no leader).
    Missing,
}

/// Key `key` of bucket `bucket` (whose stream is `stream`) as the bucket's stream
/// leader holds it.
pub async fn agreed_key(
    stream: &Stream,
    bucket: &str,
    key: &str,
) -> Result<Agreed, LastRawMessageError> {
    match stream
        .get_last_raw_message_by_subject(&format!("$KV.{bucket}.{key}"))
        .await
    {
        // A delete or purge marker (`KV-Operation`).
        Ok(message) if message.headers.get("KV-Operation").is_some() => Ok(Agreed::Deleted),
        Ok(message) => Ok(Agreed::Value(message.sequence, message.payload)),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(Agreed::Missing),
        Err(e) => Err(e),
    }
}

/// Key `key`'s revision and value, or `None` when it was never set, expired, or its
/// last operation is a delete or purge.
pub async fn agreed_entry(
    stream: &Stream,
    bucket: &str,
    key: &str,
) -> Result<Option<(u64, Bytes)>, LastRawMessageError> {
    Ok(match agreed_key(stream, bucket, key).await? {
        Agreed::Value(revision, value) => Some((revision, value)),
        Agreed::Deleted | Agreed::Missing => None,
    })
}

/// The keys of bucket `bucket` (whose stream is `stream`) that have a message, from
/// the stream leader's subject counts. Not the KV key listing, which makes a consumer:
/// a NATS server before 2.12 may place it on a server that is cut off
/// (nats-server#7165), and the listing then waits out a whole request timeout.
/// Deleted keys are listed too (their marker is a message): read each with
/// [`agreed_entry`].
pub async fn agreed_keys(stream: &Stream, bucket: &str) -> Result<Vec<String>, InfoError> {
    let prefix = format!("$KV.{bucket}.");
    let subjects: Vec<(String, usize)> = stream
        .info_with_subjects(format!("{prefix}>"))
        .await?
        .try_collect()
        .await?;
    let mut keys: Vec<String> = subjects
        .into_iter()
        .filter_map(|(subject, _)| subject.strip_prefix(&prefix).map(str::to_string))
        .collect();
    keys.sort();
    Ok(keys)
}
