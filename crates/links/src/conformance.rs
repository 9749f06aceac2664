//! The contract of [`LinkStore`] as one function any backend's tests call, so the
//! embedded store and the PostgreSQL store (`shardkit-pg`) are held to the same behaviour.
//! It panics (like an `assert!`) on the first broken rule; give it an empty store.

use crate::code::group_of;
use crate::error::StoreError;
use crate::model::{Link, Redirect};
use crate::store::{InsertOutcome, LinkStore, Write, Written};
use sample_link as link;
use shardkit_ids::base62;

/// A plain link (no alias, tags, limits or password) for tests of a store.
pub fn sample_link(id: u64, code: &str, url: &str) -> Link {
    Link {
        id,
        url: url.to_string(),
        code: code.to_string(),
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
    }
}

/// A redirect rule from its JSON.
fn rule(json: &str) -> crate::RedirectRule {
    serde_json::from_str(json).expect("a rule the suite writes")
}

/// Runs every check against `store`, which must be empty.
pub fn run(store: &dyn LinkStore) {
    assert_eq!(
        store.count().unwrap(),
        0,
        "the conformance suite needs an empty store"
    );

    // Batch insert, lookups by id, code and alias.
    let mut a = link(10, "a000001", "https://example.com/a");
    a.tags = vec!["red".into(), "blue".into()];
    let mut b = link(20, "b000001", "https://example.com/b");
    b.alias = Some("bee-alias".into());
    b.tags = vec!["red".into()];
    b.rules = vec![rule(r#"{"device":"ios","url":"https://apps.example/b"}"#)];
    b.title = Some("Bee's page, «quoted»".into());
    let c = link(30, "c000001", "https://example.com/a");
    let outcomes = store
        .insert_batch(&[a.clone(), b.clone(), c.clone()])
        .unwrap();
    assert_eq!(outcomes, vec![InsertOutcome::Inserted; 3]);
    assert_eq!(store.count().unwrap(), 3);
    assert_eq!(store.get(10).unwrap(), Some(a.clone()));
    assert_eq!(store.resolve("a000001").unwrap(), Some(a.clone()));
    assert_eq!(store.resolve("bee-alias").unwrap(), Some(b.clone()));
    assert_eq!(store.resolve("b000001").unwrap(), Some(b.clone()));
    assert_eq!(store.resolve("nope").unwrap(), None);
    assert_eq!(store.resolve("z999999").unwrap(), None);
    // A batch's codes checked at once: what `resolve` would find, and only that.
    let asked = ["a000001", "z999999", "bee-alias", "nope", "c000001"].map(String::from);
    let mut held: Vec<String> = store.held_codes(&asked).unwrap().into_iter().collect();
    held.sort();
    assert_eq!(held, ["a000001", "bee-alias", "c000001"]);

    // A taken alias names its owner's code; the rest of the batch is stored.
    let mut d = link(40, "d000001", "https://example.com/d");
    d.alias = Some("bee-alias".into());
    let e = link(50, "e000001", "https://example.com/e");
    let outcomes = store.insert_batch(&[d, e.clone()]).unwrap();
    assert_eq!(
        outcomes[0],
        InsertOutcome::AliasTaken {
            alias: "bee-alias".into(),
            owner_code: "b000001".into()
        }
    );
    assert_eq!(outcomes[1], InsertOutcome::Inserted);
    assert_eq!(store.get(40).unwrap(), None);
    // Duplicates of code or id fail the whole batch, overwrite nothing.
    assert!(matches!(
        store.insert_batch(&[link(60, "a000001", "https://x.example/")]),
        Err(StoreError::Duplicate(_))
    ));
    assert!(matches!(
        store.insert_batch(&[
            link(61, "g000001", "https://x.example/"),
            link(10, "f000001", "https://x.example/")
        ]),
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get(10).unwrap(), Some(a.clone()));
    assert_eq!(store.get(61).unwrap(), None);
    assert_eq!(store.resolve("g000001").unwrap(), None);
    // Two equal aliases in one batch: the first wins, the second names its code.
    let mut g = link(80, "h000001", "https://example.com/g");
    g.alias = Some("twice".into());
    let mut h = link(90, "i000001", "https://example.com/h");
    h.alias = Some("twice".into());
    let outcomes = store.insert_batch(&[g, h]).unwrap();
    assert_eq!(
        outcomes[1],
        InsertOutcome::AliasTaken {
            alias: "twice".into(),
            owner_code: "h000001".into()
        }
    );
    assert_eq!(store.delete(80).unwrap().map(|l| l.id), Some(80));

    // A link minted with its alias has its code in the alias's group (as the server
    // mints it); it resolves both ways and `delete_link` removes it once.
    let grouped = format!(
        "{}000002",
        char::from(base62::ALPHABET[usize::from(group_of("one-shard"))])
    );
    let mut k = link(85, &grouped, "https://example.com/k");
    k.alias = Some("one-shard".into());
    // Ids the store assigns (if it does) are distinct, kept by the insert and found again.
    let mut assigned = [
        k.clone(),
        link(
            86,
            &format!("{}000003", &grouped[..1]),
            "https://example.com/k2",
        ),
    ];
    store.assign_ids(&mut assigned).unwrap();
    assert_ne!(assigned[0].id, assigned[1].id);
    let k = assigned[0].clone();
    assert_eq!(
        store.insert_batch(&assigned[1..]).unwrap(),
        [InsertOutcome::Inserted]
    );
    assert_eq!(
        store.resolve(&assigned[1].code).unwrap(),
        Some(assigned[1].clone())
    );
    assert_eq!(
        store.delete_link(&assigned[1]).unwrap(),
        Some(assigned[1].clone())
    );
    assert_eq!(
        store.insert_batch(std::slice::from_ref(&k)).unwrap(),
        [InsertOutcome::Inserted]
    );
    assert_eq!(store.resolve("one-shard").unwrap(), Some(k.clone()));
    assert_eq!(store.resolve(&grouped).unwrap(), Some(k.clone()));
    assert_eq!(store.delete_link(&k).unwrap(), Some(k.clone()));
    assert_eq!(store.delete_link(&k).unwrap(), None);
    assert_eq!(store.resolve("one-shard").unwrap(), None);
    assert_eq!(store.resolve(&grouped).unwrap(), None);

    // Reuse: the oldest plain link of the URL.
    assert_eq!(
        store
            .find_reusable("https://example.com/a", None)
            .unwrap()
            .map(|l| l.id),
        Some(10)
    );
    assert_eq!(
        store.find_reusable("https://example.com/b", None).unwrap(),
        None,
        "a link with an alias is not reused"
    );
    assert_eq!(
        store
            .find_reusable("https://example.com/zzz", None)
            .unwrap(),
        None
    );
    // A password and the author are stored and read back; a password link is not reused.
    let mut locked = link(55, "p000055", "https://example.com/locked");
    locked.password_hash = Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    locked.author = Some("writer".into());
    assert_eq!(
        store.insert_batch(std::slice::from_ref(&locked)).unwrap(),
        [InsertOutcome::Inserted]
    );
    assert_eq!(store.get(55).unwrap(), Some(locked.clone()));
    assert_eq!(
        store
            .find_reusable("https://example.com/locked", None)
            .unwrap(),
        None,
        "a password link is not reused"
    );
    assert_eq!(store.delete_link(&locked).unwrap(), Some(locked.clone()));

    // Lists: creation order, cursor, tags.
    let ids = |links: Vec<Link>| links.into_iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list(None, None, 10).unwrap()), [10, 20, 30, 50]);
    assert_eq!(ids(store.list(None, Some(20), 1).unwrap()), [30]);
    assert_eq!(ids(store.list(Some("red"), None, 10).unwrap()), [10, 20]);
    assert_eq!(ids(store.list(Some("red"), Some(10), 10).unwrap()), [20]);
    assert_eq!(
        ids(store.list(Some("none"), None, 10).unwrap()),
        Vec::<u64>::new()
    );

    // Replace: new target and tags move the indexes; code and alias are fixed.
    let mut a2 = a.clone();
    a2.url = "https://example.com/moved".into();
    a2.tags = vec!["green".into()];
    a2.redirect = Redirect::Permanent;
    store.replace(&a2).unwrap();
    assert_eq!(store.resolve("a000001").unwrap(), Some(a2.clone()));
    // Redirect rules are part of the link: stored, read and replaced with it.
    let mut b2 = b.clone();
    b2.title = Some("Renamed".into());
    b2.rules = vec![
        rule(r#"{"cidr":"10.0.0.0/8","url":"https://example.com/in"}"#),
        rule(r#"{"query":{"ref":"x","debug":true},"url":"https://example.com/x"}"#),
    ];
    store.replace(&b2).unwrap();
    assert_eq!(store.resolve("bee-alias").unwrap(), Some(b2.clone()));
    assert_eq!(store.get(20).unwrap(), Some(b2));
    assert_eq!(ids(store.list(Some("red"), None, 10).unwrap()), [20]);
    assert_eq!(ids(store.list(Some("green"), None, 10).unwrap()), [10]);
    assert_eq!(
        store
            .find_reusable("https://example.com/a", None)
            .unwrap()
            .map(|l| l.id),
        Some(30)
    );
    assert_eq!(
        store
            .find_reusable("https://example.com/moved", None)
            .unwrap()
            .map(|l| l.id),
        Some(10)
    );
    let mut renamed = a2.clone();
    renamed.code = "q000001".into();
    assert!(store.replace(&renamed).is_err());
    assert!(store
        .replace(&link(999, "y000001", "https://example.com/"))
        .is_err());

    // Delete frees the code, the alias and the indexes.
    assert_eq!(store.delete(20).unwrap().map(|l| l.id), Some(20));
    assert_eq!(store.delete(20).unwrap(), None);
    assert_eq!(store.resolve("bee-alias").unwrap(), None);
    assert_eq!(store.resolve("b000001").unwrap(), None);
    assert_eq!(
        ids(store.list(Some("red"), None, 10).unwrap()),
        Vec::<u64>::new()
    );
    let mut f = link(70, "f000001", "https://example.com/f");
    f.alias = Some("bee-alias".into());
    assert_eq!(store.insert_batch(&[f]).unwrap(), [InsertOutcome::Inserted]);
    assert_eq!(store.count().unwrap(), 4);

    // A group of writes applies in order, each answering as its own method would; a
    // write that fails does not take the others with it.
    let x = link(100, "x000100", "https://example.com/x");
    let y = link(101, "x000101", "https://example.com/y");
    let answers = store.write_group(&[
        Write::Insert(vec![x.clone()]),
        Write::Replace(link(998, "y000998", "https://example.com/")),
        Write::Delete(x.clone()),
        Write::Insert(vec![y.clone()]),
    ]);
    assert_eq!(answers.len(), 4);
    assert_eq!(
        answers[0],
        Ok(Written::Inserted(vec![InsertOutcome::Inserted]))
    );
    assert!(
        matches!(answers[1], Err(StoreError::Missing(998))),
        "{:?}",
        answers[1]
    );
    assert_eq!(answers[2], Ok(Written::Deleted(Some(x))));
    assert_eq!(
        answers[3],
        Ok(Written::Inserted(vec![InsertOutcome::Inserted]))
    );
    assert_eq!(store.resolve("x000100").unwrap(), None);
    assert_eq!(store.resolve("x000101").unwrap(), Some(y.clone()));
    assert_eq!(store.delete_link(&y).unwrap(), Some(y));
    assert_eq!(store.count().unwrap(), 4);

    // Domains: one alias on two domains is two links, each reached by its own key
    // only; a taken alias is taken within its domain; reuse stays within a domain.
    let on_domain = |mut l: Link, domain: Option<&str>, alias: Option<&str>| {
        l.domain = domain.map(String::from);
        l.alias = alias.map(String::from);
        l
    };
    let url = "https://example.com/domains";
    let home = on_domain(link(110, "m000110", url), None, Some("same-name"));
    let away = on_domain(
        link(111, "m000111", url),
        Some("go.example"),
        Some("same-name"),
    );
    let plain_away = on_domain(link(112, "m000112", url), Some("go.example"), None);
    assert_eq!(
        store
            .insert_batch(&[home.clone(), away.clone(), plain_away.clone()])
            .unwrap(),
        vec![InsertOutcome::Inserted; 3]
    );
    assert_eq!(store.resolve("same-name").unwrap(), Some(home.clone()));
    assert_eq!(
        store.resolve("go.example/same-name").unwrap(),
        Some(away.clone())
    );
    assert_eq!(store.resolve("m000111").unwrap(), Some(away.clone()));
    assert_eq!(store.resolve("else.example/same-name").unwrap(), None);
    let twice = on_domain(
        link(113, "m000113", "https://example.com/2"),
        Some("go.example"),
        Some("same-name"),
    );
    assert_eq!(
        store.insert_batch(&[twice]).unwrap(),
        [InsertOutcome::AliasTaken {
            alias: "same-name".into(),
            owner_code: "m000111".into()
        }]
    );
    assert_eq!(store.find_reusable(url, None).unwrap(), None);
    assert_eq!(
        store.find_reusable(url, Some("go.example")).unwrap(),
        Some(plain_away.clone())
    );
    assert_eq!(
        store.find_reusable(url, Some("else.example")).unwrap(),
        None
    );
    let mut moved = away.clone();
    moved.domain = None;
    assert!(store.replace(&moved).is_err(), "a link's domain is fixed");
    assert_eq!(store.delete_link(&away).unwrap(), Some(away));
    assert_eq!(store.resolve("go.example/same-name").unwrap(), None);
    assert_eq!(store.resolve("same-name").unwrap(), Some(home.clone()));
    assert_eq!(store.delete_link(&home).unwrap(), Some(home));
    assert_eq!(store.delete_link(&plain_away).unwrap(), Some(plain_away));
    assert_eq!(store.count().unwrap(), 4);
}
