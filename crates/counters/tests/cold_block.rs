//! The cold tier's block format: round trips against a model, and damage of every
//! kind reported as a corrupt block naming its id range, never a panic.

use proptest::prelude::*;
use shardkit_counters::cold_block::{
    decode_block, encode_block, encode_block_version_1, get, BlockError, BlockIndexEntry, Codec,
};

/// Encodes a block in the format written today (version 2) or the first one.
fn encode_in(
    v1: bool,
    ids: &[u64],
    cols: &[&[u64]],
    widths: &[u8],
    codec: Codec,
) -> Result<Vec<u8>, BlockError> {
    if v1 {
        encode_block_version_1(ids, cols, widths, codec)
    } else {
        encode_block(ids, cols, widths, codec)
    }
}

fn entry_for(ids: &[u64], bytes: &[u8], offset: u64) -> BlockIndexEntry {
    BlockIndexEntry {
        first_id: ids[0],
        last_id: *ids.last().unwrap(),
        offset,
        len: bytes.len() as u32,
    }
}

/// A block of 300 rows with ids, an 8-bit column with some wide values and a 64-bit one.
fn sample(codec: Codec) -> (Vec<u64>, Vec<Vec<u64>>, Vec<u8>, Vec<u8>) {
    sample_in(false, codec)
}

/// [`sample`] in either format.
fn sample_in(v1: bool, codec: Codec) -> (Vec<u64>, Vec<Vec<u64>>, Vec<u8>, Vec<u8>) {
    let ids: Vec<u64> = (0..300u64).map(|i| (1 << 40) + i * i * 7 + i).collect();
    let a: Vec<u64> = (0..300u64)
        .map(|i| if i % 37 == 0 { 1_000 + i } else { i % 200 })
        .collect();
    let b: Vec<u64> = (0..300u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let widths = vec![8, 64];
    let bytes = encode_in(v1, &ids, &[&a, &b], &widths, codec).unwrap();
    (ids, vec![a, b], widths, bytes)
}

fn assert_corrupt(
    r: Result<impl std::fmt::Debug, BlockError>,
    entry: &BlockIndexEntry,
    what: &str,
) {
    match r {
        Err(BlockError::Corrupt {
            first_id,
            last_id,
            offset,
            ..
        }) => {
            assert_eq!(
                (first_id, last_id, offset),
                (entry.first_id, entry.last_id, entry.offset),
                "{what}"
            );
        }
        other => panic!("{what}: expected a corrupt block, got {other:?}"),
    }
}

#[test]
fn sample_round_trips_with_both_codecs_in_both_formats() {
    for (v1, codec) in [false, true]
        .into_iter()
        .flat_map(|v| [(v, Codec::None), (v, Codec::Zstd)])
    {
        let (ids, cols, widths, bytes) = sample_in(v1, codec);
        assert_eq!(bytes[4], if v1 { 1 } else { 2 }, "the format version");
        let entry = entry_for(&ids, &bytes, 4096);
        let block = decode_block(&bytes, &entry).unwrap();
        assert_eq!(block.ids, ids);
        assert_eq!(block.columns, cols);
        assert_eq!(block.widths, widths);
        for (r, &id) in ids.iter().enumerate() {
            let want = Some(vec![cols[0][r], cols[1][r]]);
            assert_eq!(get(&bytes, &entry, id).unwrap(), want);
            assert_eq!(block.get(id), want);
        }
        assert_eq!(
            get(&bytes, &entry, ids[1] - 1).unwrap(),
            None,
            "absent id inside the range"
        );
        assert_eq!(
            get(&bytes, &entry, ids[0] - 1).unwrap(),
            None,
            "below the range"
        );
    }
}

#[test]
fn every_single_byte_flip_is_detected() {
    for codec in [Codec::None, Codec::Zstd] {
        let (ids, _, _, bytes) = sample(codec);
        let entry = entry_for(&ids, &bytes, 77);
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[i] ^= flip;
                assert_corrupt(
                    decode_block(&bad, &entry),
                    &entry,
                    &format!("byte {i} ^ {flip:#x}"),
                );
                assert_corrupt(get(&bad, &entry, ids[5]), &entry, &format!("get, byte {i}"));
            }
        }
    }
}

