//! `move_shard` under a steady stream of creates and reads on the shard being moved:
//! every acknowledged create is on the new server afterwards, no read fails (a client
//! that hits the dropped old copy re-reads the map and retries), the old copy is gone,
//! and ids made on the new server continue above the old ones.

mod common;

use common::PgDb;
use shardkit_pg::{init, move_shard, Cluster, InitOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::RwLock;

const SHARD: u32 = 2;

/// Runs `op` against the shard's current server, re-reading the map and retrying on error.
async fn with_retry<T>(
    cluster: &RwLock<Cluster>,
    urls: &[String],
    retries: &AtomicU64,
    op: impl Fn(deadpool_postgres::Object) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send>>,
) -> T {
    for _ in 0..200 {
        let client = cluster.read().await.client_for_shard(SHARD).await;
        if let Ok(client) = client {
            if let Ok(value) = op(client).await {
                return value;
            }
        }
        retries.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(10)).await;
        if let Ok(fresh) = Cluster::open(urls, 4).await {
            *cluster.write().await = fresh;
        }
    }
    panic!("shard {SHARD} unavailable for 200 tries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shard_moves_under_creates_and_reads_without_loss() {
    let (a, b) = (PgDb::create("mv_a").await, PgDb::create("mv_b").await);
    init(&InitOptions { servers: vec![a.url.clone()], logical_shards: 4, epoch_unix_ms: None }).await.unwrap();
    let urls = vec![a.url.clone(), b.url.clone()];
    let cluster = Arc::new(RwLock::new(Cluster::open(&urls, 4).await.unwrap()));
    let stop = Arc::new(AtomicBool::new(false));
    let retries = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));

    let writer = {
        let (cluster, urls, stop, retries, acked) = (cluster.clone(), urls.clone(), stop.clone(), retries.clone(), acked.clone());
        tokio::spawn(async move {
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let code = format!("k{k}");
                let c = code.clone();
                with_retry(&cluster, &urls, &retries, move |client| {
                    let c = c.clone();
                    Box::pin(async move {
                        client
                            .execute("INSERT INTO shard_0002.links (code, url, url_hash) VALUES ($1, 'https://example.com/' || $1, 0)", &[&c])
                            .await
                    })
                })
                .await;
                acked.lock().push(code);
                k += 1;
            }
        })
    };
    let reader = {
        let (cluster, urls, stop, retries, acked) = (cluster.clone(), urls.clone(), stop.clone(), retries.clone(), acked.clone());
        tokio::spawn(async move {
            let mut missing = 0u64;
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let Some(code) = acked.lock().last().cloned() else {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                };
                let found = with_retry(&cluster, &urls, &retries, move |client| {
                    let code = code.clone();
                    Box::pin(async move { client.query_opt("SELECT url FROM shard_0002.links WHERE code = $1", &[&code]).await })
                })
                .await;
                missing += u64::from(found.is_none());
                reads += 1;
            }
            (reads, missing)
        })
    };

    // Let the stream run, move the shard under it, let it run on the new server.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let report = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let (reads, missing) = reader.await.unwrap();

    assert_eq!(report.map_version, 2);
    assert!(report.rows > 0);
    assert!(reads > 0);
    assert_eq!(missing, 0, "a read of an acknowledged create found nothing");

    let on_b = shardkit_pg::connect::connect(&b.url).await.unwrap();
    let acked = acked.lock().clone();
    let present: i64 = on_b
        .query_one("SELECT count(*) FROM shard_0002.links WHERE code = ANY($1)", &[&acked])
        .await
        .unwrap()
        .get(0);
    assert_eq!(present as usize, acked.len(), "acknowledged creates lost");

    let on_a = shardkit_pg::connect::connect(&a.url).await.unwrap();
    let old: bool = on_a.query_one("SELECT to_regnamespace('shard_0002') IS NULL", &[]).await.unwrap().get(0);
    assert!(old, "the old copy is still there");

    let fresh = Cluster::open(&urls, 1).await.unwrap();
    assert_eq!(fresh.map().version(), 2);
    assert_eq!(fresh.server_for_shard(SHARD), Some(shardkit_pg::redact_url(&b.url).as_str()));
    assert_eq!(fresh.server_for_shard(0), Some(shardkit_pg::redact_url(&a.url).as_str()));
    let max: i64 = on_b.query_one("SELECT max(id) FROM shard_0002.links", &[]).await.unwrap().get(0);
    let next: i64 = on_b.query_one("SELECT shard_0002.next_id()", &[]).await.unwrap().get(0);
    assert!(next > max);
}
