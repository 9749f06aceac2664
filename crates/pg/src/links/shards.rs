//! The async half of [`super::PgLinkStore`]: every link operation as queries routed to
//! the shards of one shard map (see the module docs of [`super`] for the routing).

use super::rows::{
    reusable, row_to_link, rules_json, to_time, url_hash, COLUMNS, COLUMN_COUNT, L_COLUMNS,
};
use super::shard_of_group;
use crate::cluster::Cluster;
use crate::connect::query_error;
use crate::error::PgError;
use crate::schema::shard_schema;
use shardkit_links::{group_of, Codec, InsertOutcome, Link, StoreError, GROUPS};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

mod batch;
mod group;

/// Whether `path` has the shape of a generated code (7 to 11 base62 characters);
/// aliases never do (see `shardkit_links::validate_alias`).
fn looks_generated(path: &str) -> bool {
    (7..=11).contains(&path.len()) && path.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The group of a generated code, or an error naming it (a code the store cannot route).
fn group_of_code(code: &str) -> Result<u8, StoreError> {
    Codec::group_of_code(code)
        .filter(|_| looks_generated(code))
        .ok_or_else(|| {
            StoreError::Backend(format!(
                "code {code:?} is not a generated code, so it names no shard"
            ))
        })
}

/// Tags as a JSON array of strings: one text value per link, so a batch's tags fit
/// one `text[]` parameter (PostgreSQL arrays cannot be ragged).
fn tags_json(tags: &[String]) -> String {
    serde_json::to_string(tags).unwrap_or_else(|_| "[]".into())
}

fn backend(e: PgError) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn query_failed(server: &str, what: &str, e: &tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        return StoreError::Duplicate(format!(
            "a link of this batch ({})",
            crate::connect::error_text(e)
        ));
    }
    backend(query_error(server, what, e))
}

/// Link operations on the shards of one cluster snapshot.
#[derive(Clone)]
pub(super) struct Shards {
    pub(super) cluster: Arc<Cluster>,
}

impl Shards {
    fn shard_of(&self, group: u8) -> u32 {
        shard_of_group(group, self.cluster.map().shard_count())
    }

    /// The shard of a generated code.
    fn shard_of_code(&self, code: &str) -> Result<u32, StoreError> {
        Ok(self.shard_of(group_of_code(code)?))
    }

    /// A connection to the server of `shard`, and that server's name for errors.
    async fn client(&self, shard: u32) -> Result<(deadpool_postgres::Object, String), StoreError> {
        let server = self
            .cluster
            .server_for_shard(shard)
            .unwrap_or("?")
            .to_string();
        let client = self
            .cluster
            .client_for_shard(shard)
            .await
            .map_err(backend)?;
        Ok((client, server))
    }

    /// The shards that hold groups, grouped by server (map order).
    fn shards_by_server(&self) -> Vec<Vec<u32>> {
        let shards: HashSet<u32> = (0..GROUPS).map(|g| self.shard_of(g)).collect();
        let mut by_server: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for shard in shards {
            let server = self
                .cluster
                .map()
                .table()
                .get(shard as usize)
                .copied()
                .unwrap_or(0) as usize;
            by_server.entry(server).or_default().push(shard);
        }
        by_server
            .into_values()
            .map(|mut s| {
                s.sort_unstable();
                s
            })
            .collect()
    }

