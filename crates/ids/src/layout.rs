//! Bit layouts of a 64-bit id: how many bits of time, shard and sequence, the time
//! unit and the epoch. Validated once, up front, so the generator's hot path never
//! checks its own arithmetic again.

use crate::error::{DecodeError, LayoutError};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// 2024-01-01T00:00:00Z in Unix milliseconds: the default epoch of every preset but
/// Sonyflake, and of custom layouts.
pub const DEFAULT_EPOCH_UNIX_MS: u64 = 1_704_067_200_000;

/// 2014-09-01T00:00:00Z in Unix milliseconds: Sonyflake's own start time, so that ids
/// made by Sony's library decode to the instant they were made.
pub const SONYFLAKE_EPOCH_UNIX_MS: u64 = 1_409_529_600_000;

/// The name under which earlier releases offered 39 bits of 10 ms units, 8 bits of
/// shard and 16 bits of sequence as `sonyflake`; a data directory set up with that
/// preset keeps its ids' meaning by naming it this way.
pub const SONYFLAKE_LEGACY_NAME: &str = "sonyflake-legacy";

/// The fewest time bits a layout may have: 2^32 ms is 49 days, anything shorter wraps
/// before an operator would notice.
pub const MIN_TIME_BITS: u8 = 32;

/// Which family a layout belongs to; only used for its name in output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayoutKind {
    /// Instagram: ms since the epoch, 13 bits of logical shard, 10 bits of sequence.
    Instagram,
    /// Twitter Snowflake: 41 bits of ms, 10 bits of worker, 12 bits of sequence.
    Snowflake,
    /// Sony's Sonyflake: 39 bits of 10 ms units since 2014-09-01, an 8-bit sequence,
    /// then a 16-bit machine id (the shard) in the low bits.
    Sonyflake,
    /// What earlier releases called `sonyflake`: 39 bits of 10 ms units since the
    /// default epoch, 8 bits of shard, 16 bits of sequence, in the usual order. Named
    /// [`SONYFLAKE_LEGACY_NAME`].
    SonyflakeLegacy,
    /// Any other split of the 63 bits.
    Custom,
}

/// Where the shard and the sequence sit below the time field. Time is always on top,
/// so ids sort by time whatever the order below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOrder {
    /// `time | shard | sequence`: Instagram, Snowflake and custom layouts.
    ShardThenSequence,
    /// `time | sequence | shard`: Sonyflake, whose machine id is the low 16 bits.
    SequenceThenShard,
}

/// How an id's 63 usable bits are split, from the top: time since the epoch in
/// `unit_ms` units, then the shard (worker) and a per-unit sequence in the layout's
/// [`FieldOrder`].
///
/// A `Layout` is only built through [`Layout::custom`] or a preset, so its fields
/// always satisfy the invariants: the bits sum to 63, the sign bit is 0, time has at
/// least [`MIN_TIME_BITS`] bits, the unit is at least 1 ms and the epoch is not in the
/// future (checked against the wall clock when the epoch is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    kind: LayoutKind,
    time_bits: u8,
    shard_bits: u8,
    sequence_bits: u8,
    unit_ms: u64,
    epoch_unix_ms: u64,
    order: FieldOrder,
    // The shifts follow from the widths and the order; kept so that packing an id on
    // the hot path is three shifts and two ors whatever the order, with no branch.
    shard_shift: u8,
    sequence_shift: u8,
}

/// The three fields of an id, in the layout's own units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdParts {
    /// Time units since the epoch.
    pub time_units: u64,
    /// Logical shard or worker number.
    pub shard: u64,
    /// Sequence within the time unit.
    pub sequence: u64,
}

/// An id taken apart: what `shardkit id decode` prints and `GET /api/ids/{id}` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedId {
    /// The id itself.
    pub id: u64,
    /// Its three fields.
    pub parts: IdParts,
    /// The start of its time unit, in Unix milliseconds.
    pub unix_ms: u64,
}

