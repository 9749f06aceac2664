//! Jump consistent hash (Lamping and Veach, 2014) and a named-node wrapper around it.
//!
//! Jump needs no memory and spreads keys over numbered buckets almost perfectly, and when
//! the bucket count grows from n to n+1 exactly the keys that must move (1/(n+1) of them)
//! move, all to the new bucket. Its limit is that buckets are numbers: only the *last*
//! bucket can be removed cleanly. [`JumpNodes`] shows the cost of removing a middle node.
// Allowed here only (the SSE4.1 fast path, called only after run-time feature detection); the workspace denies unsafe code elsewhere.
#![allow(unsafe_code)]

use crate::hash::{hash_bytes, hash_u64};
use crate::jump_back::jump_back_nonzero;
use crate::node::{nodes_with, validate_nodes, NodeSpec};
use crate::RingError;
use std::num::NonZeroU32;

/// Bucket in `0..buckets` for a 64-bit key; errors on 0 buckets.
///
/// The key should already be well mixed (a hash); [`JumpNodes`] hashes for you.
pub fn jump(key: u64, buckets: u32) -> Result<u32, RingError> {
    NonZeroU32::new(buckets)
        .map(|b| jump_nonzero(key, b))
        .ok_or(RingError::ZeroBuckets)
}

/// [`jump`] for a bucket count already known to be non-zero: the hot-path form.
///
/// Runs [`jump_integer`], which gives the paper's answers bit for bit with integer
/// arithmetic on every platform (measured a fifth to a quarter faster than
/// [`jump_sse41`]; see `examples/lv_variants.rs`).
#[inline]
pub fn jump_nonzero(key: u64, buckets: NonZeroU32) -> u32 {
    jump_integer(key, buckets)
}

/// The algorithm exactly as the paper writes it, for any platform.
///
/// Each step converts the bucket to floating point and back, and those conversions are
/// most of the step's latency; the steps form one dependent chain of about ln(n) + 1.
#[inline]
pub fn jump_portable(mut key: u64, buckets: NonZeroU32) -> u32 {
    let buckets = i64::from(buckets.get());
    let (mut b, mut j) = (-1i64, 0i64);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        // (b+1) * 2^31 / ((key >> 33) + 1), in floating point as in the paper.
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as u32
}

/// The paper's function computed as `floor((b+1) * 2^31 / (r+1))` in integers, falling
/// back to the paper's float expression only where the two could differ.
///
/// Why the answers are identical: the paper rounds twice (the quotient, then the
/// product), a relative error below `2^-52 + 2^-106`. When `(r+1)` does not divide
/// `(b+1) * 2^31`, the exact value lies at least `1/(r+1)` from every integer, and for
/// `b+1 < 2^21` the rounding error is below `(b+1) * 2^31 / (r+1) * 2^-51.99 < 1/(r+1)`,
/// so truncating the float gives the integer quotient. When the division is exact, the
/// float product can land just below the integer (`49 * fl(1/49) < 1`), so that case and
/// every `b+1 >= 2^21` take the float path. The integer division and its remainder are one
/// instruction, which is cheaper on the dependent chain than the paper's two
/// int/float conversions, multiply and truncation.
#[inline]
pub fn jump_integer(mut key: u64, buckets: NonZeroU32) -> u32 {
    let buckets = i64::from(buckets.get());
    let (mut b, mut j) = (-1i64, 0i64);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        let den = (key >> 33) + 1;
        // b + 1 <= buckets <= 2^32 - 1, so the shift stays below 2^63.
        let num = ((b + 1) as u64) << 31;
        j = if b + 1 < 1 << 21 && !num.is_multiple_of(den) {
            (num / den) as i64
        } else {
            ((b + 1) as f64 * ((1u64 << 31) as f64 / den as f64)) as i64
        };
    }
    b as u32
}

