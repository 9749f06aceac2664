//! Redis Cluster's key → slot function: CRC16 (XMODEM) of the key, or of its `{…}`
//! hash tag, modulo 16,384. A cluster client computes the same slot from the same key,
//! so it sends each command straight to the node that owns it.

/// How many slots a cluster has (Redis Cluster's fixed number).
pub const SLOTS: u16 = 16_384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), byte at a time.
const TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The CRC16 Redis Cluster hashes keys with.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// The part of a key that is hashed: what is between the first `{` and the first `}`
/// after it, when that is not empty; else the whole key (Redis's rule, so
/// `{user}:a` and `{user}:b` share a slot, and `{}x` hashes whole).
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = memchr::memchr(b'{', key) {
        if let Some(len) = memchr::memchr(b'}', &key[open + 1..]) {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The slot of a key.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_values_redis_documents() {
        // The check value of CRC16/XMODEM, as in Redis's cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        // `CLUSTER KEYSLOT` answers from Redis 7 (checked against a live server by
        // tests/cluster_slots.rs on random keys too).
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"somekey"), 11058);
    }

    #[test]
    fn hash_tags_follow_redis_rules() {
        assert_eq!(hash_tag(b"weibo:{123}:likes"), b"123");
        assert_eq!(key_slot(b"weibo:{123}:likes"), key_slot(b"123"));
        assert_eq!(key_slot(b"weibo:{123}"), key_slot(b"other:{123}:x"));
        assert_eq!(hash_tag(b"{}x"), b"{}x");
        assert_eq!(hash_tag(b"a{b"), b"a{b");
        assert_eq!(hash_tag(b"a{b}{c}"), b"b");
        assert_eq!(hash_tag(b"a}b{c}"), b"c");
        assert_eq!(hash_tag(b"{{x}}"), b"{x");
    }
}
