//! Side-by-side figures for the PostgreSQL and MariaDB backends, all in one run on the machine's PostgreSQL and
//! MariaDB (fresh databases, dropped after):
//!
//! 1. rows/s inserted with ids from `next_id()`: one shard, 64 shards, Instagram's
//!    published function (no lock, wraps past 1024/ms), and a plain `bigserial` key;
//!    single-row inserts from C connections, and 10,000-row `INSERT … SELECT`s;
//! 2. ticket numbers/s from a MariaDB pair: segments of 1,000 (one REPLACE per block)
//!    against Flickr's one REPLACE per number.
//!
//! Usage: `cargo run --release -p shardkit-pg --example pg-bench -- [SECONDS] [CONNECTIONS]`
//! (defaults 5 and 4). Reads SHARDKIT_PG_URL / SHARDKIT_MYSQL_URL.

use shardkit_ids::tickets::{SegmentAllocator, SequenceSpec, TicketStore};
use shardkit_pg::tickets::mysql::{FailoverOptions, MysqlTicketServers};
use shardkit_pg::tickets::{segment_options, BlockSize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn with_db(url: &str, db: &str) -> String {
    let base = url.split('?').next().unwrap_or(url);
    format!("{}/{db}", &base[..base.rfind('/').unwrap_or(base.len())])
}

const PUBLISHED: &str = r#"
CREATE SCHEMA published;
CREATE SEQUENCE published.table_id_seq;
CREATE OR REPLACE FUNCTION published.next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1704067200000;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('published.table_id_seq') % 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE PLPGSQL;
CREATE TABLE published.links (id bigint PRIMARY KEY DEFAULT published.next_id(), code text NOT NULL UNIQUE, url text NOT NULL, url_hash bigint NOT NULL);
CREATE TABLE plain_links (id bigserial PRIMARY KEY, code text NOT NULL UNIQUE, url text NOT NULL, url_hash bigint NOT NULL);
"#;

/// Single-row inserts from `connections` connections for `secs`; `table(i)` picks the table of the i-th insert.
async fn single_rows(
    url: &str,
    connections: usize,
    secs: u64,
    tag: &'static str,
    table: fn(u64) -> String,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let started = Instant::now();
    for c in 0..connections {
        let (url, stop, done) = (url.to_string(), stop.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let client = shardkit_pg::connect::connect(&url).await.unwrap();
            let mut i = c as u64;
            while !stop.load(Ordering::Relaxed) {
                let sql = format!(
                    "INSERT INTO {} (code, url, url_hash) VALUES ($1, 'https://example.com/', 0)",
                    table(i)
                );
                client
                    .execute(sql.as_str(), &[&format!("{tag}{c}-{i}")])
                    .await
                    .unwrap();
                i += connections as u64;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// 10,000-row INSERT … SELECT statements into `table` from one connection, for `secs`.
async fn bulk_rows(url: &str, secs: u64, table: &str, tag: &str) -> f64 {
    let client = shardkit_pg::connect::connect(url).await.unwrap();
    let started = Instant::now();
    let mut rows = 0u64;
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(secs) {
        let sql = format!(
            "INSERT INTO {table} (code, url, url_hash) SELECT 'b{tag}{round}-' || g, 'https://example.com/', g FROM generate_series(1, 10000) g"
        );
        rows += client.execute(sql.as_str(), &[]).await.unwrap();
        round += 1;
    }
    rows as f64 / started.elapsed().as_secs_f64()
}

fn tickets_per_second(threads: usize, secs: u64, next: Arc<dyn Fn() -> u64 + Send + Sync>) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (stop, next) = (stop.clone(), next.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(next());
                    n += 1;
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    total as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let connections: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let pg = std::env::var("SHARDKIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let my = std::env::var("SHARDKIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into());
    let db = format!("sk_bench_{}", std::process::id());

    let admin = shardkit_pg::connect::connect(&pg).await.unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    let url = with_db(&pg, &db);
    shardkit_pg::init(&shardkit_pg::InitOptions {
        servers: vec![url.clone()],
        logical_shards: 64,
        epoch_unix_ms: None,
    })
    .await
    .unwrap();
    shardkit_pg::connect::connect(&url)
        .await
        .unwrap()
        .batch_execute(PUBLISHED)
        .await
        .unwrap();

    println!(
        "## PostgreSQL inserts/s ({connections} connections, {secs} s each, single-row inserts)"
    );
    let plain = single_rows(&url, connections, secs, "p", |_| "plain_links".into()).await;
    let one = single_rows(&url, connections, secs, "o", |_| "shard_0000.links".into()).await;
    let many = single_rows(&url, connections, secs, "m", |i| {
        format!("shard_{:04}.links", i % 64)
    })
    .await;
    let published = single_rows(&url, connections, secs, "w", |_| "published.links".into()).await;
    println!("| key | rows/s | vs bigserial |\n|---|---:|---:|");
    for (what, rate) in [
        ("bigserial", plain),
        ("next_id(), 1 shard", one),
        ("next_id(), 64 shards", many),
        ("published next_id() (wraps)", published),
    ] {
        println!("| {what} | {rate:.0} | {:.2}x |", rate / plain);
    }
    println!("\n## PostgreSQL rows/s, 10,000-row INSERT ... SELECT, one connection, {secs} s each");
    let plain_bulk = bulk_rows(&url, secs, "plain_links", "p").await;
    let one_bulk = bulk_rows(&url, secs, "shard_0001.links", "o").await;
    let published_bulk = bulk_rows(&url, secs, "published.links", "w").await;
    println!("| key | rows/s | vs bigserial |\n|---|---:|---:|");
    for (what, rate) in [
        ("bigserial", plain_bulk),
        ("next_id(), 1 shard", one_bulk),
        ("published next_id() (wraps)", published_bulk),
    ] {
        println!("| {what} | {rate:.0} | {:.2}x |", rate / plain_bulk);
    }
    drop(admin);
    let admin = shardkit_pg::connect::connect(&pg).await.unwrap();
    admin
        .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
        .await
        .unwrap();

    // MariaDB: two databases as the two ticket servers.
    let (a, b) = (format!("{db}_a"), format!("{db}_b"));
    let my_admin = my.clone();
    let (a2, b2) = (a.clone(), b.clone());
    tokio::task::spawn_blocking(move || {
        let servers = |block| MysqlTicketServers::new(&[with_db(&my_admin, &a2), with_db(&my_admin, &b2)], block, FailoverOptions::default()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            use mysql_async::prelude::Queryable;
            let mut c = mysql_async::Conn::from_url(my_admin.as_str()).await.unwrap();
            c.query_drop(format!("CREATE DATABASE {a2}")).await.unwrap();
            c.query_drop(format!("CREATE DATABASE {b2}")).await.unwrap();
        });
        println!("\n## MariaDB ticket numbers/s (two servers, odd/even, {connections} threads, {secs} s each)");
        let per_number = Arc::new(servers(BlockSize::ONE));
        let s = per_number.clone();
        let flickr = tickets_per_second(connections, secs, Arc::new(move || s.reserve("bench", SequenceSpec::default(), 1).unwrap()));
        let block = BlockSize::new(1000);
        let alloc = Arc::new(SegmentAllocator::new(servers(block), "bench_seg", SequenceSpec::default(), segment_options(block)).unwrap());
        let al = alloc.clone();
        let segmented = tickets_per_second(connections, secs, Arc::new(move || al.next().unwrap()));
        println!("| mode | numbers/s | ratio |\n|---|---:|---:|");
        println!("| one REPLACE per number (Flickr) | {flickr:.0} | 1.00x |");
        println!("| segments of 1,000 (one REPLACE per block) | {segmented:.0} | {:.0}x |", segmented / flickr);
        drop(per_number);
        drop(alloc);
        rt.block_on(async {
            use mysql_async::prelude::Queryable;
            let mut c = mysql_async::Conn::from_url(my_admin.as_str()).await.unwrap();
            c.query_drop(format!("DROP DATABASE {a2}")).await.unwrap();
            c.query_drop(format!("DROP DATABASE {b2}")).await.unwrap();
        });
    })
    .await
    .unwrap();
}