/// The same function with the bucket kept in floating point: the loop test compares the
/// untruncated product with n (for an integer n, `trunc(j) < n` exactly when `j < n`)
/// and truncation is one SSE4.1 `roundsd` instead of two int/float conversions. Every
/// value is computed with the same operations and roundings as [`jump_portable`], so the
/// answers are identical (the tests compare the two).
///
/// # Safety
/// The CPU must support SSE4.1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.1")]
#[inline]
pub unsafe fn jump_sse41(mut key: u64, buckets: NonZeroU32) -> u32 {
    let n = f64::from(buckets.get());
    let (mut b, mut j) = (-1.0f64, 0.0f64);
    while j < n {
        b = j.trunc();
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        // (key >> 33) + 1 <= 2^31, so the conversion through i64 is exact.
        j = (b + 1.0) * ((1u64 << 31) as f64 / (((key >> 33) + 1) as i64) as f64);
    }
    b as u32
}

/// Named nodes over jump-hash buckets: bucket i is served by `nodes[i]`.
///
/// Adding appends a bucket (the ideal 1/(n+1) of keys move). Removing the last node is
/// just as clean; removing any other node moves the last node into its bucket and drops
/// the last bucket, which moves the removed node's keys *and* most of the last node's:
/// about 2/n of all keys instead of 1/n. That is jump's known trade-off.
#[derive(Debug, Clone)]
pub struct JumpNodes {
    nodes: Vec<NodeSpec>,
    buckets: NonZeroU32,
    algorithm: JumpAlgorithm,
}

/// Which bucket function [`JumpNodes`] uses: both are consistent and monotone, they
/// differ in speed and in who else computes the same answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JumpAlgorithm {
    /// Lamping–Veach ([`jump`]): the same buckets as Google's and Guava's jump hash.
    #[default]
    LampingVeach,
    /// JumpBack hashing ([`crate::jump_back()`]): no floating point, about constant time,
    /// several times faster at 1000 buckets, but placement only this crate reproduces.
    JumpBack,
}

impl JumpNodes {
    /// One bucket per node, in order. Weights are ignored by jump (every bucket is equal)
    /// but still checked, so bad input is reported the same way everywhere.
    pub fn new(nodes: Vec<NodeSpec>) -> Result<Self, RingError> {
        Self::with_algorithm(nodes, JumpAlgorithm::LampingVeach)
    }

    /// [`JumpNodes::new`] with a choice of bucket function.
    pub fn with_algorithm(
        nodes: Vec<NodeSpec>,
        algorithm: JumpAlgorithm,
    ) -> Result<Self, RingError> {
        validate_nodes(&nodes)?;
        let buckets = u32::try_from(nodes.len())
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or(RingError::NoNodes)?;
        Ok(Self {
            nodes,
            buckets,
            algorithm,
        })
    }

    /// The bucket function in use.
    pub fn algorithm(&self) -> JumpAlgorithm {
        self.algorithm
    }

    #[inline]
    fn bucket(&self, hash: u64) -> usize {
        (match self.algorithm {
            JumpAlgorithm::LampingVeach => jump_nonzero(hash, self.buckets),
            JumpAlgorithm::JumpBack => jump_back_nonzero(hash, self.buckets),
        }) as usize
    }

    /// The nodes, bucket by bucket.
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// Bucket (index into [`JumpNodes::nodes`]) for an integer key.
    #[inline]
    pub fn node_index_for_u64(&self, key: u64) -> usize {
        self.bucket(hash_u64(key))
    }

    /// Node name for a byte-string key.
    #[inline]
    pub fn node_for(&self, key: impl AsRef<[u8]>) -> &str {
        &self.nodes[self.bucket(hash_bytes(key.as_ref()))].name
    }

    /// A copy with one more bucket, served by `node`.
    pub fn with_node(&self, node: NodeSpec) -> Result<Self, RingError> {
        let nodes = nodes_with(&self.nodes, node)?;
        Self::with_algorithm(nodes, self.algorithm)
    }

