//! Version 7 UUIDs (RFC 9562) as values: built from their fields, printed in the
//! usual hyphenated form, parsed back with a named error for every kind of wrong
//! input, and taken apart into their Unix-ms time.
//!
//! From the top bit down: 48 bits of Unix milliseconds, the version `0111`, 12 bits
//! of `rand_a` (here a per-millisecond counter, RFC 9562 section 6.2 method 1), the
//! variant `10`, and 62 bits of `rand_b`.

use crate::error::UuidError;
use std::fmt;
use std::str::FromStr;

const VERSION_SHIFT: u32 = 76;
const COUNTER_SHIFT: u32 = 64;
const VARIANT_SHIFT: u32 = 62;
const TIME_SHIFT: u32 = 80;

/// The largest Unix-ms time a UUIDv7 holds (48 bits: the year 10889).
pub const UUID7_MAX_UNIX_MS: u64 = (1 << 48) - 1;
/// The largest `rand_a` counter value (12 bits).
pub const UUID7_MAX_COUNTER: u16 = (1 << 12) - 1;
/// The largest `rand_b` value (62 bits).
pub const UUID7_MAX_RAND_B: u64 = (1 << 62) - 1;

/// A version 7 UUID: sorts by its creation time as a number, as bytes and as text,
/// which keeps database index inserts at the end of the index.
///
/// Every value of this type has version 7 and variant `10`: the constructors check,
/// so code holding one never has to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid7(u128);

impl Uuid7 {
    /// A UUIDv7 from its fields; `None` if one does not fit its bits.
    pub const fn from_parts(unix_ms: u64, counter: u16, rand_b: u64) -> Option<Self> {
        if unix_ms > UUID7_MAX_UNIX_MS || counter > UUID7_MAX_COUNTER || rand_b > UUID7_MAX_RAND_B {
            return None;
        }
        Some(Self::pack(unix_ms, counter as u64, rand_b))
    }

    /// Packs fields already known to fit: the generator's path.
    #[inline]
    pub(crate) const fn pack(unix_ms: u64, counter: u64, rand_b: u64) -> Self {
        Self(
            ((unix_ms as u128) << TIME_SHIFT)
                | (7 << VERSION_SHIFT)
                | ((counter as u128) << COUNTER_SHIFT)
                | (0b10 << VARIANT_SHIFT)
                | rand_b as u128,
        )
    }

    /// A UUID given as a 128-bit number, refused unless it is version 7, variant `10`.
    pub fn from_u128(value: u128) -> Result<Self, UuidError> {
        let version = ((value >> VERSION_SHIFT) & 0xF) as u8;
        let variant = ((value >> VARIANT_SHIFT) & 0b11) as u8;
        if version != 7 {
            return Err(UuidError::NotVersion7 {
                uuid: hyphenated(value),
                version,
            });
        }
        if variant != 0b10 {
            return Err(UuidError::WrongVariant {
                uuid: hyphenated(value),
                variant,
            });
        }
        Ok(Self(value))
    }

    /// A UUID given as its 16 bytes in network order (as databases store it).
    pub fn from_bytes(bytes: [u8; 16]) -> Result<Self, UuidError> {
        Self::from_u128(u128::from_be_bytes(bytes))
    }

    /// The UUID as a 128-bit number.
    pub const fn as_u128(&self) -> u128 {
        self.0
    }

    /// The UUID's 16 bytes in network order.
    pub const fn to_bytes(&self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// When it was made, in Unix milliseconds: what decoding a UUIDv7 is for.
    pub const fn unix_ms(&self) -> u64 {
        (self.0 >> TIME_SHIFT) as u64
    }

    /// The `rand_a` field: the per-millisecond counter of the generator that made it.
    pub const fn counter(&self) -> u16 {
        ((self.0 >> COUNTER_SHIFT) & UUID7_MAX_COUNTER as u128) as u16
    }

    /// The `rand_b` field: 62 random bits.
    pub const fn rand_b(&self) -> u64 {
        (self.0 & UUID7_MAX_RAND_B as u128) as u64
    }
}

impl fmt::Display for Uuid7 {
    /// Lowercase and hyphenated, `0190f3a8-…`, as RFC 9562 and most tools print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 36];
        f.write_str(write_hyphenated(self.0, &mut buf))
    }
}

impl FromStr for Uuid7 {
    type Err = UuidError;

