//! A group of link writes (`LinkStore::write_group`, from the server's group commit)
//! on the shards: inserts as `insert_batch` does (the group commit has already merged
//! neighbouring ones), and each run of replaces and deletes in one transaction per
//! code shard instead of one per write. The URL index and alias rows of the changed
//! links follow the commit, as they do for a single write (they live on other shards;
//! the module docs of [`crate::links`] say why they come after the link row).

use super::{query_failed, Shards};
use crate::links::rows::{reusable, row_to_link, to_time, url_hash, COLUMNS};
use crate::schema::shard_schema;
use shardkit_links::{Link, StoreError, Write, Written};
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;

/// What a replace or delete did to the link row, before the index follow-up. One lives
/// per write of a run, briefly: two links side by side cost less than boxing them.
#[allow(clippy::large_enum_variant)]
enum Change {
    /// Replaced: the row as it was and the link as given.
    Replaced { old: Link, new: Link },
    /// Deleted: the row as it was, or `None` if it was not stored.
    Deleted(Option<Link>),
    /// No row with that id and code: missing, or held under another code.
    NotUnderCode(u64),
    /// Refused (an alias cannot change) or failed.
    Failed(StoreError),
    /// Run on its own after its shard's transaction failed: the final answer.
    Done(Written),
}

impl Shards {
    /// Applies `writes` in order; one answer per write (see the module docs).
    pub(in crate::links) async fn write_group(
        &self,
        writes: &[Write],
    ) -> Vec<Result<Written, StoreError>> {
        let mut answers = Vec::with_capacity(writes.len());
        let mut i = 0;
        while i < writes.len() {
            if let Write::Insert(links) = &writes[i] {
                answers.push(self.insert_batch(links).await.map(Written::Inserted));
                i += 1;
                continue;
            }
            let end = writes[i..]
                .iter()
                .position(|w| matches!(w, Write::Insert(_)))
                .map_or(writes.len(), |p| i + p);
            answers.extend(self.changes(&writes[i..end]).await);
            i = end;
        }
        answers
    }

    /// A run of replaces and deletes: the link rows, one transaction per code shard,
    /// then each write's index follow-up in order.
    async fn changes(&self, writes: &[Write]) -> Vec<Result<Written, StoreError>> {
        let mut changes: Vec<Option<Change>> = (0..writes.len()).map(|_| None).collect();
        let mut by_shard: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (k, write) in writes.iter().enumerate() {
            let routed = match write {
                Write::Replace(link) => self
                    .shard_of_code(&link.code)
                    .map_err(|_| Change::NotUnderCode(link.id)),
                Write::Delete(link) => self.shard_of_code(&link.code).map_err(Change::Failed),
                Write::Insert(_) => Err(Change::Failed(StoreError::Backend(
                    "an insert in a run of changes".into(),
                ))),
            };
            match routed {
                Ok(shard) => by_shard.entry(shard).or_default().push(k),
                Err(change) => changes[k] = Some(change),
            }
        }
        for (shard, members) in by_shard {
            match self.change_rows(shard, writes, &members).await {
                Ok(done) => {
                    for (k, change) in members.into_iter().zip(done) {
                        changes[k] = Some(change);
                    }
                }
                // The shard's transaction failed as a whole (nothing of it applied):
                // each of its writes on its own, so one bad write fails only itself.
                Err(_) => {
                    for k in members {
                        let alone = match &writes[k] {
                            Write::Replace(link) => {
                                self.replace(link).await.map(|()| Written::Replaced)
                            }
                            Write::Delete(link) => {
                                self.delete_link(link).await.map(Written::Deleted)
                            }
                            Write::Insert(links) => {
                                self.insert_batch(links).await.map(Written::Inserted)
                            }
                        };
                        changes[k] = Some(match alone {
                            Ok(written) => Change::Done(written),
                            Err(e) => Change::Failed(e),
                        });
                    }
                }
            }
        }
        let mut answers = Vec::with_capacity(writes.len());
        for change in changes {
            let answer = match change {
                Some(change) => self.follow_up(change).await,
                None => Err(StoreError::Backend(
                    "a write of the group was not run".into(),
                )),
            };
            answers.push(answer);
        }
        answers
    }

