//! In-process figures for the embedded link stores, one store per run so
//! resident memory is that store's: load N links in batches of 4,096 (each batch one
//! durable commit), then resolve random codes, uniform and Zipf(1.0), on one thread.
//!
//! `cargo run --release -p shardkit-links --example store_scale -- KIND N DIR`
//! with KIND `segments` (the server's store, `SegmentLinkStore`), `compact` (the
//! previous one, records in redb), `json` (the oldest format), `convert` (N links in
//! the JSON format, then timed: their conversion by the compact store's open), `convert-segments`
//! (N links in the compact store, then timed: their conversion by the segment store's
//! open) or `segment` (the bare prototype: an append-only file with a dense per-group
//! offset index, no aliases, reuse, tags or deletes). Prints one JSON line.

use shardkit_links::{
    Codec, CompactLinkStore, Feistel, Link, LinkStore, RedbLinkStore, Redirect, SegmentLinkStore,
};
use std::io::Write as _;
use std::os::unix::fs::FileExt;
use std::time::Instant;

const BATCH: usize = 4096;
const LOOKUPS: u64 = 200_000;

fn link(i: u64, codec: &Codec) -> Link {
    let group = (i % 62) as u8;
    Link {
        id: (1 << 60) + i * 8192 + u64::from(group),
        url: format!("https://example.com/articles/{i}?ref=bench"),
        code: codec.encode(group, i / 62).unwrap(),
        alias: None,
        domain: None,
        title: None,
        created_at: 1_790_000_000_000 + i,
        expires_at: None,
        max_visits: None,
        redirect: Redirect::Found,
        tags: Vec::new(),
        password_hash: None,
        author: None,
        rules: vec![],
    }
}

/// xorshift64*: cheap random numbers, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rank r of N with P(r) ~ 1/r (continuous inverse CDF), scattered over the links.
fn zipf(rng: &mut Rng, n: u64) -> u64 {
    let r = ((n as f64 + 1.0).powf(rng.unit()) as u64).clamp(1, n) - 1;
    r.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Bytes under `dir`: apparent (file sizes) and allocated (blocks, as `du` counts).
fn dir_bytes(dir: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok().map(|m| (e.path(), m)))
                .map(|(p, m)| {
                    if m.is_dir() {
                        dir_bytes(&p)
                    } else {
                        (m.len(), m.blocks() * 512)
                    }
                })
                .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
        })
        .unwrap_or((0, 0))
}

/// The purpose-built alternative, reduced to its core: records appended to one file,
/// a dense index per group of u64 offsets (a file each), an fsync of both per batch.
struct Segment {
    data: std::fs::File,
    end: u64,
    index: Vec<std::fs::File>,
    codec: Codec,
}

