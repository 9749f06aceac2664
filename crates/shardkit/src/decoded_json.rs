//! The JSON shape of a decoded id, shared by `shardkit id decode` and
//! `GET /api/ids/{id}`: one contract, one definition. Which kind of id a text is comes
//! from its length: 26 characters are a ULID, 32 or 36 a UUID, anything else is read
//! as the layout's decimal id.

use serde::Serialize;
use shardkit_ids::{DecodedId, Layout, Ulid, Uuid7, ULID_LEN};
use std::time::{Duration, UNIX_EPOCH};

/// `{"id":"…","format":"snowflake","layout":"instagram","time":"<RFC 3339>","unix_ms":…,"shard":…,"sequence":…}`.
/// The id is a string because JavaScript loses integer precision past 2^53.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecodedIdJson {
    /// The id, in decimal, as a string.
    pub id: String,
    /// Always `snowflake`: an id of the configured layout.
    pub format: String,
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
        Some(Self {
            id: decoded.id.to_string(),
            format: "snowflake".into(),
            layout: layout.to_string(),
            time: rfc3339(decoded.unix_ms)?,
            unix_ms: decoded.unix_ms,
            shard: decoded.parts.shard,
            sequence: decoded.parts.sequence,
        })
    }
}

/// `{"id":"0190…","format":"uuid7","time":"<RFC 3339>","unix_ms":…,"counter":…}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecodedUuid7Json {
    /// The UUID, hyphenated lowercase.
    pub id: String,
    /// Always `uuid7`.
    pub format: String,
    /// Its millisecond, RFC 3339, UTC.
    pub time: String,
    /// The same instant in Unix milliseconds.
    pub unix_ms: u64,
    /// The 12-bit `rand_a` field: shardkit's per-millisecond counter.
    pub counter: u16,
}

/// `{"id":"01J…","format":"ulid","time":"<RFC 3339>","unix_ms":…,"random":"<20 hex digits>"}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecodedUlidJson {
    /// The ULID, uppercase Crockford base32.
    pub id: String,
    /// Always `ulid`.
    pub format: String,
    /// Its millisecond, RFC 3339, UTC.
    pub time: String,
    /// The same instant in Unix milliseconds.
    pub unix_ms: u64,
    /// The 80-bit random part, in hex (past what a JSON number holds exactly).
    pub random: String,
}

/// A decoded id of any of the three kinds, as its own JSON object.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum DecodedAnyJson {
    /// An id of the configured layout.
    Snowflake(DecodedIdJson),
    /// A version 7 UUID.
    Uuid7(DecodedUuid7Json),
    /// A ULID.
    Ulid(DecodedUlidJson),
}

impl DecodedAnyJson {
    /// The id's Unix milliseconds, whatever its kind.
    pub fn unix_ms(&self) -> u64 {
        match self {
            DecodedAnyJson::Snowflake(j) => j.unix_ms,
            DecodedAnyJson::Uuid7(j) => j.unix_ms,
            DecodedAnyJson::Ulid(j) => j.unix_ms,
        }
    }
}

/// Decodes a UUIDv7 (32 or 36 characters) or a ULID (26); `None` for any other length,
/// which the caller reads as the layout's decimal id with its own checks.
pub fn decode_time_ordered(text: &str) -> Option<Result<DecodedAnyJson, String>> {
    let shown = |unix_ms| {
        rfc3339(unix_ms).ok_or_else(|| format!("id {text} has a time that cannot be shown"))
    };
    match text.len() {
        32 | 36 => Some(
            text.parse::<Uuid7>()
                .map_err(|e| e.to_string())
                .and_then(|uuid| {
                    Ok(DecodedAnyJson::Uuid7(DecodedUuid7Json {
                        id: uuid.to_string(),
                        format: "uuid7".into(),
                        time: shown(uuid.unix_ms())?,
                        unix_ms: uuid.unix_ms(),
                        counter: uuid.counter(),
                    }))
                }),
        ),
        ULID_LEN => Some(
            text.parse::<Ulid>()
                .map_err(|e| e.to_string())
                .and_then(|ulid| {
                    Ok(DecodedAnyJson::Ulid(DecodedUlidJson {
                        id: ulid.to_string(),
                        format: "ulid".into(),
                        time: shown(ulid.unix_ms())?,
                        unix_ms: ulid.unix_ms(),
                        random: format!("{:020x}", ulid.random()),
                    }))
                }),
        ),
        _ => None,
    }
}

/// Unix milliseconds as RFC 3339 with milliseconds, UTC; `None` past the system's
/// time range or humantime's year 9999.
fn rfc3339(unix_ms: u64) -> Option<String> {
    let at = UNIX_EPOCH.checked_add(Duration::from_millis(unix_ms))?;
    // humantime panics past year 9999; a 48-bit millisecond reaches year 10889.
    (unix_ms < 253_402_300_800_000).then(|| humantime::format_rfc3339_millis(at).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_decodes_by_its_length() {
        let uuid = decode_time_ordered("017f22e2-79b0-7cc3-98c4-dc0c0c07398f")
            .unwrap()
            .unwrap();
        let json = serde_json::to_value(&uuid).unwrap();
        assert_eq!(json["format"], "uuid7");
        assert_eq!(json["unix_ms"], 1_645_557_742_000u64);
        assert_eq!(json["time"], "2022-02-22T19:22:22.000Z");
        assert_eq!(json["counter"], 0xCC3);
        let ulid = decode_time_ordered("01ARZ3NDEKTSV4RRFFQ69G5FAV")
            .unwrap()
            .unwrap();
        let json = serde_json::to_value(&ulid).unwrap();
        assert_eq!(json["format"], "ulid");
        assert_eq!(json["unix_ms"], 1_469_922_850_259u64);
        assert_eq!(json["random"].as_str().unwrap().len(), 20);
        assert!(decode_time_ordered("12345").is_none());
    }

    #[test]
    fn bad_uuids_and_ulids_say_what_is_wrong() {
        let v4 = decode_time_ordered("550e8400-e29b-41d4-a716-446655440000").unwrap();
        assert!(v4.unwrap_err().contains("version 4"));
        let past = decode_time_ordered("8ZZZZZZZZZZZZZZZZZZZZZZZZZ").unwrap();
        assert!(past.is_err());
        // The latest 48-bit time is past year 9999: an error, not a panic.
        let far = decode_time_ordered("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").unwrap();
        assert!(far.unwrap_err().contains("cannot be shown"));
    }
}