    /// The link rows of `members` (indexes into `writes`) on `shard`, in one
    /// transaction, in order. `Err` when the transaction failed (nothing applied).
    async fn change_rows(
        &self,
        shard: u32,
        writes: &[Write],
        members: &[usize],
    ) -> Result<Vec<Change>, StoreError> {
        let (mut client, server) = self.client(shard).await?;
        let s = shard_schema(shard);
        let fail = |what: &str, e: tokio_postgres::Error| query_failed(&server, what, &e);
        let read =
            format!("SELECT {COLUMNS} FROM {s}.links WHERE id = $1 AND code = $2 FOR UPDATE");
        let update = format!(
            "UPDATE {s}.links SET url = $2, url_hash = $3, expires_at = $4, max_visits = $5, redirect = $6, tags = $7, password_hash = $8, rules = $9::text::jsonb, title = $10 WHERE id = $1"
        );
        let delete =
            format!("DELETE FROM {s}.links WHERE id = $1 AND code = $2 RETURNING {COLUMNS}");
        let tx = client
            .transaction()
            .await
            .map_err(|e| fail("starting a transaction", e))?;
        let mut done = Vec::with_capacity(members.len());
        for &k in members {
            let change = match &writes[k] {
                Write::Replace(link) => {
                    let row = tx
                        .query_opt(&read, &[&(link.id as i64), &link.code])
                        .await
                        .map_err(|e| fail("reading a link", e))?;
                    match row.as_ref().map(row_to_link).transpose()? {
                        None => Change::NotUnderCode(link.id),
                        Some(old) if old.alias != link.alias || old.domain != link.domain => {
                            Change::Failed(StoreError::Immutable(link.id))
                        }
                        Some(old) => {
                            let rules = crate::links::rows::rules_json(link);
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
                            tx.execute(&update, &params)
                                .await
                                .map_err(|e| fail("replacing a link", e))?;
                            Change::Replaced {
                                old,
                                new: link.clone(),
                            }
                        }
                    }
                }
                Write::Delete(link) => {
                    let row = tx
                        .query_opt(&delete, &[&(link.id as i64), &link.code])
                        .await
                        .map_err(|e| fail("deleting a link", e))?;
                    Change::Deleted(row.as_ref().map(row_to_link).transpose()?)
                }
                // Routed apart in `changes`; never here.
                Write::Insert(_) => {
                    Change::Failed(StoreError::Backend("an insert in a run of changes".into()))
                }
            };
            done.push(change);
        }
        tx.commit()
            .await
            .map_err(|e| fail("committing link changes", e))?;
        Ok(done)
    }

    /// The URL index and alias rows after a committed change, and the write's answer.
    async fn follow_up(&self, change: Change) -> Result<Written, StoreError> {
        match change {
            Change::Replaced { old, mut new } => {
                self.unindex_url(old.id, &old.url).await?;
                new.created_at = old.created_at;
                if reusable(&new) {
                    self.index_url(&new).await?;
                }
                Ok(Written::Replaced)
            }
            Change::Deleted(None) => Ok(Written::Deleted(None)),
            Change::Deleted(Some(deleted)) => {
                self.unindex_url(deleted.id, &deleted.url).await?;
                if let Some(alias) = deleted.alias_key() {
                    self.release_alias(&alias, deleted.id).await?;
                }
                Ok(Written::Deleted(Some(deleted)))
            }
            // Say whether the id exists under another code, as `replace` does.
            Change::NotUnderCode(id) => Err(match self.get(id).await? {
                Some(_) => StoreError::Immutable(id),
                None => StoreError::Missing(id),
            }),
            Change::Failed(e) => Err(e),
            Change::Done(written) => Ok(written),
        }
    }
}
