//! A batch of new links on the shards (`insert_batch`, `assign_ids`; a bulk import is
//! batches of 10,000): each step is one statement a server, the servers at once.
//!
//! - Ids: one `UNION ALL` of every shard's `next_id()` rows a server.
//! - Duplicates: one query a server for the ids, one for the codes, each shard asked
//!   about its own links only. A code lives in its group's shard, so a code is looked
//!   for there. An id the store made carries the shard whose `next_id()` made it, and
//!   the link is written to that same shard (its code's), so a repeated id could only
//!   be there: it is checked there ("at home"). A link whose id names another shard (an
//!   id of another kind, from a migration) is checked on every shard, as all ids were
//!   before: with 64 shards and 10,000 ids a batch that was 640,000 index probes, and
//!   the import slowed as the shards grew.
//! - Writes: one transaction a server holding the inserts of all its shards (one commit,
//!   one WAL flush, where there was one a shard). The shards of one server commit or
//!   fail together; two servers are still two transactions (see the module docs of
//!   [`crate::links`]).

use super::{query_failed, tags_json, Shards};
use crate::links::rows::{reusable, to_time, url_hash};
use crate::schema::shard_schema;
use futures_util::future::try_join_all;
use shardkit_links::{group_of, Link, StoreError};
use std::collections::{BTreeMap, HashSet};
use std::time::SystemTime;
use tokio_postgres::types::ToSql;

/// Items by the server of their shard (the map's server index), then by shard.
type ByServer<T> = BTreeMap<usize, BTreeMap<u32, Vec<T>>>;

impl Shards {
    /// The index of the server holding `shard` in the map.
    fn server_of(&self, shard: u32) -> usize {
        self.cluster
            .map()
            .table()
            .get(shard as usize)
            .copied()
            .unwrap_or(0) as usize
    }

    /// `items` (each with its shard) grouped by server and shard.
    fn by_server<T>(&self, items: impl IntoIterator<Item = (u32, T)>) -> ByServer<T> {
        let mut grouped: ByServer<T> = BTreeMap::new();
        for (shard, item) in items {
            grouped
                .entry(self.server_of(shard))
                .or_default()
                .entry(shard)
                .or_default()
                .push(item);
        }
        grouped
    }

    /// Ids for links with these codes, from the `next_id()` of each code's shard (one
    /// query a server, the servers at once), in the order of `codes`.
    pub(in crate::links) async fn next_ids(
        &self,
        codes: &[String],
    ) -> Result<Vec<u64>, StoreError> {
        let mut positions = Vec::with_capacity(codes.len());
        for (i, code) in codes.iter().enumerate() {
            positions.push((self.shard_of_code(code)?, i));
        }
        let servers = self.by_server(positions);
        let answers = try_join_all(servers.values().map(|shards| async move {
            let first = *shards.keys().next().expect("a server has a shard");
            let (client, server) = self.client(first).await?;
            let counts: Vec<i32> = shards.values().map(|p| p.len() as i32).collect();
            let sql = shards
                .keys()
                .enumerate()
                .map(|(k, &s)| {
                    format!(
                        "(SELECT {s}::int, {}.next_id() FROM generate_series(1, ${}::int))",
                        shard_schema(s),
                        k + 1
                    )
                })
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let params: Vec<&(dyn ToSql + Sync)> =
                counts.iter().map(|c| c as &(dyn ToSql + Sync)).collect();
            let rows = client
                .query(&sql, &params)
                .await
                .map_err(|e| query_failed(&server, "making ids", &e))?;
            Ok::<_, StoreError>(rows)
        }))
        .await?;
        let mut ids = vec![0u64; codes.len()];
        let mut next: BTreeMap<u32, usize> = BTreeMap::new();
        for row in answers.iter().flatten() {
            let shard = row.get::<_, i32>(0) as u32;
            let id = row.get::<_, i64>(1) as u64;
            let taken = next.entry(shard).or_default();
            let wanted = servers
                .get(&self.server_of(shard))
                .and_then(|s| s.get(&shard))
                .and_then(|p| p.get(*taken));
            let Some(&i) = wanted else {
                return Err(StoreError::Backend(format!(
                    "shard {shard} made more ids than asked"
                )));
            };
            ids[i] = id;
            *taken += 1;
        }
        if ids.contains(&0) {
            return Err(StoreError::Backend(
                "a shard made fewer ids than asked".into(),
            ));
        }
        Ok(ids)
    }

