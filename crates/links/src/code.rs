//! Short codes: `<group><rest>`. The group (one base62 digit) is the hash of the
//! normalized long URL over 62 groups (of the alias, for a link with a custom alias),
//! so both directions find their shard without asking every shard; the rest is the group's ticket sequence number, optionally
//! scrambled by a keyed [`Feistel`] bijection, in fixed-width base62.
//!
//! Sequence indexes are laid out in tiers: tier `w` (`w` = 6, 7, … 10) holds the next
//! 62^w indexes and writes them with exactly `w` digits. So a code's length names its
//! tier, every code decodes to exactly one `(group, index)`, and codes are 7
//! characters for the first 62^6 links of each group (62^7 in all), growing past that.

use crate::error::CodeError;
use crate::feistel::Feistel;
use shardkit_ids::base62;

/// Number of shard groups: one per base62 digit.
pub const GROUPS: u8 = 62;
/// Digits after the group character in the first tier.
pub const MIN_REST_WIDTH: usize = 6;
/// The widest tier: 62^10 < 2^62, so the Feistel domain stays in range.
const MAX_REST_WIDTH: usize = 10;
/// The shortest generated code (group + first tier).
pub const MIN_CODE_LEN: usize = 1 + MIN_REST_WIDTH;

/// The shard group of a normalized long URL (or of an alias): the same text always
/// lands in one group.
pub fn group_of(normalized_url: &str) -> u8 {
    (shardkit_ring::hash_bytes(normalized_url.as_bytes()) % u64::from(GROUPS)) as u8
}

/// The group of `text` among `groups` (a region's own groups): the same text always
/// lands in the same one of them, spread by the same hash as [`group_of`]. `None` when
/// `groups` is empty.
pub fn group_within(text: &str, groups: &[u8]) -> Option<u8> {
    let n = u64::try_from(groups.len()).ok().filter(|&n| n > 0)?;
    let at = shardkit_ring::hash_bytes(text.as_bytes()) % n;
    groups.get(usize::try_from(at).ok()?).copied()
}

/// Whether `path` has the shape of a generated code (7 to 11 base62 characters), so its
/// first character is its group; any other path is an alias.
pub fn looks_like_code(path: &str) -> bool {
    looks_generated(path)
}

/// `(width, first index of the tier, size of the tier)` for each tier.
fn tiers() -> impl Iterator<Item = (usize, u64, u64)> {
    let mut start = 0u64;
    (MIN_REST_WIDTH..=MAX_REST_WIDTH).map(move |w| {
        let size = 62u64.pow(w as u32);
        let tier = (w, start, size);
        start += size;
        tier
    })
}

/// Turns `(group, index)` into a code and back; scrambled (default) or sequential.
#[derive(Debug, Clone)]
pub struct Codec {
    feistel: Option<Feistel>,
}

impl Codec {
    /// Codes that look random: the index goes through `feistel` within its tier.
    pub fn scrambled(feistel: Feistel) -> Self {
        Self {
            feistel: Some(feistel),
        }
    }

    /// Plain sequential codes (`a000001`, `a000002`, …), for when enumeration is fine.
    pub fn sequential() -> Self {
        Self { feistel: None }
    }

    /// The code of index `index` (0-based) of group `group`.
    pub fn encode(&self, group: u8, index: u64) -> Result<String, CodeError> {
        if group >= GROUPS {
            return Err(CodeError::BadGroup(group));
        }
        let (width, start, size) = tiers()
            .find(|&(_, start, size)| index >= start && index - start < size)
            .ok_or(CodeError::Exhausted(index))?;
        let local = index - start;
        let value = match &self.feistel {
            Some(f) => f.permute_tweaked(local, size, u64::from(group)),
            None => local,
        };
        let mut code = String::with_capacity(1 + width);
        code.push(base62::ALPHABET[group as usize] as char);
        code.push_str(&base62::encode_padded(value, width));
        Ok(code)
    }

    /// `(group, index)` of a generated code, or `None` if `code` is not one (wrong
    /// length, a character outside base62).
    pub fn decode(&self, code: &str) -> Option<(u8, u64)> {
        if !looks_generated(code) {
            return None;
        }
        let bytes = code.as_bytes();
        let group = base62::decode(std::str::from_utf8(&bytes[..1]).ok()?).ok()? as u8;
        let width = code.len() - 1;
        let (_, start, size) = tiers().find(|&(w, _, _)| w == width)?;
        let value = base62::decode(&code[1..]).ok()?;
        if value >= size {
            return None;
        }
        let local = match &self.feistel {
            Some(f) => f.invert_tweaked(value, size, u64::from(group)),
            None => value,
        };
        Some((group, start + local))
    }

    /// The permutation, if the codes are scrambled.
    pub(crate) fn feistel(&self) -> Option<&Feistel> {
        self.feistel.as_ref()
    }

    /// The group a code (generated or not) says it lives in, from its first character.
    pub fn group_of_code(code: &str) -> Option<u8> {
        let first = code.as_bytes().first()?;
        base62::ALPHABET
            .iter()
            .position(|c| c == first)
            .map(|g| g as u8)
    }
}

/// Whether `text` has the shape of a generated code: 7 to 11 base62 characters.
/// Aliases never have this shape (see [`crate::validate_alias`]).
pub(crate) fn looks_generated(text: &str) -> bool {
    (MIN_CODE_LEN..=1 + MAX_REST_WIDTH).contains(&text.len())
        && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_grow_past_62_to_the_6() {
        let c = Codec::sequential();
        assert_eq!(c.encode(0, 0).unwrap(), "0000000");
        assert_eq!(c.encode(61, 1).unwrap(), "z000001");
        let first_8 = 62u64.pow(6);
        assert_eq!(c.encode(3, first_8 - 1).unwrap(), "3zzzzzz");
        assert_eq!(c.encode(3, first_8).unwrap(), "30000000");
        assert_eq!(c.decode("30000000"), Some((3, first_8)));
        assert!(c.encode(62, 0).is_err());
        assert!(c.encode(0, u64::MAX).is_err());
        assert_eq!(c.decode("abc"), None);
        assert_eq!(c.decode("a-bcdefg"), None);
    }

    #[test]
    fn the_same_index_in_two_groups_gives_unrelated_suffixes() {
        let codec = Codec::scrambled(Feistel::new(*b"0123456789abcdef"));
        let mut same = 0;
        for index in 0..1000u64 {
            let a = codec.encode(0, index).unwrap();
            let b = codec.encode(1, index).unwrap();
            same += usize::from(a[1..] == b[1..]);
            assert_eq!(codec.decode(&a), Some((0, index)));
            assert_eq!(codec.decode(&b), Some((1, index)));
        }
        assert_eq!(
            same, 0,
            "a code's suffix must not reveal the codes of other groups"
        );
    }

    #[test]
    fn a_region_s_groups_take_every_url_it_mints_for() {
        let mine = [10u8, 11, 40];
        let mut seen = [0u32; 3];
        for i in 0..300 {
            let g = group_within(&format!("https://example.com/{i}"), &mine).unwrap();
            seen[mine.iter().position(|&m| m == g).unwrap()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        assert_eq!(group_within("x", &[]), None);
        assert!(looks_like_code("a1b2c3d") && !looks_like_code("my-alias"));
    }

    #[test]
    fn groups_spread_urls() {
        let mut seen = [0u32; 62];
        for i in 0..6200 {
            seen[group_of(&format!("https://example.com/{i}")) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 40), "{seen:?}");
    }
}