    /// Reads the hyphenated form or 32 bare hex digits, either case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_u128(parse_hex(text)?)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";
const HYPHENS: [usize; 4] = [8, 13, 18, 23];

fn write_hyphenated(value: u128, buf: &mut [u8; 36]) -> &str {
    let mut nibble = 32;
    for (i, slot) in buf.iter_mut().enumerate() {
        if HYPHENS.contains(&i) {
            *slot = b'-';
        } else {
            nibble -= 1;
            *slot = HEX[((value >> (nibble * 4)) & 0xF) as usize];
        }
    }
    // Only ASCII hex digits and hyphens were written.
    std::str::from_utf8(buf).unwrap_or_default()
}

fn hyphenated(value: u128) -> String {
    let mut buf = [0u8; 36];
    write_hyphenated(value, &mut buf).to_string()
}

/// Reads 32 hex digits, hyphenated 8-4-4-4-12 or bare.
fn parse_hex(text: &str) -> Result<u128, UuidError> {
    let bytes = text.as_bytes();
    let hyphenated = match bytes.len() {
        36 => true,
        32 => false,
        _ => {
            return Err(UuidError::WrongLength {
                text: text.to_string(),
                len: text.chars().count(),
            })
        }
    };
    let mut value = 0u128;
    for (position, &b) in bytes.iter().enumerate() {
        if hyphenated && HYPHENS.contains(&position) {
            if b != b'-' {
                return Err(UuidError::MisplacedHyphen {
                    text: text.to_string(),
                });
            }
            continue;
        }
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            b'-' if hyphenated => {
                return Err(UuidError::MisplacedHyphen {
                    text: text.to_string(),
                })
            }
            _ => {
                return Err(UuidError::BadCharacter {
                    text: text.to_string(),
                    character: crate::error::character_at(text, position),
                    position,
                })
            }
        };
        value = (value << 4) | u128::from(digit);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_reads_and_prints() {
        // RFC 9562 appendix A.6: 2022-02-22T19:22:22Z, rand_a 0xCC3, rand_b 0x18C4DC0C0C07398F.
        let text = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
        let uuid: Uuid7 = text.parse().unwrap();
        assert_eq!(uuid.unix_ms(), 0x017F_22E2_79B0);
        assert_eq!(uuid.unix_ms(), 1_645_557_742_000);
        assert_eq!(uuid.counter(), 0xCC3);
        assert_eq!(uuid.rand_b(), 0x18C4_DC0C_0C07_398F);
        assert_eq!(uuid.to_string(), text);
        assert_eq!(
            Uuid7::from_parts(1_645_557_742_000, 0xCC3, 0x18C4_DC0C_0C07_398F),
            Some(uuid)
        );
        assert_eq!(
            "017F22E279B07CC398C4DC0C0C07398F".parse::<Uuid7>(),
            Ok(uuid)
        );
        assert_eq!(Uuid7::from_bytes(uuid.to_bytes()), Ok(uuid));
    }

    #[test]
    fn each_kind_of_bad_input_gets_its_own_error() {
        assert!(matches!(
            "017f22e2-79b0-7cc3-98c4".parse::<Uuid7>(),
            Err(UuidError::WrongLength { len: 23, .. })
        ));
        assert!(matches!(
            "017f22e2-79b0-7cc3-98c4-dc0c0c07398g".parse::<Uuid7>(),
            Err(UuidError::BadCharacter {
                character: 'g',
                position: 35,
                ..
            })
        ));
        assert!(matches!(
            "017f22e2079b0-7cc3-98c4-dc0c0c07398f".parse::<Uuid7>(),
            Err(UuidError::MisplacedHyphen { .. })
        ));
        assert!(matches!(
            "017f22e2-79b0-7cc3-98c4-dc0c0c07-98f".parse::<Uuid7>(),
            Err(UuidError::MisplacedHyphen { .. })
        ));
        let v4 = "550e8400-e29b-41d4-a716-446655440000".parse::<Uuid7>();
        assert_eq!(
            v4,
            Err(UuidError::NotVersion7 {
                uuid: "550e8400-e29b-41d4-a716-446655440000".into(),
                version: 4
            })
        );
        assert!(v4.unwrap_err().to_string().contains("version 4"));
        // Variant 0b11 (reserved) in the top bits of the ninth byte.
        assert!(matches!(
            "017f22e2-79b0-7cc3-d8c4-dc0c0c07398f".parse::<Uuid7>(),
            Err(UuidError::WrongVariant { variant: 0b11, .. })
        ));
        // Multi-byte text of a valid length is a bad character, not a panic.
        assert!(matches!(
            "é17f22e2-79b0-7cc3-98c4-dc0c0c07398".parse::<Uuid7>(),
            Err(UuidError::BadCharacter { position: 0, .. })
        ));
        assert_eq!(Uuid7::from_parts(1 << 48, 0, 0), None);
        assert_eq!(Uuid7::from_parts(0, 4096, 0), None);
        assert_eq!(Uuid7::from_parts(0, 0, 1 << 62), None);
    }
}
