//! Jump-back hashing against Lamping–Veach jump hashing, the algorithm it stands in for:
//! its keys spread over the buckets as evenly.

use shardkit_ring::{hash_u64, jump, jump_back};

#[test]
fn spread_is_as_even_as_lamping_veach() {
    const KEYS: u64 = 1_000_000;
    for n in [10u32, 100, 1000] {
        let (mut ours, mut lv) = (vec![0u32; n as usize], vec![0u32; n as usize]);
        for k in 0..KEYS {
            let h = hash_u64(k);
            ours[jump_back(h, n).unwrap() as usize] += 1;
            lv[jump(h, n).unwrap() as usize] += 1;
        }
        let avg = KEYS as f64 / f64::from(n);
        let peak = |v: &[u32]| f64::from(v.iter().copied().max().unwrap_or(0)) / avg;
        let (p, q) = (peak(&ours), peak(&lv));
        assert!(p < q * 1.05 && p < 1.15, "n {n}: jump-back {p}, jump {q}");
        assert!(ours.iter().all(|&c| c > 0), "n {n}: an empty bucket");
    }
}
