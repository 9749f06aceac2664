//! Every error the id and ticket code can return, each named for what went wrong.
//!
//! They live together so that callers (the CLI, the server) can match on one type per
//! area and turn it into a clear message without string matching.

use std::path::PathBuf;

/// Why a [`crate::Layout`] was refused: checked once, up front, so generation never
/// has to re-check its own arithmetic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The three fields must fill the 63 bits below the sign bit exactly.
    #[error("time, shard and sequence bits must add up to 63 (the sign bit stays 0), got {time}+{shard}+{sequence}={sum}")]
    BitsDoNotSumTo63 {
        /// Time bits asked for.
        time: u8,
        /// Shard bits asked for.
        shard: u8,
        /// Sequence bits asked for.
        sequence: u8,
        /// Their sum.
        sum: u32,
    },
    /// A time field narrower than this wraps within weeks and would reissue ids.
    #[error("time needs at least {min} bits to be useful, got {got}")]
    TooFewTimeBits {
        /// Minimum accepted.
        min: u8,
        /// Bits asked for.
        got: u8,
    },
    /// Without sequence bits a generator could issue only one id per time unit.
    #[error("sequence needs at least 1 bit, got 0")]
    NoSequenceBits,
    /// The time unit is the tick of the id clock; zero would divide by zero.
    #[error("time unit must be at least 1 ms, got {0} ms")]
    ZeroTimeUnit(u64),
    /// An epoch in the future would make every id from now on negative time.
    #[error(
        "epoch {epoch_unix_ms} ms is in the future (now {now_unix_ms} ms); pick a past instant"
    )]
    EpochInFuture {
        /// The epoch asked for, in Unix ms.
        epoch_unix_ms: u64,
        /// The clock's reading when the layout was checked.
        now_unix_ms: u64,
    },
    /// A layout name or `T/S/Q[@Nms]` string that could not be read.
    #[error("unknown layout {0:?}: use instagram, snowflake, sonyflake, sonyflake-legacy or TIME/SHARD/SEQUENCE bits like 41/13/9 (optionally @10ms)")]
    UnknownLayout(String),
    /// An epoch string that is not an RFC 3339 instant.
    #[error("epoch {0:?} is not an RFC 3339 time such as 2024-01-01T00:00:00Z")]
    BadEpoch(String),
}

/// Why an id could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The shard does not fit the layout's shard bits.
    #[error("shard {shard} is out of range: this layout has {shards} shards (0..={max})", max = shards - 1)]
    ShardOutOfRange {
        /// Shard asked for.
        shard: u64,
        /// Number of shards of the layout.
        shards: u64,
    },
    /// The wall clock reads earlier than the layout's epoch.
    #[error("the clock reads {now_unix_ms} ms, before the layout's epoch {epoch_unix_ms} ms")]
    ClockBeforeEpoch {
        /// Clock reading.
        now_unix_ms: u64,
        /// Layout epoch.
        epoch_unix_ms: u64,
    },
    /// The wall clock went back further than the generator may run ahead of it, and the
    /// policy is to refuse rather than wait. Retry once the clock has caught up.
    #[error("the clock is {behind_ms} ms behind the last issued id (more than the {max_lead_ms} ms the generator may run ahead); refusing until it catches up")]
    ClockMovedBackwards {
        /// How far behind the last issued time the clock reads.
        behind_ms: u64,
        /// The configured bound.
        max_lead_ms: u64,
    },
    /// Every time value of the layout has been used: the layout's lifetime is over.
    #[error("the layout's time bits are exhausted: no id can be issued after {last_unix_ms} ms")]
    TimeExhausted {
        /// Last instant the layout can represent.
        last_unix_ms: u64,
    },
    /// The durable time guard could not be written, so issuing further would risk a
    /// duplicate after a restart.
    #[error("time guard {path}: {source}")]
    Guard {
        /// The guard file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// Another generator holds the guard file (another process on the same data dir).
    #[error("time guard {0} is in use by another generator (is another shardkit process using this data directory?)")]
    GuardInUse(PathBuf),
    /// The guard file exists but does not hold a time guard.
    #[error("time guard {path} is unreadable: {reason}; restore it or move it away only if no ids were issued past the clock's current time")]
    GuardCorrupt {
        /// The guard file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
}

/// Why an id could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Ids are non-negative 63-bit numbers.
    #[error("id {0} has the sign bit set: shardkit ids are below 2^63")]
    SignBitSet(u64),
    /// Not a decimal number.
    #[error("{0:?} is not a decimal id")]
    NotANumber(String),
    /// A decimal number past 64 bits: no id can be that large.
    #[error("{0} is past 64 bits: shardkit ids are below 2^63 (9223372036854775808)")]
    PastSixtyFourBits(String),
}