    /// Which of `codes` are stored: the generated ones with one query a server (the
    /// servers at once), any other (an alias-shaped restore) through `resolve`.
    pub(in crate::links) async fn held_codes(
        &self,
        codes: &[String],
    ) -> Result<HashSet<String>, StoreError> {
        let mut routed = Vec::with_capacity(codes.len());
        let mut held = HashSet::new();
        for code in codes {
            match self.shard_of_code(code) {
                Ok(shard) => routed.push((shard, code.as_str())),
                Err(_) => {
                    if self.resolve(code).await?.is_some() {
                        held.insert(code.clone());
                    }
                }
            }
        }
        let servers = self.by_server(routed);
        let found = try_join_all(servers.values().map(|shards| {
            self.all_found(
                shards,
                "SELECT code FROM {s}.links WHERE code = ANY(${k})",
                "checking codes",
            )
        }))
        .await?;
        held.extend(found.into_iter().flatten());
        Ok(held)
    }

    /// The shard an id made by a shard's `next_id()` names, if it is a group shard.
    fn home_of_id(&self, id: u64) -> Option<u32> {
        let groups =
            u64::from(shardkit_links::GROUPS).min(u64::from(self.cluster.map().shard_count()));
        let shard = self.cluster.layout().decode(id).ok()?.parts.shard;
        (shard < groups).then_some(shard as u32)
    }

    /// Refuses the batch if a code or id in it is already stored or repeated (see the
    /// module docs for where each is looked for).
    pub(in crate::links) async fn check_duplicates(
        &self,
        links: &[Link],
    ) -> Result<(), StoreError> {
        let mut ids = HashSet::new();
        let mut codes = HashSet::new();
        let mut at_home = Vec::with_capacity(links.len());
        let mut everywhere: Vec<i64> = Vec::new();
        let mut by_code = Vec::with_capacity(links.len());
        for link in links {
            if !ids.insert(link.id) {
                return Err(StoreError::Duplicate(format!("link id {}", link.id)));
            }
            if !codes.insert(link.code.as_str()) {
                return Err(StoreError::Duplicate(format!("code {}", link.code)));
            }
            let shard = self.shard_of_code(&link.code)?;
            by_code.push((shard, link.code.as_str()));
            match self.home_of_id(link.id) {
                Some(home) if home == shard => at_home.push((shard, link.id as i64)),
                _ => everywhere.push(link.id as i64),
            }
        }
        // Every group shard is asked about the ids that are not at home.
        if !everywhere.is_empty() {
            for shards in self.shards_by_server() {
                at_home.extend(
                    shards
                        .iter()
                        .flat_map(|&s| everywhere.iter().map(move |&id| (s, id))),
                );
            }
        }
        let by_id = self.by_server(at_home);
        let by_code = self.by_server(by_code);
        // A server this batch writes nothing to (asked only about ids that are not at
        // home) is left out when it cannot be reached, so a lost server does not stop
        // creates for the shards of the others.
        let found = try_join_all(by_id.iter().map(|(server, shards)| {
            self.first_found(
                shards,
                "SELECT id::text FROM {s}.links WHERE id = ANY(${k})",
                "checking ids",
                !by_code.contains_key(server),
            )
        }))
        .await?;
        if let Some(id) = found.into_iter().flatten().next() {
            return Err(StoreError::Duplicate(format!("link id {id}")));
        }
        let found = try_join_all(by_code.values().map(|shards| {
            self.first_found(
                shards,
                "SELECT code FROM {s}.links WHERE code = ANY(${k})",
                "checking codes",
                false,
            )
        }))
        .await?;
        if let Some(code) = found.into_iter().flatten().next() {
            return Err(StoreError::Duplicate(format!("code {code}")));
        }
        Ok(())
    }

