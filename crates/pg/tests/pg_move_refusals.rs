//! The moves `move_shard` refuses before it changes anything, each with its own error on
//! the machine's PostgreSQL: a shard the cluster does not have, a shard already on the
//! target, a server of the map left out of the URLs, servers without a cluster, a second
//! move of the same shard, and a target holding a leftover copy. After each refusal the
//! shard is still where it was.

mod common;

use common::PgDb;
use shardkit_pg::schema::ADVISORY_CLASS;
use shardkit_pg::{init, move_shard, redact_url, Cluster, InitOptions, PgError};

const SHARD: u32 = 2;

/// A cluster of 8 logical shards on `a` (0-3) and `b` (4-7).
async fn two_server_cluster(tag: &str) -> (PgDb, PgDb, Vec<String>) {
    let (a, b) = (
        PgDb::create(&format!("{tag}_a")).await,
        PgDb::create(&format!("{tag}_b")).await,
    );
    let urls = vec![a.url.clone(), b.url.clone()];
    init(&InitOptions {
        servers: urls.clone(),
        logical_shards: 8,
        epoch_unix_ms: None,
    })
    .await
    .expect("init");
    (a, b, urls)
}

async fn still_on(urls: &[String], server: &str) {
    let cluster = Cluster::open(urls, 1).await.expect("open");
    assert_eq!(cluster.map().version(), 1, "the map did not change");
    assert_eq!(
        cluster.server_for_shard(SHARD),
        Some(redact_url(server).as_str())
    );
}

#[tokio::test]
async fn a_shard_the_cluster_does_not_have_is_named_with_the_valid_range() {
    let (_a, b, urls) = two_server_cluster("mvr_nosuch").await;
    let err = move_shard(&urls, 9000, &b.url).await.unwrap_err();
    assert!(
        matches!(
            err,
            PgError::NoSuchShard {
                shard: 9000,
                logical_shards: 8
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("numbered 0 to 7"), "{err}");
}

#[tokio::test]
async fn a_shard_already_on_the_target_is_refused() {
    let (a, _b, urls) = two_server_cluster("mvr_there").await;
    let err = move_shard(&urls, SHARD, &a.url).await.unwrap_err();
    assert!(
        matches!(&err, PgError::AlreadyThere { shard: SHARD, server } if *server == redact_url(&a.url)),
        "{err}"
    );
    still_on(&urls, &a.url).await;
}

#[tokio::test]
async fn a_server_of_the_map_left_out_of_the_urls_is_named() {
    let (a, b, urls) = two_server_cluster("mvr_missing").await;
    let c = PgDb::create("mvr_missing_c").await;
    let err = move_shard(std::slice::from_ref(&a.url), SHARD, &c.url)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PgError::MissingServer { server } if *server == redact_url(&b.url)),
        "{err}"
    );
    assert!(err.to_string().contains("--servers"), "{err}");
    still_on(&urls, &a.url).await;
}

#[tokio::test]
async fn servers_without_a_cluster_are_told_to_run_init() {
    let (a, b) = (
        PgDb::create("mvr_nometa_a").await,
        PgDb::create("mvr_nometa_b").await,
    );
    let err = move_shard(std::slice::from_ref(&a.url), SHARD, &b.url)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PgError::NoCluster { server } if *server == redact_url(&a.url)),
        "{err}"
    );
    assert!(err.to_string().contains("shardkit pg init"), "{err}");
}

#[tokio::test]
async fn a_second_move_of_the_same_shard_is_refused_while_the_first_holds_its_lock() {
    let (a, b, urls) = two_server_cluster("mvr_running").await;
    // Another session holds the move lock of the shard on its server, as a running move does.
    let other = shardkit_pg::connect::connect(&a.url).await.unwrap();
    other
        .execute(
            "SELECT pg_advisory_lock($1, $2)",
            &[&ADVISORY_CLASS, &(-2 - SHARD as i32)],
        )
        .await
        .unwrap();
    let err = move_shard(&urls, SHARD, &b.url).await.unwrap_err();
    assert!(
        matches!(&err, PgError::MoveRunning { shard: SHARD, server } if *server == redact_url(&a.url)),
        "{err}"
    );
    still_on(&urls, &a.url).await;
    drop(other);
}

#[tokio::test]
async fn a_target_with_a_leftover_copy_is_told_how_to_clear_it() {
    let (a, b, urls) = two_server_cluster("mvr_leftover").await;
    let on_b = shardkit_pg::connect::connect(&b.url).await.unwrap();
    on_b.batch_execute("CREATE SCHEMA shard_0002")
        .await
        .unwrap();
    let err = move_shard(&urls, SHARD, &b.url).await.unwrap_err();
    assert!(
        matches!(&err, PgError::TargetHasShard { server, schema } if *server == redact_url(&b.url) && schema == "shard_0002"),
        "{err}"
    );
    assert!(
        err.to_string().contains("DROP SCHEMA shard_0002 CASCADE"),
        "{err}"
    );
    still_on(&urls, &a.url).await;
}
