//! A KV key as its bucket's stream leader holds it.
//!
//! The KV get of async-nats is a direct get, which any copy of the bucket answers, even
//! one that is behind the agreed copy or (nats-server 2.9, after a partition) holds a
//! write the others never took, and even while no leader could take a write. The
//! lease, the cluster's map and its node records are read here instead: a value read
//! is one the bucket agreed on, and a read that succeeds means a write could have too.

use async_nats::jetstream::stream::{LastRawMessageError, LastRawMessageErrorKind, Stream};
use bytes::Bytes;

/// Key `key` of bucket `bucket` (whose stream is `stream`): its revision and value, or
/// `None` when it was never set or its last operation is a delete or purge.
pub async fn agreed_entry(
    stream: &Stream,
    bucket: &str,
    key: &str,
) -> Result<Option<(u64, Bytes)>, LastRawMessageError> {
    match stream
        .get_last_raw_message_by_subject(&format!("$KV.{bucket}.{key}"))
        .await
    {
        // A delete or purge marker (`KV-Operation`).
        Ok(message) if message.headers.get("KV-Operation").is_some() => Ok(None),
        Ok(message) => Ok(Some((message.sequence, message.payload))),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(e),
    }
}