    /// Runs `template` (with `{s}` for the schema) on every group shard, one
    /// `UNION ALL` per server, and gathers the rows.
    async fn scatter(
        &self,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<Vec<Row>, StoreError> {
        self.scatter_to(template, params, what, false).await
    }

    /// [`Shards::scatter`]; with `skip_unreachable`, a server that cannot be reached
    /// is left out instead of failing the whole call.
    async fn scatter_to(
        &self,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
        skip_unreachable: bool,
    ) -> Result<Vec<Row>, StoreError> {
        let mut rows = Vec::new();
        for shards in self.shards_by_server() {
            let sql = shards
                .iter()
                .map(|&s| format!("({})", template.replace("{s}", &shard_schema(s))))
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            let (client, server) = match self.client(shards[0]).await {
                Ok(found) => found,
                Err(_) if skip_unreachable => continue,
                Err(e) => return Err(e),
            };
            // Not prepared: these take arrays of thousands (a batch's ids), where the
            // plan for the actual array (often a hash of it over a small shard) beats
            // the generic plan a cached statement settles on (an index probe per id).
            rows.extend(
                client
                    .query(&sql, params)
                    .await
                    .map_err(|e| query_failed(&server, what, &e))?,
            );
        }
        Ok(rows)
    }

    /// Runs `template` (with `{s}` for the schema) on one shard and returns its row,
    /// if any: the shape of every single-shard look-up. Statements are prepared once
    /// per pooled connection (`prepare_cached`): a look-up is then one round trip and
    /// no parse or plan on the server.
    async fn query_opt_in(
        &self,
        shard: u32,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<Option<Row>, StoreError> {
        let (client, server) = self.client(shard).await?;
        let sql = template.replace("{s}", &shard_schema(shard));
        let statement = client
            .prepare_cached(&sql)
            .await
            .map_err(|e| query_failed(&server, what, &e))?;
        client
            .query_opt(&statement, params)
            .await
            .map_err(|e| query_failed(&server, what, &e))
    }

    /// Runs statement `template` (with `{s}` for the schema) on one shard; answers the
    /// rows it changed.
    async fn execute_in(
        &self,
        shard: u32,
        template: &str,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<u64, StoreError> {
        let (client, server) = self.client(shard).await?;
        let sql = template.replace("{s}", &shard_schema(shard));
        let statement = client
            .prepare_cached(&sql)
            .await
            .map_err(|e| query_failed(&server, what, &e))?;
        client
            .execute(&statement, params)
            .await
            .map_err(|e| query_failed(&server, what, &e))
    }

    /// The link with id `id`. Ids the store made ([`Shards::next_ids`]) carry their
    /// shard, so one query usually finds it; a link imported with an id of another
    /// kind is looked for on every shard.
    pub(super) async fn get(&self, id: u64) -> Result<Option<Link>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM {{s}}.links WHERE id = $1");
        let shard = self.cluster.layout().decode(id).map(|d| d.parts.shard).ok();
        let groups = u64::from(GROUPS).min(u64::from(self.cluster.map().shard_count()));
        if let Some(shard) = shard.filter(|s| *s < groups) {
            if let Some(row) = self
                .query_opt_in(shard as u32, &sql, &[&(id as i64)], "reading a link by id")
                .await?
            {
                return row_to_link(&row).map(Some);
            }
        }
        let rows = self
            .scatter(&sql, &[&(id as i64)], "reading a link by id")
            .await?;
        rows.first().map(row_to_link).transpose()
    }

    /// The link with generated code `code`, from its group's shard.
    async fn by_code(&self, code: &str) -> Result<Option<Link>, StoreError> {
        let shard = self.shard_of_code(code)?;
        let sql = format!("SELECT {COLUMNS} FROM {{s}}.links WHERE code = $1");
        let row = self
            .query_opt_in(shard, &sql, &[&code], "reading a link by code")
            .await?;
        row.as_ref().map(row_to_link).transpose()
    }

    pub(super) async fn resolve(&self, path: &str) -> Result<Option<Link>, StoreError> {
        if looks_generated(path) {
            return self.by_code(path).await;
        }
        // The alias's shard holds its index entry and, for every link minted with the
        // alias, the link itself: one query. The code of the index entry comes last.
        let shard = self.shard_of(group_of(path));
        let sql = format!(
            "SELECT {L_COLUMNS}, a.code FROM {{s}}.link_aliases a \
             LEFT JOIN {{s}}.links l ON l.id = a.id WHERE a.alias = $1"
        );
        let Some(row) = self
            .query_opt_in(shard, &sql, &[&path], "reading an alias")
            .await?
        else {
            return Ok(None);
        };
        if row.try_get::<_, Option<i64>>(0).ok().flatten().is_some() {
            // The alias column holds the alias key (`domain/alias` off the default
            // domain); the link's own columns hold the alias and domain apart.
            return Ok(Some(row_to_link(&row)?).filter(|l| l.alias_key().as_deref() == Some(path)));
        }
        // A link whose code was minted in another group (imported): its code's shard.
        let code: String = row.try_get(COLUMN_COUNT).map_err(|e| StoreError::Corrupt {
            id: 0,
            reason: e.to_string(),
        })?;
        Ok(self
            .by_code(&code)
            .await?
            .filter(|l| l.alias_key().as_deref() == Some(path)))
    }

    pub(super) async fn find_reusable(
        &self,
        url: &str,
        domain: Option<&str>,
    ) -> Result<Option<Link>, StoreError> {
        let shard = self.shard_of(group_of(url));
        let sql = "SELECT code FROM {s}.link_urls WHERE url_hash = $1 AND url = $2 AND domain IS NOT DISTINCT FROM $3 ORDER BY created_at, id LIMIT 1";
        let row = self
            .query_opt_in(
                shard,
                sql,
                &[&url_hash(url), &url, &domain],
                "reading the URL index",
            )
            .await?;
        match row {
            Some(row) => {
                let code: String = row.get(0);
                Ok(self
                    .by_code(&code)
                    .await?
                    .filter(|l| l.url == url && reusable(l) && l.domain.as_deref() == domain))
            }
            None => Ok(None),
        }
    }

    /// Adds `link` to the URL index of its URL's shard (outside any transaction).
    async fn index_url(&self, link: &Link) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(&link.url));
        let sql = "INSERT INTO {s}.link_urls (id, url_hash, url, code, created_at, domain) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (id) DO UPDATE SET url_hash = EXCLUDED.url_hash, url = EXCLUDED.url";
        let params: [&(dyn ToSql + Sync); 6] = [
            &(link.id as i64),
            &url_hash(&link.url),
            &link.url,
            &link.code,
            &to_time(link.created_at),
            &link.domain,
        ];
        self.execute_in(shard, sql, &params, "writing the URL index")
            .await?;
        Ok(())
    }

