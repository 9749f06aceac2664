//! Property tests: every layout composes and decodes losslessly; base62 round-trips
//! and preserves order among codes of one length.

use proptest::prelude::*;
use shardkit_ids::{base62, IdParts, Layout, MIN_TIME_BITS};

/// Any valid layout: a preset or a random split of 63 bits.
fn any_layout() -> impl Strategy<Value = Layout> {
    let custom = (MIN_TIME_BITS..=62u8, 0u8..=30, 1u64..=1000).prop_filter_map(
        "bits must leave room for a sequence",
        |(time, shard, unit)| {
            let sequence = 63u8.checked_sub(time)?.checked_sub(shard)?;
            Layout::custom(time, shard, sequence, unit).ok()
        },
    );
    prop_oneof![
        Just(Layout::instagram()),
        Just(Layout::snowflake()),
        Just(Layout::sonyflake()),
        Just(Layout::sonyflake_legacy()),
        custom
    ]
}

/// A layout and parts that fit it.
fn layout_and_parts() -> impl Strategy<Value = (Layout, IdParts)> {
    any_layout().prop_flat_map(|l| {
        (
            Just(l),
            0..=l.max_time_units(),
            0..l.shards(),
            0..=l.max_sequence(),
        )
            .prop_map(|(l, time_units, shard, sequence)| {
                (
                    l,
                    IdParts {
                        time_units,
                        shard,
                        sequence,
                    },
                )
            })
    })
}

proptest! {
    #[test]
    fn decode_inverts_compose((layout, parts) in layout_and_parts()) {
        let id = layout.compose(parts).expect("parts fit the layout");
        prop_assert!(id < 1 << 63, "sign bit must stay 0");
        let decoded = layout.decode(id).unwrap();
        prop_assert_eq!(decoded.parts, parts);
        // Times past u64 ms (only huge custom layouts reach them) saturate.
        let expected = parts.time_units.checked_mul(layout.unit_ms()).and_then(|ms| ms.checked_add(layout.epoch_unix_ms()));
        prop_assert_eq!(decoded.unix_ms, expected.unwrap_or(u64::MAX));
    }

    #[test]
    fn ids_order_by_time_first((layout, a) in layout_and_parts(), later in 1u64..1000) {
        let b = IdParts { time_units: a.time_units.saturating_add(later).min(layout.max_time_units()), shard: 0, sequence: 0 };
        prop_assume!(b.time_units > a.time_units);
        prop_assert!(layout.compose(a).unwrap() < layout.compose(b).unwrap());
    }

    #[test]
    fn layouts_print_and_parse_back(layout in any_layout()) {
        let parsed: Layout = layout.to_string().parse().unwrap();
        prop_assert_eq!((parsed.time_bits(), parsed.shard_bits(), parsed.sequence_bits(), parsed.unit_ms()),
                        (layout.time_bits(), layout.shard_bits(), layout.sequence_bits(), layout.unit_ms()));
    }

    #[test]
    fn base62_round_trips(value in any::<u64>()) {
        prop_assert_eq!(base62::decode(&base62::encode(value)), Ok(value));
    }

    #[test]
    fn base62_of_equal_width_sorts_like_the_numbers(a in any::<u64>(), b in any::<u64>()) {
        let (ea, eb) = (base62::encode_padded(a, base62::MAX_LEN), base62::encode_padded(b, base62::MAX_LEN));
        prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
    }

    #[test]
    fn base62_never_panics_on_text(text in ".{0,20}") {
        let _ = base62::decode(&text);
    }
}

proptest! {
    /// The layout parser and the id parser take text from users: any text gets an
    /// answer, never a panic.
    #[test]
    fn layout_and_id_parsers_never_panic(text in "[0-9a-z/@ ]{0,24}|.{0,24}") {
        let _ = text.parse::<Layout>();
        let _ = Layout::instagram().decode_str(&text);
        let _ = Layout::instagram().with_epoch_rfc3339(&text);
    }
}
