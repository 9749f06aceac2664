//! Our UUIDv7s and ULIDs against the `uuid` and `ulid` crates: each side reads the
//! other's text, agrees on the time, and ids from both sort together by time.

use shardkit_ids::{Ulid, UlidGenerator, Uuid7, Uuid7Generator};
use std::time::Duration;

/// Long enough that consecutive ids from the two sides never share a millisecond, so
/// their order is decided by time alone.
const GAP: Duration = Duration::from_millis(2);

#[test]
fn our_uuid7s_are_version_7_rfc_variant_to_the_uuid_crate() {
    let ours = Uuid7Generator::new().unwrap();
    for _ in 0..1_000 {
        let id = ours.next_id().unwrap();
        let theirs = uuid::Uuid::parse_str(&id.to_string()).unwrap();
        assert_eq!(theirs.get_version_num(), 7);
        assert_eq!(theirs.get_version(), Some(uuid::Version::SortRand));
        assert_eq!(theirs.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(theirs.as_u128(), id.as_u128());
        let (secs, nanos) = theirs.get_timestamp().unwrap().to_unix();
        assert_eq!(secs * 1000 + u64::from(nanos) / 1_000_000, id.unix_ms());
        assert_eq!(theirs.hyphenated().to_string(), id.to_string());
    }
}

#[test]
fn uuid_crate_v7s_parse_with_ours_and_a_v4_is_refused() {
    for _ in 0..1_000 {
        let theirs = uuid::Uuid::now_v7();
        let ours: Uuid7 = theirs.to_string().parse().unwrap();
        assert_eq!(ours.as_u128(), theirs.as_u128());
        let (secs, nanos) = theirs.get_timestamp().unwrap().to_unix();
        assert_eq!(ours.unix_ms(), secs * 1000 + u64::from(nanos) / 1_000_000);
        let upper: Uuid7 = theirs.simple().to_string().to_uppercase().parse().unwrap();
        assert_eq!(upper, ours);
    }
    let v4 = uuid::Uuid::from_u128(0x550e_8400_e29b_41d4_a716_4466_5544_0000);
    assert!(matches!(
        v4.to_string().parse::<Uuid7>(),
        Err(shardkit_ids::UuidError::NotVersion7 { version: 4, .. })
    ));
}

#[test]
fn uuid7s_from_both_sides_sort_together_by_time() {
    let ours = Uuid7Generator::new().unwrap();
    let mut made = Vec::new();
    for _ in 0..20 {
        made.push(ours.next_id().unwrap().to_string());
        std::thread::sleep(GAP);
        made.push(uuid::Uuid::now_v7().to_string());
        std::thread::sleep(GAP);
    }
    let mut sorted = made.clone();
    sorted.sort();
    assert_eq!(sorted, made, "text order must be creation order");
}

#[test]
fn ulids_from_both_sides_read_each_other_and_sort_together_by_time() {
    let ours = UlidGenerator::new().unwrap();
    let mut theirs = ulid::Generator::new();
    let mut made: Vec<(String, u64)> = Vec::new();
    for _ in 0..20 {
        let a = ours.next_id().unwrap();
        let a_read = ulid::Ulid::from_string(&a.to_string()).unwrap();
        assert_eq!(a_read.0, a.as_u128());
        assert_eq!(a_read.timestamp_ms(), a.unix_ms());
        made.push((a.to_string(), a.unix_ms()));
        std::thread::sleep(GAP);

        let b = theirs.generate().unwrap();
        let b_read: Ulid = b.to_string().parse().unwrap();
        assert_eq!(b_read.as_u128(), b.0);
        assert_eq!(b_read.unix_ms(), b.timestamp_ms());
        let lower: Ulid = b.to_string().to_lowercase().parse().unwrap();
        assert_eq!(lower, b_read);
        made.push((b.to_string(), b.timestamp_ms()));
        std::thread::sleep(GAP);
    }
    assert!(
        made.windows(2).all(|w| w[0].1 < w[1].1),
        "the gap puts each id in a later millisecond"
    );
    let mut sorted = made.clone();
    sorted.sort();
    assert_eq!(sorted, made, "text order must be time order");
}