impl Layout {
    /// Instagram's layout: ms since the epoch, 13 bits of logical shard (8192),
    /// 10 bits of sequence (1024 ids per ms per shard).
    ///
    /// Instagram's post says "41 bits of time", but 41 + 13 + 10 is 64: its top time
    /// bit is the sign bit of a PostgreSQL `bigint`. shardkit keeps the sign bit 0 and
    /// gives time the 40 bits below it, so ids are bit for bit those of Instagram's
    /// `next_id()` (`ms << 23 | shard << 10 | seq`) for 2^40 ms (34.8 years) after the
    /// epoch, after which Instagram's would turn negative and these stop with
    /// [`crate::GenerateError::TimeExhausted`].
    pub const fn instagram() -> Self {
        Self::preset(LayoutKind::Instagram, 40, 13, 10, 1)
    }

    /// Twitter's Snowflake: 41 bits of ms, 10 bits of worker, 12 bits of sequence.
    pub const fn snowflake() -> Self {
        Self::preset(LayoutKind::Snowflake, 41, 10, 12, 1)
    }

    /// Sony's Sonyflake (its v1 layout): 39 bits of 10 ms units since
    /// 2014-09-01T00:00:00Z (174 years), an 8-bit sequence (256 ids per 10 ms per
    /// machine), then a 16-bit machine id, our shard, in the low bits:
    /// `time << 24 | sequence << 16 | machine`. Ids made by Sony's library decode to
    /// their time, machine and sequence.
    pub const fn sonyflake() -> Self {
        Self::preset(LayoutKind::Sonyflake, 39, 16, 8, 10)
            .ordered(FieldOrder::SequenceThenShard)
            .epoch(SONYFLAKE_EPOCH_UNIX_MS)
    }

    /// What earlier releases called `sonyflake` (now named [`SONYFLAKE_LEGACY_NAME`]):
    /// 39 bits of 10 ms units since the default epoch, 8 bits of shard, 16 bits of
    /// sequence, in the usual order. Kept so that ids already issued under that name
    /// still decode to the right parts.
    pub const fn sonyflake_legacy() -> Self {
        Self::preset(LayoutKind::SonyflakeLegacy, 39, 8, 16, 10)
    }

    /// 48 bits of Unix milliseconds and `sequence_bits` of per-ms counter: the clock
    /// of the UUIDv7 and ULID generators, which share the snowflake generators' lead,
    /// backward-step and time-guard rules through it. Never shown to users.
    pub(crate) const fn unix_ms_clock(sequence_bits: u8) -> Self {
        Self::preset(LayoutKind::Custom, 48, 15 - sequence_bits, sequence_bits, 1).epoch(0)
    }

    const fn preset(
        kind: LayoutKind,
        time_bits: u8,
        shard_bits: u8,
        sequence_bits: u8,
        unit_ms: u64,
    ) -> Self {
        Self {
            kind,
            time_bits,
            shard_bits,
            sequence_bits,
            unit_ms,
            epoch_unix_ms: DEFAULT_EPOCH_UNIX_MS,
            order: FieldOrder::ShardThenSequence,
            shard_shift: sequence_bits,
            sequence_shift: 0,
        }
    }

    const fn ordered(mut self, order: FieldOrder) -> Self {
        self.order = order;
        (self.shard_shift, self.sequence_shift) = match order {
            FieldOrder::ShardThenSequence => (self.sequence_bits, 0),
            FieldOrder::SequenceThenShard => (0, self.shard_bits),
        };
        self
    }

    const fn epoch(mut self, epoch_unix_ms: u64) -> Self {
        self.epoch_unix_ms = epoch_unix_ms;
        self
    }