#[test]
fn truncated_and_extended_blocks_are_detected() {
    let (ids, _, _, bytes) = sample(Codec::Zstd);
    for cut in 0..bytes.len() {
        // The index entry says the true length: a short read is caught by length.
        let entry = entry_for(&ids, &bytes, 0);
        assert_corrupt(
            decode_block(&bytes[..cut], &entry),
            &entry,
            &format!("cut at {cut}"),
        );
        // An index entry that agrees with the short length: caught by the CRC or header.
        let short = entry_for(&ids, &bytes[..cut], 0);
        assert_corrupt(
            decode_block(&bytes[..cut], &short),
            &short,
            &format!("short entry, cut {cut}"),
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    let entry = entry_for(&ids, &longer, 0);
    assert_corrupt(decode_block(&longer, &entry), &entry, "a byte appended");
}

#[test]
fn a_block_checked_against_the_wrong_index_entry_is_refused() {
    let (ids, _, _, bytes) = sample(Codec::Zstd);
    let mut entry = entry_for(&ids, &bytes, 0);
    entry.first_id += 1;
    assert_corrupt(decode_block(&bytes, &entry), &entry, "first id differs");
    let msg = decode_block(&bytes, &entry).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("{}..={}", entry.first_id, entry.last_id)),
        "{msg}"
    );
}

#[test]
fn bad_input_is_refused_when_encoding() {
    let bad = |r: Result<Vec<u8>, BlockError>| {
        assert!(matches!(r, Err(BlockError::BadInput(_))), "{r:?}")
    };
    bad(encode_block(&[], &[], &[], Codec::None));
    bad(encode_block(&[2, 1], &[], &[], Codec::None));
    bad(encode_block(&[1, 1], &[], &[], Codec::None));
    bad(encode_block(&[1, 2], &[&[1]], &[8], Codec::None));
    bad(encode_block(&[1, 2], &[&[1, 2]], &[0], Codec::None));
    bad(encode_block(&[1, 2], &[&[1, 2]], &[65], Codec::None));
    bad(encode_block(&[1, 2], &[&[1, 2]], &[], Codec::None));
}

