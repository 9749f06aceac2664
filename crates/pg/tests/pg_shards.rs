//! PostgreSQL logical shards against the machine's PostgreSQL: init, idempotence, the
//! refusal of another shard count, ids that decode, and no duplicate past 1024 ids per
//! millisecond on one shard.

mod common;

use common::PgDb;
use shardkit_ids::Layout;
use shardkit_pg::{init, Cluster, InitOptions, PgError};
use std::collections::{BTreeMap, HashSet};

fn options(servers: &[&PgDb], shards: u32) -> InitOptions {
    InitOptions {
        servers: servers.iter().map(|d| d.url.clone()).collect(),
        logical_shards: shards,
        epoch_unix_ms: None,
    }
}

async fn schemas(url: &str) -> Vec<String> {
    let client = shardkit_pg::connect::connect(url).await.unwrap();
    let rows = client
        .query(
            r"SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'shard\_%' ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn init_spreads_shards_and_is_idempotent() {
    let (a, b) = (PgDb::create("init_a").await, PgDb::create("init_b").await);
    let first = init(&options(&[&a, &b], 8)).await.unwrap();
    assert!(first.new_cluster);
    assert_eq!(first.map_version, 1);
    assert_eq!(
        first
            .servers
            .iter()
            .map(|s| (s.shards, s.created))
            .collect::<Vec<_>>(),
        vec![(4, 4), (4, 4)]
    );
    assert_eq!(
        schemas(&a.url).await,
        ["shard_0000", "shard_0001", "shard_0002", "shard_0003"]
    );
    assert_eq!(
        schemas(&b.url).await,
        ["shard_0004", "shard_0005", "shard_0006", "shard_0007"]
    );

    let again = init(&options(&[&a, &b], 8)).await.unwrap();
    assert!(!again.new_cluster);
    assert_eq!(again.servers.iter().map(|s| s.created).sum::<u32>(), 0);

    let err = init(&options(&[&a, &b], 16)).await.unwrap_err();
    assert!(
        matches!(
            err,
            PgError::ShardCountMismatch {
                existing: 8,
                requested: 16,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("cannot change"), "{err}");

    let err = init(&options(&[&a], 8)).await.unwrap_err();
    assert!(
        matches!(err, PgError::ServersDiffer { version: 1, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains(&shardkit_pg::redact_url(&b.url)),
        "names the server left out: {err}"
    );

    let mut other_epoch = options(&[&a, &b], 8);
    other_epoch.epoch_unix_ms = Some(1_600_000_000_000);
    let err = init(&other_epoch).await.unwrap_err();
    assert!(
        matches!(
            err,
            PgError::EpochMismatch {
                requested: 1_600_000_000_000,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn bad_shard_count_and_unreachable_server_are_named() {
    let a = PgDb::create("bad").await;
    let err = init(&options(&[&a], 12)).await.unwrap_err();
    assert!(matches!(err, PgError::BadShardCount(12)), "{err}");

    let mut opts = options(&[&a], 8);
    opts.servers
        .push("postgres://postgres:secret@127.0.0.1:1/nowhere".into());
    let err = init(&opts).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PgError::Unreachable { .. }), "{text}");
    assert!(
        text.contains("127.0.0.1:1/nowhere") && !text.contains("secret"),
        "{text}"
    );
    // Nothing was created on the reachable one.
    assert!(schemas(&a.url).await.is_empty());
}

#[tokio::test]
async fn next_id_decodes_as_instagram_with_its_shard() {
    let a = PgDb::create("decode").await;
    init(&options(&[&a], 64)).await.unwrap();
    let cluster = Cluster::open(std::slice::from_ref(&a.url), 2)
        .await
        .unwrap();
    let layout = Layout::instagram();
    for shard in [0u32, 5, 63] {
        let client = cluster.client_for_shard(shard).await.unwrap();
        let id: i64 = client
            .query_one(&format!("SELECT shard_{shard:04}.next_id()"), &[])
            .await
            .unwrap()
            .get(0);
        let decoded = layout.decode(id as u64).unwrap();
        assert_eq!(decoded.parts.shard, u64::from(shard));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(
            decoded.unix_ms.abs_diff(now) < 5_000,
            "id time {} vs now {now}",
            decoded.unix_ms
        );
        // The links table takes its key from next_id() too.
        let row = client
            .query_one(
                &format!("INSERT INTO shard_{shard:04}.links (code, url, url_hash) VALUES ('abc', 'https://example.com/', 1) RETURNING id"),
                &[],
            )
            .await
            .unwrap();
        let link_id: i64 = row.get(0);
        assert!(link_id > id);
        assert_eq!(
            layout.decode(link_id as u64).unwrap().parts.shard,
            u64::from(shard)
        );
    }
}

/// Many connections insert into one shard as fast as they can; the primary key would
/// reject a duplicate id, and the count of distinct ids must equal the rows inserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_connections_into_one_shard_never_duplicate() {
    let a = PgDb::create("burst").await;
    init(&options(&[&a], 2)).await.unwrap();
    const CONNECTIONS: usize = 8;
    const STATEMENTS: usize = 3;
    const ROWS: i64 = 3_000;
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        let url = a.url.clone();
        tasks.push(tokio::spawn(async move {
            let client = shardkit_pg::connect::connect(&url).await.unwrap();
            for s in 0..STATEMENTS {
                client
                    .execute(
                        "INSERT INTO shard_0001.links (code, url, url_hash) \
                         SELECT $1 || g, 'https://example.com/', g FROM generate_series(1, $2::bigint) g",
                        &[&format!("c{c}s{s}-"), &ROWS],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let client = shardkit_pg::connect::connect(&a.url).await.unwrap();
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT id) FROM shard_0001.links",
            &[],
        )
        .await
        .unwrap();
    let (rows, distinct): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(rows, (CONNECTIONS * STATEMENTS) as i64 * ROWS);
    assert_eq!(distinct, rows);
    let ids: Vec<i64> = client
        .query("SELECT id FROM shard_0001.links", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let layout = Layout::instagram();
    assert!(ids
        .iter()
        .all(|&id| layout.decode(id as u64).unwrap().parts.shard == 1));
}

/// Forces the case the published function gets wrong: the state is put 40 ms ahead of
/// the clock at sequence 1000, so the next 100 ids must use up the millisecond (1000 to
/// 1023) and carry into the next one at sequence 0, rather than wrap to 0 in the same
/// millisecond. 100 calls take well under 40 ms even on a loaded machine, so the clock
/// cannot catch up and hide the carry.
#[tokio::test]
async fn past_1024_ids_in_one_millisecond_the_time_field_carries() {
    let a = PgDb::create("carry").await;
    init(&options(&[&a], 1)).await.unwrap();
    let client = shardkit_pg::connect::connect(&a.url).await.unwrap();
    let epoch = shardkit_ids::DEFAULT_EPOCH_UNIX_MS as i64;
    let layout = Layout::instagram();
    let mut all = HashSet::new();
    for round in 0..3i64 {
        // Each round 5 ms further ahead: two rounds inside one millisecond of the clock
        // (a fast machine) must not set the state back onto ids already drawn.
        let ahead = 40 + 5 * round;
        let start: i64 = client
            .query_one(
                "SELECT setval('shard_0000.id_state', \
                 ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1 + $2) << 10) | 1000)",
                &[&epoch, &ahead],
            )
            .await
            .unwrap()
            .get(0);
        let ids: Vec<i64> = client
            .query(
                "SELECT shard_0000.next_id() FROM generate_series(1, 100)",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let parts: Vec<_> = ids
            .iter()
            .map(|&id| layout.decode(id as u64).unwrap().parts)
            .collect();
        let ms = (start >> 10) as u64;
        let expected: Vec<(u64, u64)> = (1001..1024)
            .map(|q| (ms, q))
            .chain((0..77).map(|q| (ms + 1, q)))
            .collect();
        assert_eq!(
            parts
                .iter()
                .map(|p| (p.time_units, p.sequence))
                .collect::<Vec<_>>(),
            expected
        );
        for id in ids {
            assert!(all.insert(id), "duplicate id {id}");
        }
    }
    let mut per_ms: BTreeMap<u64, u32> = BTreeMap::new();
    for &id in &all {
        *per_ms
            .entry(layout.decode(id as u64).unwrap().parts.time_units)
            .or_default() += 1;
    }
    assert!(per_ms.len() >= 2);
}