    /// Any split of the 63 bits, checked: the bits must sum to 63, time needs at least
    /// [`MIN_TIME_BITS`], the sequence at least one bit, the unit at least 1 ms. The
    /// epoch starts at [`DEFAULT_EPOCH_UNIX_MS`]; change it with [`Layout::with_epoch_unix_ms`].
    pub fn custom(
        time_bits: u8,
        shard_bits: u8,
        sequence_bits: u8,
        unit_ms: u64,
    ) -> Result<Self, LayoutError> {
        let sum = u32::from(time_bits) + u32::from(shard_bits) + u32::from(sequence_bits);
        if sum != 63 {
            return Err(LayoutError::BitsDoNotSumTo63 {
                time: time_bits,
                shard: shard_bits,
                sequence: sequence_bits,
                sum,
            });
        }
        if time_bits < MIN_TIME_BITS {
            return Err(LayoutError::TooFewTimeBits {
                min: MIN_TIME_BITS,
                got: time_bits,
            });
        }
        if sequence_bits == 0 {
            return Err(LayoutError::NoSequenceBits);
        }
        if unit_ms == 0 {
            return Err(LayoutError::ZeroTimeUnit(unit_ms));
        }
        Ok(Self::preset(
            LayoutKind::Custom,
            time_bits,
            shard_bits,
            sequence_bits,
            unit_ms,
        ))
    }

    /// The same layout with another epoch, refused if it lies in the future of the
    /// wall clock (every id would then have negative time).
    pub fn with_epoch_unix_ms(self, epoch_unix_ms: u64) -> Result<Self, LayoutError> {
        let now_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.with_epoch_checked_against(epoch_unix_ms, now_unix_ms)
    }

    /// [`Layout::with_epoch_unix_ms`] against a given "now", for tests with their own clock.
    pub fn with_epoch_checked_against(
        mut self,
        epoch_unix_ms: u64,
        now_unix_ms: u64,
    ) -> Result<Self, LayoutError> {
        if epoch_unix_ms > now_unix_ms {
            return Err(LayoutError::EpochInFuture {
                epoch_unix_ms,
                now_unix_ms,
            });
        }
        self.epoch_unix_ms = epoch_unix_ms;
        Ok(self)
    }

    /// The same layout with its epoch given as RFC 3339 (`2024-01-01T00:00:00Z`).
    pub fn with_epoch_rfc3339(self, epoch: &str) -> Result<Self, LayoutError> {
        let at = humantime::parse_rfc3339_weak(epoch)
            .map_err(|_| LayoutError::BadEpoch(epoch.to_string()))?;
        let ms = at
            .duration_since(UNIX_EPOCH)
            .map_err(|_| LayoutError::BadEpoch(epoch.to_string()))?
            .as_millis();
        self.with_epoch_unix_ms(
            u64::try_from(ms).map_err(|_| LayoutError::BadEpoch(epoch.to_string()))?,
        )
    }

    /// Which family this layout is.
    pub const fn kind(&self) -> LayoutKind {
        self.kind
    }
    /// Bits of time.
    pub const fn time_bits(&self) -> u8 {
        self.time_bits
    }
    /// Bits of shard.
    pub const fn shard_bits(&self) -> u8 {
        self.shard_bits
    }
    /// Bits of sequence.
    pub const fn sequence_bits(&self) -> u8 {
        self.sequence_bits
    }
    /// Whether the shard or the sequence comes first below the time.
    pub const fn order(&self) -> FieldOrder {
        self.order
    }
    /// Length of one time unit in ms.
    pub const fn unit_ms(&self) -> u64 {
        self.unit_ms
    }
    /// The epoch, in Unix ms.
    pub const fn epoch_unix_ms(&self) -> u64 {
        self.epoch_unix_ms
    }
    /// Number of shards (2^shard_bits).
    pub const fn shards(&self) -> u64 {
        1 << self.shard_bits
    }
    /// Largest sequence number in one time unit.
    pub const fn max_sequence(&self) -> u64 {
        (1 << self.sequence_bits) - 1
    }
    /// Largest time value, in units since the epoch.
    pub const fn max_time_units(&self) -> u64 {
        (1 << self.time_bits) - 1
    }
    /// The most ids one shard can issue per second: the layout's limit.
    pub const fn ids_per_second_per_shard(&self) -> u64 {
        (self.max_sequence() + 1) * 1000 / self.unit_ms
    }

