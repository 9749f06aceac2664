//! Measures the cold tier's block format on realistic rows, to pick its codec.
//!
//! `cargo run --release -p shardkit-counters --example cold-blocks -- [ROWS...]` (default
//! 1,000,000 and 10,000,000 rows) makes Instagram-layout ids at 2,000 ids per second of
//! simulated time (41-bit ms, 13-bit shard picked at random, 10-bit sequence) with two 16-bit
//! columns of skewed values (Pareto: most counts small, a long tail up to 65,534), sorts
//! them as a partition would be, cuts them into blocks of 1,024 / 4,096 / 16,384 rows and
//! prints, per format and codec, the bytes per row on disk (headers and CRCs included),
//! then the time to decode one block and to `get` one id from it, both formats under zstd.
//!
//! Version 1 (one stream of varints, compressed whole) with: the raw part stored as is,
//! lz4 (`lz4_flex`, no entropy coding), zstd at levels 1, 3 (the format's [`ZSTD_LEVEL`])
//! and 9; and, for the choice "varint columns or columns packed at their widths", the same
//! rows with both columns packed at 16 bits under zstd 3 (`zstd-3 packed cols`). Version 2
//! (the one the engine writes: gaps in byte planes, sections compressed one by one)
//! stored as is and under zstd 3.

use std::time::Instant;

use shardkit_counters::cold_block::{
    decode_block, encode_block, encode_block_version_1, get, BlockError, BlockIndexEntry, Codec,
    ZSTD_LEVEL,
};

type Encoder = fn(&[u64], &[&[u64]], &[u8], Codec) -> Result<Vec<u8>, BlockError>;

struct Rng(u64);

impl Rng {
    /// splitmix64, as in the memory benchmark's id maker.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// A Pareto value of shape `alpha`, at least 1, capped below the 16-bit marker.
    fn skewed(&mut self, alpha: f64) -> u64 {
        (self.unit().powf(-1.0 / alpha) as u64).min(65_534)
    }
}

/// Instagram-layout ids at 2,000 per simulated second, sorted, with two skewed columns.
fn rows(n: usize) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let mut rng = Rng(0x5EED);
    let mut seq = std::collections::HashMap::new();
    let mut last_ms = u64::MAX;
    let mut ids = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let ms = 6 * 365 * 86_400_000u64 + i / 2;
        if ms != last_ms {
            seq.clear();
            last_ms = ms;
        }
        let shard = rng.next() % 8192;
        let s = seq.entry(shard).or_insert(0u64);
        ids.push((ms << 23) | (shard << 10) | *s);
        *s += 1;
    }
    ids.sort_unstable();
    ids.dedup();
    let a = (0..ids.len()).map(|_| rng.skewed(1.0)).collect();
    let b = (0..ids.len()).map(|_| rng.skewed(1.5)).collect();
    (ids, a, b)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let counts = if args.is_empty() {
        vec![1_000_000, 10_000_000]
    } else {
        args
    };
    let header = 36 + 2; // fixed header and two widths
    for n in counts {
        let (ids, a, b) = rows(n);
        let n = ids.len();
        println!("rows {n}");
        for block_rows in [1024usize, 4096, 16_384] {
            let mut sizes = [0usize; 8];
            let names = [
                "v1 none",
                "v1 lz4",
                "v1 zstd-1",
                "v1 zstd-3",
                "v1 zstd-9",
                "v1 zstd-3 packed cols",
                "v2 none",
                "v2 zstd-3",
            ];
            for start in (0..n).step_by(block_rows) {
                let end = (start + block_rows).min(n);
                let (i, ca, cb) = (&ids[start..end], &a[start..end], &b[start..end]);
                let plain = encode_block_version_1(i, &[ca, cb], &[16, 16], Codec::None).unwrap();
                let raw = &plain[header..plain.len() - 4];
                let frame = header + 4;
                sizes[0] += plain.len();
                sizes[1] += frame + lz4_flex::compress(raw).len();
                sizes[2] += frame + zstd::bulk::compress(raw, 1).unwrap().len();
                sizes[3] += encode_block_version_1(i, &[ca, cb], &[16, 16], Codec::Zstd)
                    .unwrap()
                    .len();
                sizes[4] += frame + zstd::bulk::compress(raw, 9).unwrap().len();
                let mut alt = Vec::new();
                for w in i.windows(2) {
                    varint(&mut alt, w[1] - w[0]);
                }
                ca.iter()
                    .chain(cb)
                    .for_each(|&v| alt.extend_from_slice(&(v as u16).to_le_bytes()));
                sizes[5] += frame + zstd::bulk::compress(&alt, ZSTD_LEVEL).unwrap().len();
                for (k, codec) in [(6, Codec::None), (7, Codec::Zstd)] {
                    sizes[k] += encode_block(i, &[ca, cb], &[16, 16], codec).unwrap().len();
                }
            }
            let line: Vec<String> = names
                .iter()
                .zip(sizes)
                .map(|(name, s)| format!("{name} {:.2}", s as f64 / n as f64))
                .collect();
            println!(
                "  {block_rows:>6} rows/block, bytes/row: {}",
                line.join(", ")
            );
        }

        let formats: [(&str, Encoder); 2] = [("v1", encode_block_version_1), ("v2", encode_block)];
        for (format, encode) in formats {
            for block_rows in [1024, 4096] {
                decode_cost(&ids, &a, &b, format, encode, block_rows);
            }
        }
    }
}

/// Prints the time to decode one block and to `get` one id, in `format` under zstd.
fn decode_cost(
    ids: &[u64],
    a: &[u64],
    b: &[u64],
    format: &str,
    encode: Encoder,
    block_rows: usize,
) {
    let n = ids.len();
    {
        let mut blocks = Vec::new();
        let mut offset = 0u64;
        for start in (0..n).step_by(block_rows) {
            let end = (start + block_rows).min(n);
            let bytes = encode(
                &ids[start..end],
                &[&a[start..end], &b[start..end]],
                &[16, 16],
                Codec::Zstd,
            )
            .unwrap();
            let entry = BlockIndexEntry {
                first_id: ids[start],
                last_id: ids[end - 1],
                offset,
                len: bytes.len() as u32,
            };
            offset += bytes.len() as u64;
            blocks.push((entry, bytes));
        }
        let t = Instant::now();
        let mut total = 0usize;
        for (entry, bytes) in &blocks {
            total += decode_block(bytes, entry).unwrap().ids.len();
        }
        let per_block = t.elapsed().as_secs_f64() / blocks.len() as f64;
        assert_eq!(total, n);
        let mut rng = Rng(7);
        let gets = 20_000;
        let t = Instant::now();
        for _ in 0..gets {
            let r = (rng.next() % n as u64) as usize;
            let (entry, bytes) = &blocks[r / block_rows];
            let got = get(bytes, entry, ids[r]).unwrap().unwrap();
            assert_eq!(got, vec![a[r], b[r]]);
        }
        let per_get = t.elapsed().as_secs_f64() / gets as f64;
        println!(
            "  {format} zstd-{ZSTD_LEVEL}, {block_rows} rows/block: {} blocks, {:.0} bytes/block, decode {:.1} us/block, get {:.1} us",
            blocks.len(),
            offset as f64 / blocks.len() as f64,
            per_block * 1e6,
            per_get * 1e6
        );
    }
}