    /// The first text value `template` (`{s}`: a shard's schema, `${k}`: that shard's
    /// array) finds on any of `shards` (all on one server): one query. With
    /// `skip_unreachable`, a server that cannot be reached finds nothing.
    async fn first_found<T: ToSql + Sync>(
        &self,
        shards: &BTreeMap<u32, Vec<T>>,
        template: &str,
        what: &str,
        skip_unreachable: bool,
    ) -> Result<Option<String>, StoreError> {
        let found = self
            .found(shards, template, " LIMIT 1", what, skip_unreachable)
            .await?;
        Ok(found.into_iter().next())
    }

    /// Every text value `template` finds on `shards` (as [`Shards::first_found`]).
    async fn all_found<T: ToSql + Sync>(
        &self,
        shards: &BTreeMap<u32, Vec<T>>,
        template: &str,
        what: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.found(shards, template, "", what, false).await
    }

    /// `template` on each of `shards` with its own array, `limit` after each part and
    /// after the whole, one `UNION ALL` query (the whole a subquery: a lone part's
    /// `LIMIT` and the whole's cannot follow each other). With `skip_unreachable`, a
    /// server that cannot be reached finds nothing.
    async fn found<T: ToSql + Sync>(
        &self,
        shards: &BTreeMap<u32, Vec<T>>,
        template: &str,
        limit: &str,
        what: &str,
        skip_unreachable: bool,
    ) -> Result<Vec<String>, StoreError> {
        let Some(&first) = shards.keys().next() else {
            return Ok(Vec::new());
        };
        let sql = shards
            .keys()
            .enumerate()
            .map(|(k, &s)| {
                let one = template
                    .replace("{s}", &shard_schema(s))
                    .replace("{k}", &(k + 1).to_string());
                format!("({one}{limit})")
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let params: Vec<&(dyn ToSql + Sync)> =
            shards.values().map(|v| v as &(dyn ToSql + Sync)).collect();
        let (client, server) = match self.client(first).await {
            Ok(found) => found,
            Err(_) if skip_unreachable => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        // Not prepared: the plan for the actual arrays beats a generic one.
        let rows = client
            .query(&format!("SELECT * FROM ({sql}) AS found{limit}"), &params)
            .await
            .map_err(|e| query_failed(&server, what, &e))?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    /// Writes `links` to their code shards: one transaction a server (the servers at
    /// once), in it one multi-row insert a shard (arrays through `unnest`) and one of
    /// the URL index rows that belong to the same shard; other URL index rows follow.
    pub(in crate::links) async fn write_links(&self, links: &[&Link]) -> Result<(), StoreError> {
        let mut placed = Vec::with_capacity(links.len());
        for &link in links {
            placed.push((self.shard_of_code(&link.code)?, link));
        }
        let servers = self.by_server(placed);
        let elsewhere =
            try_join_all(servers.values().map(|shards| self.write_on_server(shards))).await?;
        for link in elsewhere.into_iter().flatten() {
            self.index_url(link).await?;
        }
        Ok(())
    }

    /// One server's part of [`Shards::write_links`]; answers the reusable links whose
    /// URL index row belongs to a shard elsewhere.
    async fn write_on_server<'a>(
        &self,
        shards: &BTreeMap<u32, Vec<&'a Link>>,
    ) -> Result<Vec<&'a Link>, StoreError> {
        let first = *shards.keys().next().expect("a server has a shard");
        let (mut client, server) = self.client(first).await?;
        let fail = |what: &str, e: tokio_postgres::Error| query_failed(&server, what, &e);
        let tx = client
            .transaction()
            .await
            .map_err(|e| fail("starting a transaction", e))?;
        let mut elsewhere = Vec::new();
        for (&shard, links) in shards {
            elsewhere.extend(
                insert_in_shard(&tx, shard, links, |url| self.shard_of(group_of(url)))
                    .await
                    .map_err(|(what, e)| fail(what, e))?,
            );
        }
        tx.commit().await.map_err(|e| fail("committing links", e))?;
        Ok(elsewhere)
    }
}

/// The inserts of one shard's links in `tx`; answers the reusable links whose URL index
/// row is another shard's (`url_shard`: the shard of a URL's index row).
async fn insert_in_shard<'a>(
    tx: &tokio_postgres::Transaction<'_>,
    shard: u32,
    links: &[&'a Link],
    url_shard: impl Fn(&str) -> u32,
) -> Result<Vec<&'a Link>, (&'static str, tokio_postgres::Error)> {
    let s = shard_schema(shard);
    let insert = format!(
        "INSERT INTO {s}.links (id, code, alias, alias_name, url, url_hash, created_at, expires_at, max_visits, redirect, tags, password_hash, author, rules, domain, title) \
         SELECT id, code, alias_name IS NOT NULL, alias_name, url, url_hash, created_at, expires_at, max_visits, redirect, \
                ARRAY(SELECT json_array_elements_text(tags::json)), password_hash, author, rules::jsonb, domain, title \
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], \
                     $7::timestamptz[], $8::bigint[], $9::smallint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[]) \
           AS t(id, code, alias_name, url, url_hash, created_at, expires_at, max_visits, redirect, tags, password_hash, author, rules, domain, title)"
    );
    let index = format!(
        "INSERT INTO {s}.link_urls (id, url_hash, url, code, created_at, domain) \
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])"
    );
    let ids: Vec<i64> = links.iter().map(|l| l.id as i64).collect();
    let codes: Vec<&str> = links.iter().map(|l| l.code.as_str()).collect();
    let aliases: Vec<Option<&str>> = links.iter().map(|l| l.alias.as_deref()).collect();
    let urls: Vec<&str> = links.iter().map(|l| l.url.as_str()).collect();
    let hashes: Vec<i64> = links.iter().map(|l| url_hash(&l.url)).collect();
    let created: Vec<SystemTime> = links.iter().map(|l| to_time(l.created_at)).collect();
    let expires: Vec<Option<SystemTime>> =
        links.iter().map(|l| l.expires_at.map(to_time)).collect();
    let visits: Vec<Option<i64>> = links
        .iter()
        .map(|l| l.max_visits.map(|v| v as i64))
        .collect();
    let statuses: Vec<i16> = links.iter().map(|l| l.redirect.status() as i16).collect();
    let tags: Vec<String> = links.iter().map(|l| tags_json(&l.tags)).collect();
    let passwords: Vec<Option<&str>> = links.iter().map(|l| l.password_hash.as_deref()).collect();
    let authors: Vec<Option<&str>> = links.iter().map(|l| l.author.as_deref()).collect();
    let domains: Vec<Option<&str>> = links.iter().map(|l| l.domain.as_deref()).collect();
    let titles: Vec<Option<&str>> = links.iter().map(|l| l.title.as_deref()).collect();
    let rules: Vec<Option<String>> = links
        .iter()
        .map(|l| crate::links::rows::rules_json(l))
        .collect();
    let (here, elsewhere): (Vec<usize>, Vec<usize>) = (0..links.len())
        .filter(|&i| reusable(links[i]))
        .partition(|&i| url_shard(&links[i].url) == shard);
    tx.execute(
        &insert,
        &[
            &ids, &codes, &aliases, &urls, &hashes, &created, &expires, &visits, &statuses, &tags,
            &passwords, &authors, &rules, &domains, &titles,
        ],
    )
    .await
    .map_err(|e| ("storing links", e))?;
    if !here.is_empty() {
        let index_ids: Vec<i64> = here.iter().map(|&i| ids[i]).collect();
        let index_hashes: Vec<i64> = here.iter().map(|&i| hashes[i]).collect();
        let index_urls: Vec<&str> = here.iter().map(|&i| urls[i]).collect();
        let index_codes: Vec<&str> = here.iter().map(|&i| codes[i]).collect();
        let index_created: Vec<SystemTime> = here.iter().map(|&i| created[i]).collect();
        let index_domains: Vec<Option<&str>> = here.iter().map(|&i| domains[i]).collect();
        tx.execute(
            &index,
            &[
                &index_ids,
                &index_hashes,
                &index_urls,
                &index_codes,
                &index_created,
                &index_domains,
            ],
        )
        .await
        .map_err(|e| ("writing the URL index", e))?;
    }
    Ok(elsewhere.into_iter().map(|i| links[i]).collect())
}