    /// Time units since the epoch for a Unix-ms instant (`None` before the epoch).
    #[inline]
    pub const fn units_since_epoch(&self, unix_ms: u64) -> Option<u64> {
        if unix_ms < self.epoch_unix_ms {
            None
        } else if self.unit_ms == 1 {
            // Every id reads the clock through here, and a 64-bit division costs more
            // than the rest of an id; most layouts count single milliseconds.
            Some(unix_ms - self.epoch_unix_ms)
        } else {
            Some((unix_ms - self.epoch_unix_ms) / self.unit_ms)
        }
    }

    /// The Unix-ms start of a time unit.
    #[inline]
    pub const fn unix_ms_of(&self, time_units: u64) -> u64 {
        self.epoch_unix_ms
            .saturating_add(time_units.saturating_mul(self.unit_ms))
    }

    /// Builds an id from its fields; `None` if a field does not fit its bits.
    /// The generator builds ids itself; this is for tests, tools and decoding round trips.
    pub const fn compose(&self, parts: IdParts) -> Option<u64> {
        if parts.time_units > self.max_time_units()
            || parts.shard >= self.shards()
            || parts.sequence > self.max_sequence()
        {
            return None;
        }
        Some(self.pack(parts.time_units, parts.shard, parts.sequence))
    }

    /// Packs fields already known to fit.
    #[inline]
    pub(crate) const fn pack(&self, time_units: u64, shard: u64, sequence: u64) -> u64 {
        (time_units << (self.shard_bits + self.sequence_bits))
            | (shard << self.shard_shift)
            | (sequence << self.sequence_shift)
    }

    /// How far apart the ids of consecutive sequence numbers are (with time and shard
    /// alike): a run of ids is then `first + i * step`, which batch fills compute
    /// without re-packing each id.
    #[inline]
    pub(crate) const fn sequence_step(&self) -> u64 {
        1 << self.sequence_shift
    }

    /// Takes an id apart. Any id below 2^63 decodes; whether its time is plausible
    /// (not in the future) is the caller's judgment.
    pub const fn decode(&self, id: u64) -> Result<DecodedId, DecodeError> {
        if id >> 63 != 0 {
            return Err(DecodeError::SignBitSet(id));
        }
        let sequence = (id >> self.sequence_shift) & self.max_sequence();
        let shard = (id >> self.shard_shift) & (self.shards() - 1);
        let time_units = id >> (self.shard_bits + self.sequence_bits);
        Ok(DecodedId {
            id,
            parts: IdParts {
                time_units,
                shard,
                sequence,
            },
            unix_ms: self.unix_ms_of(time_units),
        })
    }

    /// Decodes a decimal id as typed by a person or sent in JSON.
    pub fn decode_str(&self, text: &str) -> Result<DecodedId, DecodeError> {
        let id: u64 = text.trim().parse().map_err(|e: std::num::ParseIntError| {
            if *e.kind() == std::num::IntErrorKind::PosOverflow {
                DecodeError::PastSixtyFourBits(text.trim().to_string())
            } else {
                DecodeError::NotANumber(text.to_string())
            }
        })?;
        self.decode(id)
    }

    /// The time unit as a [`Duration`].
    pub const fn unit(&self) -> Duration {
        Duration::from_millis(self.unit_ms)
    }

    /// The layout a preset name meant in earlier releases, when that differs from what
    /// it means now: `sonyflake` meant [`Layout::sonyflake_legacy`]. A server whose data
    /// directory was set up under the old meaning tells its operator so, once, and
    /// points at [`SONYFLAKE_LEGACY_NAME`]; ids issued before keep decoding with that.
    pub fn former_meaning(name: &str) -> Option<Layout> {
        match name.trim().to_ascii_lowercase().as_str() {
            "sonyflake" => Some(Self::sonyflake_legacy()),
            _ => None,
        }
    }
}