    /// A copy without the named node: the last node takes over its bucket.
    pub fn without_node(&self, name: &str) -> Result<Self, RingError> {
        let pos = self
            .nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| RingError::UnknownNode(name.to_owned()))?;
        if self.nodes.len() == 1 {
            return Err(RingError::LastNode(name.to_owned()));
        }
        let mut nodes = self.nodes.clone();
        nodes.swap_remove(pos);
        Self::with_algorithm(nodes, self.algorithm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::numbered_nodes;

    #[test]
    fn known_answers_from_the_paper_algorithm() {
        // Pinned outputs for 1 and 1000 buckets, and the range at 2^31-1 buckets.
        assert_eq!(jump(0, 1), Ok(0));
        assert_eq!(jump(u64::MAX, 1), Ok(0));
        let got: Vec<u32> = [1u64, 2, 3, 0xdead_beef, u64::MAX]
            .iter()
            .map(|&k| jump(k, 1000).unwrap())
            .collect();
        assert_eq!(got, KNOWN_1000);
        assert!(jump(12345, i32::MAX as u32).unwrap() < i32::MAX as u32);
    }

    /// Computed independently with the paper's C++ algorithm transcribed to Python.
    const KNOWN_1000: [u32; 5] = [549, 338, 961, 285, 313];

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn sse41_form_matches_the_portable_form() {
        if !std::arch::is_x86_feature_detected!("sse4.1") {
            return;
        }
        for k in 0..20_000u64 {
            let h = hash_u64(k);
            for n in [1u32, 2, 7, 100, 1000, 8192, 1 << 20, u32::MAX] {
                let n = NonZeroU32::new(n).unwrap();
                // SAFETY: checked above that the CPU has SSE4.1.
                assert_eq!(
                    unsafe { jump_sse41(h, n) },
                    jump_portable(h, n),
                    "key {h} n {n}"
                );
            }
        }
    }

    #[test]
    fn integer_form_matches_the_portable_form() {
        let sizes = [
            1u32,
            2,
            7,
            100,
            1000,
            1024,
            8192,
            1 << 20,
            1 << 21,
            u32::MAX,
        ];
        for k in 0..20_000u64 {
            let h = hash_u64(k);
            for n in sizes.into_iter().chain(1..=300) {
                let n = NonZeroU32::new(n).unwrap();
                assert_eq!(jump_integer(h, n), jump_portable(h, n), "key {h} n {n}");
            }
        }
    }

    #[test]
    fn integer_form_keeps_the_papers_rounding_on_exact_quotients() {
        // This key reaches bucket 48 and then draws r + 1 = 49 * 2^21: the exact quotient
        // is 1024 but the paper's floats give 1023.99.., so at n = 1024 a plain integer
        // division would answer 48 where the paper goes on (found by
        // `examples/lv_variants.rs`).
        let key = 0x26db_eace_da49_769c;
        let n = NonZeroU32::new(1024).unwrap();
        assert_eq!(jump_portable(key, n), 1023);
        assert_eq!(jump_integer(key, n), 1023);
    }

    #[test]
    fn zero_buckets_is_an_error() {
        assert_eq!(jump(1, 0), Err(RingError::ZeroBuckets));
        assert_eq!(JumpNodes::new(vec![]).unwrap_err(), RingError::NoNodes);
    }

    #[test]
    fn growing_moves_keys_only_to_the_new_bucket() {
        for k in 0..10_000u64 {
            let h = hash_u64(k);
            let (a, b) = (jump(h, 10).unwrap(), jump(h, 11).unwrap());
            assert!(a == b || b == 10, "key {k} moved {a} -> {b}");
        }
    }

    #[test]
    fn removing_a_middle_node_keeps_everyone_elses_keys_but_the_last() {
        let j = JumpNodes::new(numbered_nodes(5)).unwrap();
        let k = j.without_node("node-1").unwrap();
        let names: Vec<_> = k.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node-0", "node-4", "node-2", "node-3"]);
        for key in 0..5000u64 {
            let before = &j.nodes()[j.node_index_for_u64(key)].name;
            let after = &k.nodes()[k.node_index_for_u64(key)].name;
            if before != "node-1" && before != "node-4" {
                assert_eq!(before, after);
            }
        }
    }
}