/// Why text or a number is not a UUIDv7: each case names what is wrong, so a person
/// pasting a v4 UUID learns that, not just "invalid".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UuidError {
    /// Neither the 36-character hyphenated form nor 32 bare hex digits.
    #[error("{text:?} is not a UUID: it has {len} characters, a UUID has 36 (8-4-4-4-12 hex digits with hyphens) or 32 without hyphens")]
    WrongLength {
        /// The text given.
        text: String,
        /// Its length in characters.
        len: usize,
    },
    /// A character that is not a hex digit where one belongs.
    #[error("{text:?} is not a UUID: {character:?} at position {position} is not a hex digit")]
    BadCharacter {
        /// The text given.
        text: String,
        /// The offending character.
        character: char,
        /// Its byte position.
        position: usize,
    },
    /// 36 characters but without hyphens at 8, 13, 18 and 23.
    #[error(
        "{text:?} is not a UUID: its hyphens belong after the 8th, 12th, 16th and 20th hex digits"
    )]
    MisplacedHyphen {
        /// The text given.
        text: String,
    },
    /// A well-formed UUID of another version (a random v4, say).
    #[error("{uuid} is a version {version} UUID, not version 7: its time cannot be read")]
    NotVersion7 {
        /// The UUID, hyphenated.
        uuid: String,
        /// Its version nibble.
        version: u8,
    },
    /// A UUID whose variant bits are not RFC 9562's `10` (an NCS, Microsoft or
    /// reserved UUID).
    #[error("{uuid} has variant bits {variant:#04b}, not RFC 9562's 0b10")]
    WrongVariant {
        /// The UUID, hyphenated.
        uuid: String,
        /// Its top two variant bits.
        variant: u8,
    },
}

/// Why text is not a ULID (see the spec: 26 characters of Crockford's base32).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UlidError {
    /// A ULID is always 26 characters.
    #[error("{text:?} is not a ULID: it has {len} characters, a ULID has 26")]
    WrongLength {
        /// The text given.
        text: String,
        /// Its length in characters.
        len: usize,
    },
    /// A character outside Crockford's base32 alphabet, which leaves out I, L, O and U.
    #[error("{text:?} is not a ULID: {character:?} at position {position} is not a Crockford base32 digit (0-9, A-Z without I L O U)")]
    BadCharacter {
        /// The text given.
        text: String,
        /// The offending character.
        character: char,
        /// Its byte position.
        position: usize,
    },
    /// 26 base32 characters hold 130 bits; a ULID is 128, so the first is at most 7.
    #[error("{text:?} is past the largest ULID (7ZZZZZZZZZZZZZZZZZZZZZZZZZ): its first character must be 0-7")]
    Overflow {
        /// The text given.
        text: String,
    },
}

/// Why a base62 string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Base62Error {
    /// The empty string encodes nothing.
    #[error("empty base62 string")]
    Empty,
    /// A character outside `0-9A-Za-z`.
    #[error("{character:?} at position {position} is not a base62 digit (0-9, A-Z, a-z)")]
    BadDigit {
        /// The offending character.
        character: char,
        /// Its byte position.
        position: usize,
    },
    /// The value does not fit 64 bits.
    #[error("base62 string {0:?} is larger than 2^64-1")]
    Overflow(String),
}

/// Why a ticket could not be handed out.
#[derive(Debug, thiserror::Error)]
pub enum TicketError {
    /// Sequence names become keys and file-system-safe identifiers.
    #[error(
        "ticket sequence name {0:?} is invalid: use 1 to 64 characters of A-Z a-z 0-9 _ - . :"
    )]
    BadName(String),
    /// `offset` must be in `1..=increment` so that servers with distinct offsets never collide.
    #[error("increment {increment} and offset {offset} are invalid: need increment >= 1 and 1 <= offset <= increment")]
    BadSpec {
        /// Increment asked for.
        increment: u64,
        /// Offset asked for.
        offset: u64,
    },
    /// The sequence exists with another increment/offset; changing them would collide.
    #[error("ticket sequence {name:?} exists with increment {stored_increment} offset {stored_offset}, not {increment}/{offset}; changing them could reissue numbers")]
    SpecMismatch {
        /// Sequence name.
        name: String,
        /// Increment on disk.
        stored_increment: u64,
        /// Offset on disk.
        stored_offset: u64,
        /// Increment asked for.
        increment: u64,
        /// Offset asked for.
        offset: u64,
    },
    /// A request for zero tickets, or more than one call may take.
    #[error("ticket count must be between 1 and {max}, got {got}")]
    BadCount {
        /// Count asked for.
        got: u64,
        /// The largest count accepted.
        max: u64,
    },
    /// The sequence has run past 2^63-1.
    #[error("ticket sequence {0:?} is exhausted (past 2^63-1)")]
    Exhausted(String),
    /// Another process has the embedded store open (a server or another command on the
    /// same data directory).
    #[error("ticket store {0}: already open in another process (is a shardkit server using this data directory?)")]
    StoreInUse(PathBuf),
    /// The embedded store failed.
    #[error("ticket store {path}: {message}")]
    Store {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The character at byte `position` of `text`, for an error that names a bad one (the
/// replacement character when `position` is not on a character boundary).
pub(crate) fn character_at(text: &str, position: usize) -> char {
    text.get(position..)
        .and_then(|rest| rest.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}