    /// Removes link `id` from the URL index of `url`'s shard.
    async fn unindex_url(&self, id: u64, url: &str) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(url));
        self.execute_in(
            shard,
            "DELETE FROM {s}.link_urls WHERE id = $1",
            &[&(id as i64)],
            "writing the URL index",
        )
        .await?;
        Ok(())
    }

    /// Frees `alias` if link `id` holds it.
    async fn release_alias(&self, alias: &str, id: u64) -> Result<(), StoreError> {
        let shard = self.shard_of(group_of(alias));
        let sql = "DELETE FROM {s}.link_aliases WHERE alias = $1 AND id = $2";
        self.execute_in(shard, sql, &[&alias, &(id as i64)], "freeing an alias")
            .await?;
        Ok(())
    }

    /// Claims `link`'s alias in the alias's shard: `None` if claimed, else the owner's
    /// code. A claim this link already holds counts as claimed, so a batch retried
    /// after a failure (a shard that moved between the claim and the write) goes on.
    async fn claim_alias(&self, alias: &str, link: &Link) -> Result<Option<String>, StoreError> {
        let shard = self.shard_of(group_of(alias));
        let claim = "INSERT INTO {s}.link_aliases (alias, id, code) VALUES ($1, $2, $3) ON CONFLICT (alias) DO NOTHING";
        if self
            .execute_in(
                shard,
                claim,
                &[&alias, &(link.id as i64), &link.code],
                "claiming an alias",
            )
            .await?
            == 1
        {
            return Ok(None);
        }
        let owner = "SELECT id, code FROM {s}.link_aliases WHERE alias = $1";
        let row = self
            .query_opt_in(shard, owner, &[&alias], "reading an alias")
            .await?;
        match row {
            Some(row)
                if row.get::<_, i64>(0) == link.id as i64
                    && row.get::<_, String>(1) == link.code =>
            {
                Ok(None)
            }
            Some(row) => Ok(Some(row.get(1))),
            // Freed between the two statements: report it taken anyway; the caller may retry.
            None => Ok(Some(String::new())),
        }
    }

    pub(super) async fn insert_batch(
        &self,
        links: &[Link],
    ) -> Result<Vec<InsertOutcome>, StoreError> {
        self.check_duplicates(links).await?;
        let mut outcomes = Vec::with_capacity(links.len());
        let mut claimed: Vec<(std::borrow::Cow<str>, u64)> = Vec::new();
        for link in links {
            let outcome = match (&link.alias, link.alias_key()) {
                (Some(alias), Some(key)) => match self.claim_alias(&key, link).await {
                    Ok(None) => {
                        claimed.push((key, link.id));
                        InsertOutcome::Inserted
                    }
                    Ok(Some(owner_code)) => InsertOutcome::AliasTaken {
                        alias: alias.clone(),
                        owner_code,
                    },
                    Err(e) => {
                        self.undo_claims(&claimed).await;
                        return Err(e);
                    }
                },
                _ => InsertOutcome::Inserted,
            };
            outcomes.push(outcome);
        }
        let stored: Vec<&Link> = links
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| **o == InsertOutcome::Inserted)
            .map(|(l, _)| l)
            .collect();
        if let Err(e) = self.write_links(&stored).await {
            self.undo_claims(&claimed).await;
            return Err(e);
        }
        Ok(outcomes)
    }

    async fn undo_claims(&self, claimed: &[(std::borrow::Cow<'_, str>, u64)]) {
        for (alias, id) in claimed {
            let _ = self.release_alias(alias, *id).await;
        }
    }

    /// Replaces the link with `link.id` and `link.code`, found on its code's shard.
    pub(super) async fn replace(&self, link: &Link) -> Result<(), StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM {{s}}.links WHERE id = $1 AND code = $2");
        let found = match self.shard_of_code(&link.code) {
            Ok(shard) => self
                .query_opt_in(
                    shard,
                    &sql,
                    &[&(link.id as i64), &link.code],
                    "reading a link",
                )
                .await?
                .map(|row| (shard, row)),
            Err(_) => None,
        };
        let Some((shard, old)) = found
            .map(|(shard, row)| row_to_link(&row).map(|l| (shard, l)))
            .transpose()?
        else {
            // Not under that code: say whether the id exists with another code.
            return Err(match self.get(link.id).await? {
                Some(_) => StoreError::Immutable(link.id),
                None => StoreError::Missing(link.id),
            });
        };
        if old.alias != link.alias || old.domain != link.domain {
            return Err(StoreError::Immutable(link.id));
        }
        let sql = "UPDATE {s}.links SET url = $2, url_hash = $3, expires_at = $4, max_visits = $5, redirect = $6, tags = $7, password_hash = $8, rules = $9::text::jsonb, title = $10 WHERE id = $1";
        let rules = rules_json(link);
        let params: [&(dyn ToSql + Sync); 10] = [
            &(link.id as i64),
            &link.url,
            &url_hash(&link.url),
            &link.expires_at.map(to_time),
            &link.max_visits.map(|v| v as i64),
            &(link.redirect.status() as i16),
            &link.tags,
            &link.password_hash,
            &rules,
            &link.title,
        ];
        if self
            .execute_in(shard, sql, &params, "replacing a link")
            .await?
            == 0
        {
            return Err(StoreError::Missing(link.id));
        }
        self.unindex_url(old.id, &old.url).await?;
        let mut new = link.clone();
        new.created_at = old.created_at;
        if reusable(&new) {
            self.index_url(&new).await?;
        }
        Ok(())
    }

    pub(super) async fn delete(&self, id: u64) -> Result<Option<Link>, StoreError> {
        match self.get(id).await? {
            Some(link) => self.delete_link(&link).await,
            None => Ok(None),
        }
    }

    /// Deletes the link with `link.id` and `link.code` from its code's shard, then its
    /// URL index row and alias.
    pub(super) async fn delete_link(&self, link: &Link) -> Result<Option<Link>, StoreError> {
        let shard = self.shard_of_code(&link.code)?;
        let sql =
            format!("DELETE FROM {{s}}.links WHERE id = $1 AND code = $2 RETURNING {COLUMNS}");
        let row = self
            .query_opt_in(
                shard,
                &sql,
                &[&(link.id as i64), &link.code],
                "deleting a link",
            )
            .await?;
        let Some(deleted) = row.as_ref().map(row_to_link).transpose()? else {
            return Ok(None);
        };
        self.unindex_url(deleted.id, &deleted.url).await?;
        if let Some(alias) = deleted.alias_key() {
            self.release_alias(&alias, deleted.id).await?;
        }
        Ok(Some(deleted))
    }

    pub(super) async fn list(
        &self,
        tag: Option<String>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Link>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {{s}}.links WHERE id > $1 AND ($2::text IS NULL OR $2::text = ANY(tags)) ORDER BY id LIMIT $3"
        );
        let after = after.map(|a| a as i64).unwrap_or(-1);
        let limit_sql = limit.min(i64::MAX as usize) as i64;
        let rows = self
            .scatter(&sql, &[&after, &tag, &limit_sql], "listing links")
            .await?;
        let mut links = rows
            .iter()
            .map(row_to_link)
            .collect::<Result<Vec<_>, _>>()?;
        links.sort_unstable_by_key(|l| l.id);
        links.truncate(limit);
        Ok(links)
    }

    pub(super) async fn count(&self) -> Result<u64, StoreError> {
        let rows = self
            .scatter("SELECT count(*) FROM {s}.links", &[], "counting links")
            .await?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_recognised() {
        assert!(looks_generated("a000001"));
        assert!(!looks_generated("bee-alias"));
        assert_eq!(
            group_of_code("b000001").unwrap(),
            Codec::group_of_code("b").unwrap()
        );
        assert!(group_of_code("nope").is_err());
    }
}
