//! Where a link's record sits, computed from its code: no code -> id index.
//!
//! A generated code is its group and the group's sequence index passed through the
//! keyed Feistel bijection ([`crate::Codec`]). Inverting it gives `(group, index)`
//! back, and the record's key is `index << 6 | group`: index-major, so the 62 groups'
//! newest links (their indexes grow together) all land at the right edge of the
//! B-tree, and a create appends instead of dirtying a random page. The code is not
//! stored; it is encoded again from the key when the record is read.
//!
//! The codec is the store's own, saved in the file when the store is made: if the
//! key file is lost or `sequential_codes` changes, new codes still map to distinct
//! places (any codec is a bijection on codes), only no longer in order.
//!
//! Indexes at or past 2^58 (the far end of the 11-character tier, reached only by an
//! imported code) do not fit: such a code gets a key from a counter with the unused
//! group number 63 and a row in a small code table, and its record keeps the code.

use crate::code::{Codec, GROUPS};
use crate::feistel::{Feistel, ROUNDS};

/// Bits of the key that hold the group.
const GROUP_BITS: u32 = 6;
/// The group number of keys handed out by the counter (groups are 0 to 61).
pub(crate) const WIDE_GROUP: u64 = 63;
/// Indexes below this fit in a key.
const MAX_DIRECT_INDEX: u64 = 1 << (64 - GROUP_BITS);

/// Turns codes into record keys and record keys into codes.
#[derive(Debug, Clone)]
pub(crate) struct Locator {
    codec: Codec,
}

impl Locator {
    /// A locator decoding with `codec`.
    pub(crate) fn new(codec: Codec) -> Self {
        Self { codec }
    }

    /// The record key of a generated code, or `None` when the code's index does not
    /// fit (or it is not a generated code): then it lives in the code table.
    pub(crate) fn key_of(&self, code: &str) -> Option<u64> {
        let (group, index) = self.codec.decode(code)?;
        (index < MAX_DIRECT_INDEX).then_some((index << GROUP_BITS) | u64::from(group))
    }

    /// The code a record at `key` has, unless its key came from the counter.
    pub(crate) fn code_of(&self, key: u64) -> Option<String> {
        let group = key & ((1 << GROUP_BITS) - 1);
        if group >= u64::from(GROUPS) {
            return None;
        }
        self.codec.encode(group as u8, key >> GROUP_BITS).ok()
    }

    /// The key handed out for the `n`th code that does not fit.
    pub(crate) fn wide_key(n: u64) -> u64 {
        (n << GROUP_BITS) | WIDE_GROUP
    }

    /// The codec as bytes, to be kept in the store: `0` (sequential), or `1` and the
    /// six round keys.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match self.codec.feistel() {
            None => vec![0],
            Some(f) => {
                let mut out = vec![1];
                for k in f.round_keys() {
                    out.extend_from_slice(&k.to_le_bytes());
                }
                out
            }
        }
    }

    /// What [`Locator::to_bytes`] wrote, or `None` if it is not that.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        match bytes.split_first()? {
            (0, []) => Some(Self::new(Codec::sequential())),
            (1, keys) if keys.len() == 8 * ROUNDS => {
                let mut round_keys = [0u64; ROUNDS];
                for (k, chunk) in round_keys.iter_mut().zip(keys.chunks_exact(8)) {
                    *k = u64::from_le_bytes(chunk.try_into().ok()?);
                }
                Some(Self::new(Codec::scrambled(Feistel::from_round_keys(
                    round_keys,
                ))))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_sequence_and_give_the_code_back() {
        let codec = Codec::scrambled(Feistel::new([9; 16]));
        let locator = Locator::from_bytes(&Locator::new(codec.clone()).to_bytes()).unwrap();
        let mut last = 0;
        for index in 0..500u64 {
            for group in [0u8, 17, 61] {
                let code = codec.encode(group, index).unwrap();
                let key = locator.key_of(&code).unwrap();
                assert_eq!(locator.code_of(key).as_deref(), Some(code.as_str()));
                assert!(key >= last, "keys grow with the index");
                last = key;
            }
        }
        // The far end of the widest tier does not fit; nor does a non-code.
        let far = codec.encode(5, MAX_DIRECT_INDEX + 3).unwrap();
        assert_eq!(far.len(), 11);
        assert_eq!(locator.key_of(&far), None);
        assert_eq!(locator.key_of("my-alias"), None);
        assert_eq!(locator.code_of(Locator::wide_key(4)), None);
        assert!(Locator::from_bytes(&[1, 2]).is_none());
        assert!(Locator::from_bytes(&[0]).is_some());
    }
}
