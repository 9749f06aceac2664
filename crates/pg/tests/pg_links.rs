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
        domain: None,
        title: None,
        created_at: 1_790_000_000_000,
        expires_at: None,
        max_visits: None,
        redirect: Redirect::Found,
        tags: Vec::new(),
        password_hash: None,
        author: None,
        rules: vec![],
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
    assert_eq!(store.find_reusable(url, None).unwrap(), Some(link));
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

#[test]
fn a_group_of_changes_applies_in_order_and_a_refused_write_fails_only_itself() {
    use shardkit_links::{StoreError, Write, Written};
    let a = pg_db("links_group");
    let servers = vec![a.url.clone()];
    let options = InitOptions {
        servers: servers.clone(),
        logical_shards: 4,
        epoch_unix_ms: None,
    };
    std::thread::spawn(move || block_on(init(&options)).unwrap())
        .join()
        .unwrap();
    let store = PgLinkStore::open(&servers, 2).unwrap();
    let link = |id: u64, code: &str, url: &str| Link {
        id,
        url: url.into(),
        code: code.into(),
        alias: None,
        domain: None,
        title: None,
        created_at: 1_790_000_000_000 + id,
        expires_at: None,
        max_visits: None,
        redirect: Redirect::Found,
        tags: Vec::new(),
        password_hash: None,
        author: None,
        rules: vec![],
    };
    // Three links in one shard (group `a`), one in another (group `b`).
    let a1 = link(1, "a000001", "https://example.com/a1");
    let a2 = link(2, "a000002", "https://example.com/a2");
    let a3 = link(3, "a000003", "https://example.com/a3");
    let b1 = link(4, "b000001", "https://example.com/b1");
    store
        .insert_batch(&[a1.clone(), a2.clone(), a3.clone(), b1.clone()])
        .unwrap();
    let mut a1_new = a1.clone();
    a1_new.url = "https://example.com/a1-new".into();
    let mut a2_alias = a2.clone();
    a2_alias.alias = Some("no-alias-change".into());
    let mut b1_new = b1.clone();
    b1_new.tags = vec!["moved".into()];
    let answers = store.write_group(&[
        Write::Replace(a1_new.clone()),
        Write::Replace(a2_alias),
        Write::Delete(a3.clone()),
        Write::Replace(b1_new.clone()),
        Write::Delete(link(9, "a000009", "https://example.com/none")),
        Write::Replace(link(10, "a000010", "https://example.com/none")),
    ]);
    assert_eq!(
        answers,
        vec![
            Ok(Written::Replaced),
            Err(StoreError::Immutable(2)),
            Ok(Written::Deleted(Some(a3))),
            Ok(Written::Replaced),
            Ok(Written::Deleted(None)),
            Err(StoreError::Missing(10)),
        ]
    );
    assert_eq!(store.resolve("a000001").unwrap(), Some(a1_new.clone()));
    assert_eq!(store.resolve("a000002").unwrap(), Some(a2));
    assert_eq!(store.resolve("a000003").unwrap(), None);
    assert_eq!(store.resolve("b000001").unwrap(), Some(b1_new));
    // The URL index follows the replace: the new URL is found, the old one is not.
    assert_eq!(
        store
            .find_reusable("https://example.com/a1-new", None)
            .unwrap(),
        Some(a1_new)
    );
    assert_eq!(
        store.find_reusable("https://example.com/a1", None).unwrap(),
        None
    );
    assert_eq!(store.count().unwrap(), 3);
}
