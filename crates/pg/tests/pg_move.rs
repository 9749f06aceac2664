//! `move_shard` under load on the shard being moved:
//! - a steady stream of creates and reads: every acknowledged create is on the new
//!   server afterwards, no read fails (a client that hits the dropped old copy re-reads
//!   the map and retries), the old copy is gone, and ids made on the new server continue
//!   above the old ones;
//! - creates, updates, deletes and alias moves, every acknowledged one applied to a model:
//!   the new server holds exactly the model afterwards, row by row;
//! - moves that fail part-way leave the shard serving where it was, without change
//!   capture, and a re-run succeeds.

mod common;

use common::PgDb;
use shardkit_pg::{init, move_shard, redact_url, Cluster, InitOptions};
use std::collections::BTreeMap;
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
    op: impl Fn(
        deadpool_postgres::Object,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send>,
    >,
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

/// Two databases (servers), a 4-shard cluster on the first, and the shared state of a
/// stream of creates into shard 2 ([`spawn_creates`]).
struct Stream {
    a: PgDb,
    b: PgDb,
    urls: Vec<String>,
    cluster: Arc<RwLock<Cluster>>,
    stop: Arc<AtomicBool>,
    retries: Arc<AtomicU64>,
    acked: Arc<parking_lot::Mutex<Vec<String>>>,
}

impl Stream {
    async fn new(tag: &str) -> Self {
        let (a, b) = (
            PgDb::create(&format!("{tag}_a")).await,
            PgDb::create(&format!("{tag}_b")).await,
        );
        init(&InitOptions {
            servers: vec![a.url.clone()],
            logical_shards: 4,
            epoch_unix_ms: None,
        })
        .await
        .unwrap();
        let urls = vec![a.url.clone(), b.url.clone()];
        let cluster = Arc::new(RwLock::new(Cluster::open(&urls, 4).await.unwrap()));
        Self {
            a,
            b,
            urls,
            cluster,
            stop: Arc::default(),
            retries: Arc::default(),
            acked: Arc::default(),
        }
    }
}

/// A task inserting links `k0`, `k1`, ... into the moved shard until `stop`, each
/// through [`with_retry`], pushing every acknowledged code to `acked`.
fn spawn_creates(
    cluster: &Arc<RwLock<Cluster>>,
    urls: &[String],
    stop: &Arc<AtomicBool>,
    retries: &Arc<AtomicU64>,
    acked: &Arc<parking_lot::Mutex<Vec<String>>>,
) -> tokio::task::JoinHandle<()> {
    let (cluster, urls, stop, retries, acked) = (
        cluster.clone(),
        urls.to_vec(),
        stop.clone(),
        retries.clone(),
        acked.clone(),
    );
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shard_moves_under_creates_and_reads_without_loss() {
    let Stream {
        a,
        b,
        urls,
        cluster,
        stop,
        retries,
        acked,
    } = Stream::new("mv").await;

    let writer = spawn_creates(&cluster, &urls, &stop, &retries, &acked);
    let reader = {
        let (cluster, urls, stop, retries, acked) = (
            cluster.clone(),
            urls.clone(),
            stop.clone(),
            retries.clone(),
            acked.clone(),
        );
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
                    Box::pin(async move {
                        client
                            .query_opt("SELECT url FROM shard_0002.links WHERE code = $1", &[&code])
                            .await
                    })
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
    let report = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap();
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
        .query_one(
            "SELECT count(*) FROM shard_0002.links WHERE code = ANY($1)",
            &[&acked],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(present as usize, acked.len(), "acknowledged creates lost");

    let on_a = shardkit_pg::connect::connect(&a.url).await.unwrap();
    let old: bool = on_a
        .query_one("SELECT to_regnamespace('shard_0002') IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(old, "the old copy is still there");

    let fresh = Cluster::open(&urls, 1).await.unwrap();
    assert_eq!(fresh.map().version(), 2);
    assert_eq!(
        fresh.server_for_shard(SHARD),
        Some(shardkit_pg::redact_url(&b.url).as_str())
    );
    assert_eq!(
        fresh.server_for_shard(0),
        Some(shardkit_pg::redact_url(&a.url).as_str())
    );
    let max: i64 = on_b
        .query_one("SELECT max(id) FROM shard_0002.links", &[])
        .await
        .unwrap()
        .get(0);
    let next: i64 = on_b
        .query_one("SELECT shard_0002.next_id()", &[])
        .await
        .unwrap()
        .get(0);
    assert!(next > max);
}

/// A `links` row, every column.
#[derive(Debug, Clone, PartialEq)]
struct LinkRow {
    code: String,
    alias: bool,
    alias_name: Option<String>,
    url: String,
    url_hash: i64,
    created_at: String,
    expires_at: Option<String>,
    max_visits: Option<i64>,
    redirect: i16,
    tags: Vec<String>,
}

/// A `link_urls` row without its id (the key), every column.
#[derive(Debug, Clone, PartialEq)]
struct UrlRow {
    url_hash: i64,
    url: String,
    code: String,
    created_at: String,
}

/// The full contents of the shard's three tables, keyed by their primary keys.
#[derive(Debug, Clone, PartialEq, Default)]
struct State {
    links: BTreeMap<i64, LinkRow>,
    /// alias -> (id, code)
    aliases: BTreeMap<String, (i64, String)>,
    urls: BTreeMap<i64, UrlRow>,
}

/// Reads every row of shard 2's tables at `url`.
async fn read_state(url: &str) -> State {
    let client = shardkit_pg::connect::connect(url).await.unwrap();
    let mut state = State::default();
    let links = client
        .query(
            "SELECT id, code, alias, alias_name, url, url_hash, created_at::text, expires_at::text, max_visits, redirect, tags \
             FROM shard_0002.links",
            &[],
        )
        .await
        .unwrap();
    for r in links {
        let row = LinkRow {
            code: r.get(1),
            alias: r.get(2),
            alias_name: r.get(3),
            url: r.get(4),
            url_hash: r.get(5),
            created_at: r.get(6),
            expires_at: r.get(7),
            max_visits: r.get(8),
            redirect: r.get(9),
            tags: r.get(10),
        };
        assert!(state.links.insert(r.get(0), row).is_none());
    }
    for r in client
        .query("SELECT alias, id, code FROM shard_0002.link_aliases", &[])
        .await
        .unwrap()
    {
        assert!(state
            .aliases
            .insert(r.get(0), (r.get(1), r.get(2)))
            .is_none());
    }
    for r in client
        .query(
            "SELECT id, url_hash, url, code, created_at::text FROM shard_0002.link_urls",
            &[],
        )
        .await
        .unwrap()
    {
        let row = UrlRow {
            url_hash: r.get(1),
            url: r.get(2),
            code: r.get(3),
            created_at: r.get(4),
        };
        assert!(state.urls.insert(r.get(0), row).is_none());
    }
    state
}

/// What differs between two maps, briefly: counts and the first few keys.
fn differences<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    name: &str,
    found: &BTreeMap<K, V>,
    want: &BTreeMap<K, V>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in want {
        match found.get(k) {
            None => out.push(format!("{name} {k:?}: missing, want {v:?}")),
            Some(f) if f != v => out.push(format!("{name} {k:?}: found {f:?}, want {v:?}")),
            _ => {}
        }
    }
    for (k, f) in found {
        if !want.contains_key(k) {
            out.push(format!("{name} {k:?}: found {f:?}, want none"));
        }
    }
    out
}

/// A small deterministic generator (no dependency for one test).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as usize
    }
}

/// A key of `map` picked by `r`.
fn pick<K: Clone, V>(map: &BTreeMap<K, V>, r: usize) -> Option<K> {
    if map.is_empty() {
        return None;
    }
    map.keys().nth(r % map.len()).cloned()
}

type Boxed<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send>>;

/// One random acknowledged write to shard 2, applied to `model` once acknowledged; an
/// unexpected row count is recorded in `anomalies`.
async fn random_write(
    k: u64,
    rng: &mut Rng,
    model: &mut State,
    anomalies: &mut Vec<String>,
    (cluster, urls, retries): (&RwLock<Cluster>, &[String], &AtomicU64),
) {
    let r = rng.next();
    let (link, alias) = (
        pick(&model.links, rng.next()),
        pick(&model.aliases, rng.next()),
    );
    match (r % 20, link, alias) {
        (5..=8, Some(id), _) => {
            // Update a link (often one the bulk copy already took) and its URL index row.
            let (url, hash, tags) = (
                format!("https://example.com/u{k}"),
                k as i64,
                vec![format!("u{k}"), "x".to_string()],
            );
            let (u, t) = (url.clone(), tags.clone());
            let counts: (i64, i64) = with_retry(cluster, urls, retries, move |c| -> Boxed<(i64, i64)> {
                let (url, tags) = (u.clone(), t.clone());
                Box::pin(async move {
                    let row = c
                        .query_one(
                            "WITH a AS (UPDATE shard_0002.links SET url = $2, url_hash = $3, tags = $4, redirect = 307, max_visits = $3 \
                             WHERE id = $1 RETURNING id), \
                             b AS (UPDATE shard_0002.link_urls SET url = $2, url_hash = $3 WHERE id = $1 RETURNING id) \
                             SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b)",
                            &[&id, &url, &hash, &tags],
                        )
                        .await?;
                    Ok((row.get(0), row.get(1)))
                })
            })
            .await;
            if counts != (1, 1) {
                anomalies.push(format!("update of link {id} changed {counts:?} rows"));
            }
            if let Some(l) = model.links.get_mut(&id) {
                (l.url, l.url_hash, l.tags, l.redirect, l.max_visits) =
                    (url.clone(), hash, tags, 307, Some(hash));
            }
            if let Some(u) = model.urls.get_mut(&id) {
                (u.url, u.url_hash) = (url, hash);
            }
        }
        (9..=10, Some(id), _) => {
            // Delete a link with its URL index row and aliases.
            let counts: (i64, i64, i64) = with_retry(cluster, urls, retries, move |c| -> Boxed<(i64, i64, i64)> {
                Box::pin(async move {
                    let row = c
                        .query_one(
                            "WITH a AS (DELETE FROM shard_0002.links WHERE id = $1 RETURNING id), \
                             b AS (DELETE FROM shard_0002.link_urls WHERE id = $1 RETURNING id), \
                             c AS (DELETE FROM shard_0002.link_aliases WHERE id = $1 RETURNING id) \
                             SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b), (SELECT count(*) FROM c)",
                            &[&id],
                        )
                        .await?;
                    Ok((row.get(0), row.get(1), row.get(2)))
                })
            })
            .await;
            let aliases = model.aliases.values().filter(|(i, _)| *i == id).count() as i64;
            if counts != (1, 1, aliases) {
                anomalies.push(format!(
                    "delete of link {id} changed {counts:?} rows, want (1, 1, {aliases})"
                ));
            }
            model.links.remove(&id);
            model.urls.remove(&id);
            model.aliases.retain(|_, (i, _)| *i != id);
        }
        (11..=12, Some(id), _) => {
            // A new alias row for an old link: its id is below the last one copied.
            let (alias, code) = (format!("wa{k}"), model.links[&id].code.clone());
            let (a, c2) = (alias.clone(), code.clone());
            let n = with_retry(cluster, urls, retries, move |c| -> Boxed<u64> {
                let (a, code) = (a.clone(), c2.clone());
                Box::pin(async move {
                    c.execute(
                        "INSERT INTO shard_0002.link_aliases (alias, id, code) VALUES ($1, $2, $3)",
                        &[&a, &id, &code],
                    )
                    .await
                })
            })
            .await;
            if n != 1 {
                anomalies.push(format!("alias {alias} for {id}: {n} rows"));
            }
            model.aliases.insert(alias, (id, code));
        }
        (13..=17, Some(to), Some(alias)) => {
            // Re-point an alias from link X to link Y: delete + insert in one transaction,
            // or one UPDATE of its id.
            let (from, code) = (model.aliases[&alias].0, model.links[&to].code.clone());
            let by_update = r % 20 >= 16;
            let (a, c2) = (alias.clone(), code.clone());
            let n = with_retry(cluster, urls, retries, move |c| -> Boxed<u64> {
                let (a, code) = (a.clone(), c2.clone());
                Box::pin(async move {
                    if by_update {
                        return c
                            .execute("UPDATE shard_0002.link_aliases SET id = $2, code = $3 WHERE alias = $1", &[&a, &to, &code])
                            .await;
                    }
                    let mut c = c;
                    let tx = c.transaction().await?;
                    let d = tx.execute("DELETE FROM shard_0002.link_aliases WHERE alias = $1 AND id = $2", &[&a, &from]).await?;
                    let i =
                        tx.execute("INSERT INTO shard_0002.link_aliases (alias, id, code) VALUES ($1, $2, $3)", &[&a, &to, &code]).await?;
                    tx.commit().await?;
                    Ok(d * 10 + i)
                })
            })
            .await;
            let want = if by_update { 1 } else { 11 };
            if n != want {
                anomalies.push(format!(
                    "re-pointing alias {alias} from {from} to {to}: {n}, want {want}"
                ));
            }
            model.aliases.insert(alias, (to, code));
        }
        (18..=19, _, Some(alias)) => {
            let a = alias.clone();
            let n = with_retry(cluster, urls, retries, move |c| -> Boxed<u64> {
                let a = a.clone();
                Box::pin(async move {
                    c.execute(
                        "DELETE FROM shard_0002.link_aliases WHERE alias = $1",
                        &[&a],
                    )
                    .await
                })
            })
            .await;
            if n != 1 {
                anomalies.push(format!("deleting alias {alias}: {n} rows"));
            }
            model.aliases.remove(&alias);
        }
        _ => {
            // Create a link with its URL index row, in one statement.
            let (code, url, tags) = (
                format!("w{k}"),
                format!("https://example.com/w{k}"),
                vec![format!("t{}", k % 5)],
            );
            let (c2, u, t) = (code.clone(), url.clone(), tags.clone());
            let hash = k as i64;
            let (id, created_at): (i64, String) = with_retry(cluster, urls, retries, move |c| -> Boxed<(i64, String)> {
                let (code, url, tags) = (c2.clone(), u.clone(), t.clone());
                Box::pin(async move {
                    let row = c
                        .query_one(
                            "WITH l AS (INSERT INTO shard_0002.links (code, url, url_hash, tags, max_visits, redirect) \
                             VALUES ($1, $2, $3, $4, $3, 301) RETURNING id, url_hash, url, code, created_at), \
                             u AS (INSERT INTO shard_0002.link_urls SELECT id, url_hash, url, code, created_at FROM l) \
                             SELECT id, created_at::text FROM l",
                            &[&code, &url, &hash, &tags],
                        )
                        .await?;
                    Ok((row.get(0), row.get(1)))
                })
            })
            .await;
            let link = LinkRow {
                code: code.clone(),
                alias: false,
                alias_name: None,
                url: url.clone(),
                url_hash: hash,
                created_at: created_at.clone(),
                expires_at: None,
                max_visits: Some(hash),
                redirect: 301,
                tags,
            };
            if model.links.insert(id, link).is_some() {
                anomalies.push(format!(
                    "create of {code} returned the id {id} of an existing link"
                ));
            }
            model.urls.insert(
                id,
                UrlRow {
                    url_hash: hash,
                    url,
                    code,
                    created_at,
                },
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shard_moves_under_updates_deletes_and_alias_moves_to_the_exact_acknowledged_state() {
    let (a, b) = (PgDb::create("mvu_a").await, PgDb::create("mvu_b").await);
    init(&InitOptions {
        servers: vec![a.url.clone()],
        logical_shards: 4,
        epoch_unix_ms: None,
    })
    .await
    .unwrap();
    let urls = vec![a.url.clone(), b.url.clone()];

    // Enough rows that the bulk copy takes a while, and aliases whose ids are not in
    // insert order; the model starts as what is there.
    let on_a = shardkit_pg::connect::connect(&a.url).await.unwrap();
    on_a.batch_execute(
        "INSERT INTO shard_0002.links (code, url, url_hash, tags) \
           SELECT 'p' || g, 'https://example.com/p' || g, g, ARRAY['t' || (g % 7)] FROM generate_series(1, 20000) g;
         INSERT INTO shard_0002.link_urls SELECT id, url_hash, url, code, created_at FROM shard_0002.links;
         INSERT INTO shard_0002.link_aliases (alias, id, code) SELECT 'pa' || code, id, code FROM shard_0002.links WHERE url_hash % 4 = 0;",
    )
    .await
    .unwrap();
    let initial = read_state(&a.url).await;
    assert_eq!(
        (
            initial.links.len(),
            initial.urls.len(),
            initial.aliases.len()
        ),
        (20000, 20000, 5000)
    );

    let cluster = Arc::new(RwLock::new(Cluster::open(&urls, 4).await.unwrap()));
    let stop = Arc::new(AtomicBool::new(false));
    let retries = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = {
        let (cluster, urls, stop, retries, writes) = (
            cluster.clone(),
            urls.clone(),
            stop.clone(),
            retries.clone(),
            writes.clone(),
        );
        let mut model = initial.clone();
        tokio::spawn(async move {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let mut anomalies = Vec::new();
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                random_write(
                    k,
                    &mut rng,
                    &mut model,
                    &mut anomalies,
                    (&cluster, &urls, &retries),
                )
                .await;
                writes.fetch_add(1, Ordering::Relaxed);
                k += 1;
            }
            (model, anomalies)
        })
    };

    // Writes before, during and after the move.
    while writes.load(Ordering::Relaxed) < 200 {
        assert!(!writer.is_finished(), "the writer stopped");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let report = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap();
    let after_move = writes.load(Ordering::Relaxed);
    while writes.load(Ordering::Relaxed) < after_move + 200 {
        if writer.is_finished() {
            // It panicked: show why.
            writer.await.unwrap();
            panic!("the writer stopped");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (model, anomalies) = writer.await.unwrap();
    eprintln!(
        "move: {report:?}; {} acknowledged writes, {} retries",
        writes.load(Ordering::Relaxed),
        retries.load(Ordering::Relaxed)
    );

    assert_eq!(
        anomalies,
        Vec::<String>::new(),
        "writes that did not change what they should have"
    );
    assert_eq!(report.map_version, 2);
    assert!(
        report.copied >= 40000,
        "the bulk copy took {} rows",
        report.copied
    );
    assert!(report.changed > 0, "no write landed between the snapshot and the switch: the test did not exercise the catch-up");
    assert!(report.rounds >= 1);
    assert!(model != initial, "the writer changed nothing");

    let on_b = read_state(&b.url).await;
    let mut diff = differences("links", &on_b.links, &model.links);
    diff.extend(differences("link_aliases", &on_b.aliases, &model.aliases));
    diff.extend(differences("link_urls", &on_b.urls, &model.urls));
    assert!(
        diff.is_empty(),
        "the new server differs from the acknowledged writes in {} rows:\n{}",
        diff.len(),
        diff[..diff.len().min(20)].join("\n")
    );

    let old: bool = on_a
        .query_one("SELECT to_regnamespace('shard_0002') IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(old, "the old copy is still there");
    let fresh = Cluster::open(&urls, 1).await.unwrap();
    assert_eq!(fresh.map().version(), 2);
    assert_eq!(
        fresh.server_for_shard(SHARD),
        Some(redact_url(&b.url).as_str())
    );
}

/// Change capture left on shard 2 at `url`: (non-internal triggers, log table, function).
async fn capture_on(url: &str) -> (i64, bool, bool) {
    let client = shardkit_pg::connect::connect(url).await.unwrap();
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = 'shard_0002' AND NOT t.tgisinternal), \
                    to_regclass('shard_0002.move_changes') IS NOT NULL, \
                    to_regprocedure('shard_0002.move_capture()') IS NOT NULL",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// Waits (boundedly) until the writer has acknowledged `more` writes past `from`.
async fn writes_past(acked: &parking_lot::Mutex<Vec<String>>, more: usize) {
    let from = acked.lock().len();
    for _ in 0..2000 {
        if acked.lock().len() >= from + more {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the writer stopped making progress");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_move_that_fails_part_way_leaves_the_shard_serving_without_capture() {
    let Stream {
        a,
        b,
        urls,
        cluster,
        stop,
        retries,
        acked,
    } = Stream::new("mvf").await;
    let writer = spawn_creates(&cluster, &urls, &stop, &retries, &acked);
    let (b_name, on_a, on_b) = (
        redact_url(&b.url),
        shardkit_pg::connect::connect(&a.url).await.unwrap(),
        shardkit_pg::connect::connect(&b.url).await.unwrap(),
    );
    writes_past(&acked, 50).await;

    // 1. The target already has the schema: refused before anything changes.
    on_b.batch_execute("CREATE SCHEMA shard_0002")
        .await
        .unwrap();
    let err = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&b_name) && err.contains("already has a schema"),
        "{err}"
    );
    assert_eq!(
        capture_on(&a.url).await,
        (0, false, false),
        "capture left on the source"
    );
    on_b.batch_execute("DROP SCHEMA shard_0002").await.unwrap();
    writes_past(&acked, 50).await;

    // 2. The target refuses the next map version: the move fails inside the pause, after
    // the copy and every catch-up round.
    on_b.batch_execute(shardkit_pg::schema::META_DDL)
        .await
        .unwrap();
    on_b.batch_execute(
        "CREATE FUNCTION public.refuse_map() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.version > 1 THEN RAISE EXCEPTION 'map versions refused by the test'; END IF; RETURN NEW; END $$;
         CREATE TRIGGER refuse_map BEFORE INSERT ON shardkit_meta.shard_maps FOR EACH ROW EXECUTE FUNCTION public.refuse_map();",
    )
    .await
    .unwrap();
    let err = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&b_name)
            && err.contains("recording the map")
            && err.contains("refused by the test"),
        "{err}"
    );
    assert_eq!(
        capture_on(&a.url).await,
        (0, false, false),
        "capture left on the source"
    );
    let partial: bool = on_b
        .query_one("SELECT to_regnamespace('shard_0002') IS NOT NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!partial, "the target's partial copy is still there");
    let after = Cluster::open(&urls, 1).await.unwrap();
    assert_eq!(after.map().version(), 1);
    assert_eq!(
        after.server_for_shard(SHARD),
        Some(redact_url(&a.url).as_str())
    );
    writes_past(&acked, 50).await;
    let acked_so_far = acked.lock().clone();
    let present: i64 = on_a
        .query_one(
            "SELECT count(*) FROM shard_0002.links WHERE code = ANY($1)",
            &[&acked_so_far],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        present as usize,
        acked_so_far.len(),
        "acknowledged creates lost on the source"
    );

    // 3. Without the obstacle a re-run moves the shard, even over what a killed move
    // would leave on the source (capture installed, log filling).
    on_b.batch_execute("DROP TRIGGER refuse_map ON shardkit_meta.shard_maps")
        .await
        .unwrap();
    on_a.batch_execute(
        "CREATE TABLE shard_0002.move_changes (seq bigserial PRIMARY KEY, tbl text NOT NULL, id bigint NOT NULL);
         CREATE FUNCTION shard_0002.move_capture() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN INSERT INTO shard_0002.move_changes (tbl, id) VALUES (TG_TABLE_NAME, NEW.id); RETURN NULL; END $$;
         CREATE TRIGGER move_capture AFTER INSERT ON shard_0002.links FOR EACH ROW EXECUTE FUNCTION shard_0002.move_capture();",
    )
    .await
    .unwrap();
    assert_eq!(
        capture_on(&a.url).await,
        (1, true, true),
        "the probe does not see a capture"
    );
    writes_past(&acked, 20).await;
    let report = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap();
    assert_eq!(report.map_version, 2);
    writes_past(&acked, 50).await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let acked = acked.lock().clone();
    let present: i64 = on_b
        .query_one(
            "SELECT count(*) FROM shard_0002.links WHERE code = ANY($1)",
            &[&acked],
        )
        .await
        .unwrap()
        .get(0);
    let total: i64 = on_b
        .query_one("SELECT count(*) FROM shard_0002.links", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        (present as usize, total as usize),
        (acked.len(), acked.len()),
        "acknowledged creates lost, or extra rows"
    );
    assert_eq!(
        capture_on(&b.url).await,
        (0, false, false),
        "capture copied to the target"
    );
    let old: bool = on_a
        .query_one("SELECT to_regnamespace('shard_0002') IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(old, "the old copy is still there");
}
