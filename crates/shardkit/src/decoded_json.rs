//! The JSON shape of a decoded id, shared by `shardkit id decode` and
//! `GET /api/ids/{id}`: one contract, one definition.

use serde::Serialize;
use shardkit_ids::{DecodedId, Layout};
use std::time::{Duration, UNIX_EPOCH};

/// `{"id":"…","layout":"instagram","time":"<RFC 3339>","unix_ms":…,"shard":…,"sequence":…}`.
/// The id is a string because JavaScript loses integer precision past 2^53.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecodedIdJson {
    /// The id, in decimal, as a string.
    pub id: String,
    /// The layout's name (`instagram`, or `41/13/9@1ms` for a custom one).
    pub layout: String,
    /// The start of the id's time unit, RFC 3339 with milliseconds, UTC.
    pub time: String,
    /// The same instant in Unix milliseconds.
    pub unix_ms: u64,
    /// The shard (worker) field.
    pub shard: u64,
    /// The sequence field.
    pub sequence: u64,
}

impl DecodedIdJson {
    /// Builds the JSON view of a decoded id. `None` if the time cannot be shown (past
    /// the range of the system's time type), which callers report as bad input.
    pub fn new(decoded: &DecodedId, layout: &Layout) -> Option<Self> {
        let at = UNIX_EPOCH.checked_add(Duration::from_millis(decoded.unix_ms))?;
        Some(Self {
            id: decoded.id.to_string(),
            layout: layout.to_string(),
            time: humantime::format_rfc3339_millis(at).to_string(),
            unix_ms: decoded.unix_ms,
            shard: decoded.parts.shard,
            sequence: decoded.parts.sequence,
        })
    }
}
