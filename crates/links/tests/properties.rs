//! Property tests of the code space: the Feistel bijection, code round trips across
//! every tier, and the alias/code separation.

use proptest::prelude::*;
use shardkit_links::{validate_alias, Codec, Feistel, GROUPS};

/// Sum of the tier sizes 62^6 + … + 62^10: every index below this has a code.
fn last_index() -> u64 {
    (6..=10).map(|w| 62u64.pow(w)).sum::<u64>() - 1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn feistel_is_invertible(key in any::<[u8; 16]>(), n in 1u64..(1 << 62), x in any::<u64>()) {
        let f = Feistel::new(key);
        let x = x % n;
        let y = f.permute(x, n);
        prop_assert!(y < n);
        prop_assert_eq!(f.invert(y, n), x);
    }

    #[test]
    fn feistel_is_a_permutation_of_small_domains(key in any::<[u8; 16]>(), n in 1u64..3000) {
        let f = Feistel::new(key);
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = f.permute(x, n) as usize;
            prop_assert!(!seen[y], "two inputs gave {}", y);
            seen[y] = true;
        }
    }

    #[test]
    fn distinct_indexes_give_distinct_codes(key in any::<[u8; 16]>(), g in 0u8..GROUPS, a in any::<u64>(), b in any::<u64>()) {
        let codec = Codec::scrambled(Feistel::new(key));
        let (a, b) = (a % last_index(), b % last_index());
        prop_assume!(a != b);
        prop_assert_ne!(codec.encode(g, a).unwrap(), codec.encode(g, b).unwrap());
    }

    #[test]
    fn codes_of_every_length_round_trip(key in any::<[u8; 16]>(), g in 0u8..GROUPS, tier in 6u32..=10, offset in any::<u64>(), scrambled in any::<bool>()) {
        let codec = if scrambled { Codec::scrambled(Feistel::new(key)) } else { Codec::sequential() };
        let start: u64 = (6..tier).map(|w| 62u64.pow(w)).sum();
        let index = start + offset % 62u64.pow(tier);
        let code = codec.encode(g, index).unwrap();
        prop_assert_eq!(code.len(), 1 + tier as usize);
        prop_assert_eq!(Codec::group_of_code(&code), Some(g));
        prop_assert_eq!(codec.decode(&code), Some((g, index)));
    }

    #[test]
    fn aliases_never_collide_with_generated_codes(alias in "[A-Za-z0-9_-]{1,64}", key in any::<[u8; 16]>()) {
        // Whatever passes the alias rules is never something the codec could have made.
        let codecs = [Codec::scrambled(Feistel::new(key)), Codec::sequential()];
        if validate_alias(&alias).is_ok() {
            for codec in &codecs {
                prop_assert_eq!(codec.decode(&alias), None, "alias {} decodes as a code", alias);
            }
        }
    }

    #[test]
    fn generated_codes_are_never_valid_aliases(key in any::<[u8; 16]>(), g in 0u8..GROUPS, index in any::<u64>()) {
        let code = Codec::scrambled(Feistel::new(key)).encode(g, index % last_index()).unwrap();
        prop_assert!(validate_alias(&code).is_err());
    }
}

#[test]
fn the_last_index_has_an_11_character_code_and_the_next_is_refused() {
    let codec = Codec::scrambled(Feistel::new([9; 16]));
    assert_eq!(codec.encode(0, last_index()).unwrap().len(), 11);
    assert!(codec.encode(0, last_index() + 1).is_err());
}
