//! The links conformance suite against [`PgLinkStore`] on a freshly initialised cluster
//! of two databases (standing in for two servers), and where the rows land.

mod common;

use common::{block_on, pg_db};
use shardkit_links::{conformance, group_of, Codec, Link, LinkStore, Redirect};
use shardkit_pg::links::shard_of_group;
use shardkit_pg::schema::shard_schema;
use shardkit_pg::{init, InitOptions, PgLinkStore};

#[test]
fn pg_link_store_passes_the_conformance_suite_on_two_servers() {
    let (a, b) = (pg_db("links_a"), pg_db("links_b"));
    let servers = vec![a.url.clone(), b.url.clone()];
    let options = InitOptions {
        servers: servers.clone(),
        logical_shards: 8,
        epoch_unix_ms: None,
    };
    let opts = options.clone();
    std::thread::spawn(move || block_on(init(&opts)).unwrap())
        .join()
        .unwrap();
    let store = PgLinkStore::open(&servers, 2).unwrap();
    conformance::run(&store);

    // A minted-style link (code group = URL group) lives in that group's shard, with its
    // URL index row beside it.
    let url = "https://example.com/routed";
    let group = group_of(url);
    let code = Codec::sequential().encode(group, 12345).unwrap();
    let link = Link {
        id: 1_000_000,
        url: url.into(),
        code: code.clone(),
        alias: None,
        created_at: 1_790_000_000_000,
        expires_at: None,
        max_visits: None,
        redirect: Redirect::Found,
        tags: Vec::new(),
        password_hash: None,
        author: None,
    };
    // Ids the store makes carry the shard of the code (so a look-up by id reads one shard).
    let mut assigned = [link.clone()];
    store.assign_ids(&mut assigned).unwrap();
    let decoded = store.cluster().layout().decode(assigned[0].id).unwrap();
    assert_eq!(decoded.parts.shard, u64::from(shard_of_group(group, 8)));
    let link = assigned[0].clone();
    store.insert_batch(std::slice::from_ref(&link)).unwrap();
    assert_eq!(store.get(link.id).unwrap(), Some(link.clone()));
    assert_eq!(store.resolve(&code).unwrap(), Some(link.clone()));
    assert_eq!(store.find_reusable(url).unwrap(), Some(link));
    let shard = shard_of_group(group, 8);
    let server = store.cluster().server_for_shard(shard).unwrap().to_string();
    let url_of_server = servers
        .iter()
        .find(|u| shardkit_pg::redact_url(u) == server)
        .unwrap()
        .clone();
    let schema = shard_schema(shard);
    let found: i64 = std::thread::spawn(move || {
        block_on(async move {
            let client = shardkit_pg::connect::connect(&url_of_server).await.unwrap();
            let sql = format!("SELECT count(*) FROM {schema}.links l JOIN {schema}.link_urls u ON u.id = l.id WHERE l.code = $1");
            client.query_one(&sql, &[&code]).await.unwrap().get(0)
        })
    })
    .join()
    .unwrap();
    assert_eq!(found, 1);
}

#[test]
fn unreachable_server_is_named() {
    let err = PgLinkStore::open(
        &["postgres://postgres:secret@127.0.0.1:1/nowhere".into()],
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("127.0.0.1:1/nowhere") && !err.contains("secret"),
        "{err}"
    );
}