impl fmt::Display for Layout {
    /// Preset names as in the CLI (`instagram`), custom layouts as `41/13/9@1ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            LayoutKind::Instagram => f.write_str("instagram"),
            LayoutKind::Snowflake => f.write_str("snowflake"),
            LayoutKind::Sonyflake => f.write_str("sonyflake"),
            LayoutKind::SonyflakeLegacy => f.write_str(SONYFLAKE_LEGACY_NAME),
            LayoutKind::Custom => write!(
                f,
                "{}/{}/{}@{}ms",
                self.time_bits, self.shard_bits, self.sequence_bits, self.unit_ms
            ),
        }
    }
}

impl FromStr for Layout {
    type Err = LayoutError;

    /// Reads `instagram`, `snowflake`, `sonyflake`, `sonyflake-legacy` or
    /// `TIME/SHARD/SEQUENCE[@Nms]`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || LayoutError::UnknownLayout(text.to_string());
        match text.trim().to_ascii_lowercase().as_str() {
            "instagram" => return Ok(Self::instagram()),
            "snowflake" | "twitter" => return Ok(Self::snowflake()),
            "sonyflake" => return Ok(Self::sonyflake()),
            SONYFLAKE_LEGACY_NAME => return Ok(Self::sonyflake_legacy()),
            _ => {}
        }
        let (bits, unit) = match text.trim().split_once('@') {
            Some((bits, unit)) => (bits, Some(unit)),
            None => (text.trim(), None),
        };
        let fields: Vec<u8> = bits
            .split('/')
            .map(|b| b.trim().parse::<u8>())
            .collect::<Result<_, _>>()
            .map_err(|_| unknown())?;
        let [time, shard, sequence] = fields[..] else {
            return Err(unknown());
        };
        let unit_ms = match unit {
            None => 1,
            Some(u) => u
                .trim()
                .trim_end_matches("ms")
                .trim()
                .parse::<u64>()
                .map_err(|_| unknown())?,
        };
        Self::custom(time, shard, sequence, unit_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_documented_widths_and_limits() {
        assert_eq!(Layout::instagram().ids_per_second_per_shard(), 1_024_000);
        assert_eq!(Layout::snowflake().ids_per_second_per_shard(), 4_096_000);
        assert_eq!(Layout::sonyflake().ids_per_second_per_shard(), 25_600);
        assert_eq!(Layout::sonyflake().shards(), 65_536);
        assert_eq!(
            Layout::sonyflake_legacy().ids_per_second_per_shard(),
            6_553_600
        );
        assert_eq!(Layout::instagram().shards(), 8192);
        for l in [
            Layout::instagram(),
            Layout::snowflake(),
            Layout::sonyflake(),
            Layout::sonyflake_legacy(),
        ] {
            assert_eq!(
                u32::from(l.time_bits() + l.shard_bits() + l.sequence_bits()),
                63
            );
        }
    }

    #[test]
    fn bad_layouts_get_named_errors() {
        assert!(matches!(
            Layout::custom(41, 13, 11, 1),
            Err(LayoutError::BitsDoNotSumTo63 { sum: 65, .. })
        ));
        assert!(matches!(
            Layout::custom(20, 33, 10, 1),
            Err(LayoutError::TooFewTimeBits { .. })
        ));
        assert_eq!(
            Layout::custom(50, 13, 0, 1),
            Err(LayoutError::NoSequenceBits)
        );
        assert_eq!(
            Layout::custom(41, 12, 10, 0),
            Err(LayoutError::ZeroTimeUnit(0))
        );
        assert!(matches!(
            Layout::instagram().with_epoch_checked_against(2_000, 1_000),
            Err(LayoutError::EpochInFuture { .. })
        ));
        assert!(matches!(
            "instagrm".parse::<Layout>(),
            Err(LayoutError::UnknownLayout(_))
        ));
        assert!(matches!(
            Layout::instagram().with_epoch_rfc3339("yesterday"),
            Err(LayoutError::BadEpoch(_))
        ));
    }

    #[test]
    fn layouts_parse_and_print() {
        assert_eq!("Instagram".parse::<Layout>().unwrap(), Layout::instagram());
        let custom: Layout = "40/12/11@10ms".parse().unwrap();
        assert_eq!(
            (
                custom.time_bits(),
                custom.shard_bits(),
                custom.sequence_bits(),
                custom.unit_ms()
            ),
            (40, 12, 11, 10)
        );
        assert_eq!(custom.to_string(), "40/12/11@10ms");
        assert_eq!(custom.to_string().parse::<Layout>().unwrap(), custom);
    }

    #[test]
    fn decode_refuses_the_sign_bit_and_reads_known_ids() {
        let l = Layout::instagram();
        assert_eq!(l.decode(1 << 63), Err(DecodeError::SignBitSet(1 << 63)));
        let id = l
            .compose(IdParts {
                time_units: 1000,
                shard: 5,
                sequence: 7,
            })
            .unwrap();
        assert_eq!(id, (1000 << 23) | (5 << 10) | 7);
        let d = l.decode(id).unwrap();
        assert_eq!(d.unix_ms, DEFAULT_EPOCH_UNIX_MS + 1000);
        assert_eq!(
            l.compose(IdParts {
                time_units: 0,
                shard: 8192,
                sequence: 0
            }),
            None
        );
        assert!(matches!(
            l.decode_str("12x"),
            Err(DecodeError::NotANumber(_))
        ));
        assert_eq!(
            l.decode_str("99999999999999999999"),
            Err(DecodeError::PastSixtyFourBits(
                "99999999999999999999".into()
            ))
        );
    }

    /// Sony's layout, built by hand from its documentation: 39 bits of 10 ms units
    /// since 2014-09-01, then 8 bits of sequence, then 16 bits of machine id.
    fn sony_id(time_units: u64, sequence: u64, machine: u64) -> u64 {
        (time_units << 24) | (sequence << 16) | machine
    }

    #[test]
    fn a_sonyflake_id_decodes_to_its_time_machine_and_sequence() {
        let l = Layout::sonyflake();
        assert_eq!(l.epoch_unix_ms(), SONYFLAKE_EPOCH_UNIX_MS);
        assert_eq!(l.order(), FieldOrder::SequenceThenShard);
        // 2024-01-01T00:00:00Z is 294,537,600 s after Sonyflake's epoch.
        let units = 29_453_760_000;
        let id = sony_id(units, 0xAB, 0x1234);
        let d = l.decode(id).unwrap();
        assert_eq!(
            d.parts,
            IdParts {
                time_units: units,
                shard: 0x1234,
                sequence: 0xAB
            }
        );
        assert_eq!(d.unix_ms, 1_704_067_200_000);
        assert_eq!(l.compose(d.parts), Some(id));
        // The largest machine id and sequence stay in their fields.
        let d = l.decode(sony_id(1, 255, 65_535)).unwrap();
        assert_eq!((d.parts.shard, d.parts.sequence), (65_535, 255));
        assert_eq!(d.unix_ms, SONYFLAKE_EPOCH_UNIX_MS + 10);
        assert_eq!(
            l.compose(IdParts {
                time_units: 0,
                shard: 0,
                sequence: 256
            }),
            None
        );
    }

    #[test]
    fn the_legacy_preset_keeps_its_old_meaning_and_name() {
        let l = Layout::sonyflake_legacy();
        let id = (100u64 << 24) | (2 << 16) | 9;
        let d = l.decode(id).unwrap();
        assert_eq!((d.parts.shard, d.parts.sequence), (2, 9));
        assert_eq!(d.unix_ms, DEFAULT_EPOCH_UNIX_MS + 1000);
        assert_eq!(l.to_string(), SONYFLAKE_LEGACY_NAME);
        assert_eq!(SONYFLAKE_LEGACY_NAME.parse::<Layout>(), Ok(l));
        assert_eq!("sonyflake".parse::<Layout>(), Ok(Layout::sonyflake()));
        assert_eq!(Layout::sonyflake().to_string(), "sonyflake");
        assert_eq!(Layout::former_meaning(" Sonyflake"), Some(l));
        assert_eq!(Layout::former_meaning("instagram"), None);
        assert_eq!(Layout::former_meaning(SONYFLAKE_LEGACY_NAME), None);
    }
}