fn rows_strategy() -> impl Strategy<Value = (Vec<u64>, Vec<u8>, Vec<Vec<u64>>)> {
    // Ids anywhere, or close together with low bits all zero (what version 2 shifts out).
    let spread = prop::collection::btree_set(any::<u64>(), 1..400);
    let close = (
        any::<u64>(),
        prop::collection::vec(1u64..5_000, 0..400),
        0u32..40,
    )
        .prop_map(|(base, gaps, shift)| {
            let mut id = base >> shift << shift;
            let mut set = std::collections::BTreeSet::from([id]);
            for g in gaps {
                match id.checked_add(g << shift) {
                    Some(next) => id = next,
                    None => break,
                }
                set.insert(id);
            }
            set
        });
    let ids = prop_oneof![spread, close].prop_map(|s| s.into_iter().collect::<Vec<u64>>());
    let widths = prop::collection::vec(1u8..=64, 0..4);
    (ids, widths).prop_flat_map(|(ids, widths)| {
        let n = ids.len();
        let cols: Vec<_> = widths
            .iter()
            .map(|&w| {
                let inline = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                // Mostly values that fit, some at or past the marker (wide values).
                prop::collection::vec(
                    prop_oneof![4 => 0..=inline, 1 => inline.saturating_sub(1)..=inline, 1 => any::<u64>()],
                    n,
                )
            })
            .collect();
        (Just(ids), Just(widths), cols)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn round_trips_against_the_model((ids, widths, cols) in rows_strategy(), zstd in any::<bool>(), v1 in any::<bool>(), probe in any::<u64>()) {
        let codec = if zstd { Codec::Zstd } else { Codec::None };
        let refs: Vec<&[u64]> = cols.iter().map(|c| c.as_slice()).collect();
        let bytes = encode_in(v1, &ids, &refs, &widths, codec).unwrap();
        let entry = entry_for(&ids, &bytes, 12);
        let block = decode_block(&bytes, &entry).unwrap();
        prop_assert_eq!(&block.ids, &ids);
        prop_assert_eq!(&block.columns, &cols);
        prop_assert_eq!(&block.widths, &widths);
        // The model: a map from id to its row.
        let model: std::collections::BTreeMap<u64, Vec<u64>> = ids
            .iter()
            .enumerate()
            .map(|(r, &id)| (id, cols.iter().map(|c| c[r]).collect()))
            .collect();
        let mut probes: Vec<u64> = ids.iter().step_by(7).copied().collect();
        probes.push(probe);
        probes.push(ids[0].wrapping_add(1));
        for id in probes {
            prop_assert_eq!(get(&bytes, &entry, id).unwrap(), model.get(&id).cloned());
        }
    }
}

/// Rewrites the CRC of a damaged block so the damage reaches the structural checks.
fn with_fresh_crc(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn header_damage_behind_a_valid_crc_is_named() {
    for v1 in [false, true] {
        header_damage_in(v1);
    }
}

fn header_damage_in(v1: bool) {
    let (ids, _, _, bytes) = sample_in(v1, Codec::None);
    let entry = entry_for(&ids, &bytes, 0);
    // magic, version, codec, column count, row count, raw length, payload length, a width.
    for (i, v) in [
        (0, b'X'),
        (4, 3),
        (4, 0),
        (5, 9),
        (6, 200),
        (8, 0),
        (28, 1),
        (32, 1),
        (36, 0),
    ] {
        let mut bad = bytes.clone();
        bad[i] = v;
        let bad = with_fresh_crc(bad);
        assert_corrupt(
            decode_block(&bad, &entry),
            &entry,
            &format!("byte {i} = {v}"),
        );
    }
    // The first id gap made zero: ids no longer strictly increasing, last id wrong. In
    // version 2 the payload starts with the gap shift, the gap width and the first
    // plane's two length varints (299 bytes: two bytes each); the sample's first gap is 8,
    // 4 once shifted, one byte.
    let plain_payload_start = 36 + 2;
    let first_gap = plain_payload_start + if v1 { 0 } else { 6 };
    assert_eq!(bytes[first_gap], if v1 { 8 } else { 4 });
    let mut bad = bytes.clone();
    bad[first_gap] = 0;
    let bad = with_fresh_crc(bad);
    assert_corrupt(decode_block(&bad, &entry), &entry, "a zero id gap");
    if !v1 {
        for (at, what) in [(0, "gap shift 64"), (1, "gap width 9")] {
            let mut bad = bytes.clone();
            bad[plain_payload_start + at] = if at == 0 { 64 } else { 9 };
            let bad = with_fresh_crc(bad);
            assert_corrupt(decode_block(&bad, &entry), &entry, what);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any damage with a recomputed CRC (what a bug, not a disk, would write) decodes to
    /// something or is refused as corrupt: never a panic, never another error.
    #[test]
    fn damage_behind_a_valid_crc_never_panics(zstd in any::<bool>(), v1 in any::<bool>(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let (ids, _, _, bytes) = sample_in(v1, if zstd { Codec::Zstd } else { Codec::None });
        let entry = entry_for(&ids, &bytes, 0);
        let mut bad = bytes.clone();
        let n = bad.len() - 4;
        for (at, v) in edits {
            bad[at.index(n)] = v;
        }
        let bad = with_fresh_crc(bad);
        match decode_block(&bad, &entry) {
            Ok(block) => prop_assert_eq!(block.ids.len(), block.columns.first().map_or(block.ids.len(), |c| c.len())),
            Err(e) => prop_assert!(matches!(e, BlockError::Corrupt { .. }), "{e:?}"),
        }
        let _ = get(&bad, &entry, ids[3]);
    }
}

/// What version 2 is for: on ids made in time order by a Snowflake-style layout (two per
/// millisecond, a random 13-bit shard, a 10-bit sequence that rarely leaves 0) with two
/// small skewed columns, its blocks are well under version 1's (bench/notes/runs.md measures
/// 0.75x on the rows).
#[test]
fn version_2_is_smaller_than_version_1_on_time_ordered_ids() {
    let mut x = 0x5EEDu64;
    let mut next = move || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut ids: Vec<u64> = (0..4096u64)
        .map(|i| ((1_700_000_000_000 + i / 2) << 23) | ((next() % 8192) << 10))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let col = |n: &mut dyn FnMut() -> u64| -> Vec<u64> {
        (0..ids.len())
            .map(|_| 1 + n().trailing_zeros() as u64 * 3)
            .collect()
    };
    let (a, b) = (col(&mut next), col(&mut next));
    let v1 = encode_block_version_1(&ids, &[&a, &b], &[16, 16], Codec::Zstd).unwrap();
    let v2 = encode_block(&ids, &[&a, &b], &[16, 16], Codec::Zstd).unwrap();
    assert!(
        v2.len() * 100 < v1.len() * 85,
        "version 2: {} bytes, version 1: {}",
        v2.len(),
        v1.len()
    );
}