impl Segment {
    fn open(dir: &std::path::Path, codec: Codec) -> Self {
        let data = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(dir.join("records"))
            .unwrap();
        let index = (0..62)
            .map(|g| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .read(true)
                    .write(true)
                    .truncate(false)
                    .open(dir.join(format!("g{g:02}")))
                    .unwrap()
            })
            .collect();
        Self {
            data,
            end: 0,
            index,
            codec,
        }
    }
    fn insert(&mut self, links: &[Link]) {
        let mut buf = Vec::new();
        let mut offsets: Vec<(u8, u64, u64)> = Vec::new();
        for l in links {
            let (g, idx) = self.codec.decode(&l.code).unwrap();
            offsets.push((g, idx, self.end + buf.len() as u64));
            let url = l.url.as_bytes();
            buf.extend_from_slice(&(url.len() as u32 + 16).to_le_bytes());
            buf.extend_from_slice(&l.id.to_le_bytes());
            buf.extend_from_slice(&l.created_at.to_le_bytes());
            buf.extend_from_slice(url);
        }
        self.data.write_all(&buf).unwrap();
        self.end += buf.len() as u64;
        let mut touched = [false; 62];
        for (g, idx, off) in offsets {
            self.index[g as usize]
                .write_all_at(&(off + 1).to_le_bytes(), idx * 8)
                .unwrap();
            touched[g as usize] = true;
        }
        self.data.sync_data().unwrap();
        for (g, t) in touched.iter().enumerate() {
            if *t {
                self.index[g].sync_data().unwrap();
            }
        }
    }
    fn resolve(&self, code: &str) -> Option<(u64, String)> {
        let (g, idx) = self.codec.decode(code)?;
        let mut off = [0u8; 8];
        self.index[g as usize]
            .read_exact_at(&mut off, idx * 8)
            .ok()?;
        let off = u64::from_le_bytes(off).checked_sub(1)?;
        let mut head = [0u8; 4];
        self.data.read_exact_at(&mut head, off).ok()?;
        let mut rec = vec![0u8; u32::from_le_bytes(head) as usize];
        self.data.read_exact_at(&mut rec, off + 4).ok()?;
        let id = u64::from_le_bytes(rec[..8].try_into().ok()?);
        Some((id, String::from_utf8(rec[16..].to_vec()).ok()?))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (kind, n, dir) = (
        args[1].as_str(),
        args[2].parse::<u64>().unwrap(),
        std::path::PathBuf::from(&args[3]),
    );
    std::fs::create_dir_all(&dir).unwrap();
    let codec = Codec::scrambled(Feistel::new([42; 16]));
    let mut segment = None;
    let store: Option<Box<dyn LinkStore>> = match kind {
        "segments" => Some(Box::new(
            SegmentLinkStore::open(dir.join("links.redb"), codec.clone(), 256 << 20).unwrap(),
        )),
        "compact" | "convert-segments" => Some(Box::new(
            CompactLinkStore::open(dir.join("links.redb"), codec.clone(), 256 << 20).unwrap(),
        )),
        "json" | "convert" => Some(Box::new(
            RedbLinkStore::open(dir.join("links.redb")).unwrap(),
        )),
        "segment" => {
            segment = Some(Segment::open(&dir, codec.clone()));
            None
        }
        other => panic!("unknown kind {other}"),
    };
    let start = Instant::now();
    let mut url_bytes = 0u64;
    let mut i = 0;
    while i < n {
        let batch: Vec<Link> = (i..(i + BATCH as u64).min(n))
            .map(|j| link(j, &codec))
            .collect();
        url_bytes += batch.iter().map(|l| l.url.len() as u64).sum::<u64>();
        match (&store, &mut segment) {
            (Some(s), _) => {
                s.insert_batch(&batch).unwrap();
            }
            (None, Some(seg)) => seg.insert(&batch),
            _ => unreachable!(),
        }
        i += batch.len() as u64;
    }
    let load_secs = start.elapsed().as_secs_f64();
    if kind == "convert" || kind == "convert-segments" {
        // The previous format converted by the next store's open.
        drop(store);
        let t = Instant::now();
        let converted: Box<dyn LinkStore> = if kind == "convert" {
            Box::new(
                CompactLinkStore::open(dir.join("links.redb"), codec.clone(), 256 << 20).unwrap(),
            )
        } else {
            Box::new(
                SegmentLinkStore::open(dir.join("links.redb"), codec.clone(), 256 << 20).unwrap(),
            )
        };
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(converted.count().unwrap(), n);
        println!(
            "{{\"kind\":\"{kind}\",\"links\":{n},\"convert_secs\":{secs:.1},\"links_per_s\":{:.0},\"rss_mib\":{:.1}}}",
            n as f64 / secs,
            rss_kib() as f64 / 1024.0
        );
        return;
    }
    let (disk, allocated) = dir_bytes(&dir);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut rates = Vec::new();
    for pick in ["uniform", "zipf"] {
        let t = Instant::now();
        for _ in 0..LOOKUPS {
            let j = if pick == "uniform" {
                rng.next() % n
            } else {
                zipf(&mut rng, n)
            };
            let l = link(j, &codec);
            let found = match (&store, &segment) {
                (Some(s), _) => s.resolve(&l.code).unwrap().map(|x| x.url),
                (None, Some(seg)) => seg.resolve(&l.code).map(|x| x.1),
                _ => unreachable!(),
            };
            assert_eq!(found.as_deref(), Some(l.url.as_str()));
        }
        rates.push(LOOKUPS as f64 / t.elapsed().as_secs_f64());
    }
    // Look-ups by id (the API's) and by URL (`"reuse": true`), uniform, fewer.
    for by in ["id", "url"] {
        let Some(s) = &store else {
            rates.push(0.0);
            continue;
        };
        let t = Instant::now();
        for _ in 0..LOOKUPS / 10 {
            let l = link(rng.next() % n, &codec);
            let found = if by == "id" {
                s.get(l.id).unwrap().map(|x| x.url)
            } else {
                s.find_reusable(&l.url, None).unwrap().map(|x| x.url)
            };
            assert_eq!(found.as_deref(), Some(l.url.as_str()));
        }
        rates.push((LOOKUPS / 10) as f64 / t.elapsed().as_secs_f64());
    }
    if matches!(kind, "compact" | "segments") && std::env::var_os("TABLE_STATS").is_some() {
        drop(store);
        table_stats(&dir.join("links.redb"));
        return;
    }
    let mut out = std::io::stdout();
    writeln!(
        out,
        "{{\"kind\":\"{kind}\",\"links\":{n},\"load_per_s\":{:.0},\"disk_bytes\":{disk},\"bytes_per_link_beyond_url\":{:.1},\"allocated_per_link_beyond_url\":{:.1},\"resolve_uniform_per_s\":{:.0},\"resolve_zipf_per_s\":{:.0},\"get_by_id_per_s\":{:.0},\"find_by_url_per_s\":{:.0},\"rss_mib\":{:.1}}}",
        n as f64 / load_secs,
        (disk as f64 - url_bytes as f64) / n as f64,
        (allocated as f64 - url_bytes as f64) / n as f64,
        rates[0],
        rates[1],
        rates[2],
        rates[3],
        rss_kib() as f64 / 1024.0
    )
    .unwrap();
}

/// Where the compact store's bytes go (`TABLE_STATS=1`): per table, leaf and branch
/// pages and the bytes stored in them, then the whole file.
fn table_stats(path: &std::path::Path) {
    use redb::{ReadableTableMetadata, TableDefinition};
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_read().unwrap();
    fn show(name: &str, stats: redb::TableStats) {
        println!(
            "{name:<14} leaf_pages {:>8} branch_pages {:>6} stored_bytes {:>11} metadata_bytes {:>10} fragmented_bytes {:>11}",
            stats.leaf_pages(), stats.branch_pages(), stats.stored_bytes(), stats.metadata_bytes(), stats.fragmented_bytes()
        );
    }
    let records: TableDefinition<u64, &[u8]> = TableDefinition::new("link_records");
    let ids: TableDefinition<u64, u64> = TableDefinition::new("link_ids");
    let urls: TableDefinition<u128, ()> = TableDefinition::new("link_urls");
    if let Ok(table) = txn.open_table(records) {
        show("link_records", table.stats().unwrap());
    }
    show("link_ids", txn.open_table(ids).unwrap().stats().unwrap());
    show("link_urls", txn.open_table(urls).unwrap().stats().unwrap());
    drop(txn);
    let mut db = db;
    let before = std::fs::metadata(path).unwrap().len();
    db.compact().unwrap();
    println!(
        "file {before} bytes, after Database::compact {}",
        std::fs::metadata(path).unwrap().len()
    );
}
