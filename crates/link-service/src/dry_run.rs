//! A bulk create checked without storing anything: each line's own fields, its
//! domain, a restored code this server could mint, and whether its code or alias is
//! already stored or named by an earlier line. What `POST /api/links/bulk?dry_run=true`
//! answers, so an import shows what it would change, and reports every conflict by
//! line before it writes one (nothing half-imported).

use crate::bulk_formats::BulkItem;
use crate::{LinkOpError, Links};
use shardkit_links::{alias_key, parse_time};
use std::collections::HashSet;

impl Links {
    /// One answer per item, in order: `Ok` where the create would store the line. The
    /// store is read (codes at once, each alias), never written; nothing is minted.
    pub fn dry_run(
        &self,
        items: &[Result<BulkItem, String>],
    ) -> Result<Vec<Result<(), LinkOpError>>, LinkOpError> {
        let codes: Vec<String> = items
            .iter()
            .filter_map(|i| i.as_ref().ok()?.restored_code().map(String::from))
            .collect();
        let held = if codes.is_empty() {
            HashSet::new()
        } else {
            self.store().held_codes(&codes)?
        };
        let (mut codes_seen, mut aliases_seen) = (HashSet::new(), HashSet::new());
        let mut answers = Vec::with_capacity(items.len());
        for item in items {
            let answer = match item {
                Err(reason) => Err(LinkOpError::Invalid(reason.clone())),
                Ok(item) => self.check_line(item, &held, &mut codes_seen, &mut aliases_seen),
            };
            answers.push(answer);
        }
        Ok(answers)
    }

    fn check_line(
        &self,
        item: &BulkItem,
        held: &HashSet<String>,
        codes_seen: &mut HashSet<String>,
        aliases_seen: &mut HashSet<String>,
    ) -> Result<(), LinkOpError> {
        let mut request = item.request.clone();
        if let Some(restore) = &item.restore {
            // A restored link keeps its expiry, past or not, and its creation time.
            if let Some(t) = request.expires_at.take() {
                parse_time(&t).map_err(|e| LinkOpError::Invalid(format!("expires_at: {e}")))?;
            }
            if let Some(t) = &restore.created_at {
                parse_time(t).map_err(|e| LinkOpError::Invalid(format!("created_at: {e}")))?;
            }
        }
        self.check_fields(&request)?;
        if let Some(code) = item.restored_code() {
            self.restorable_code(code)?;
            if held.contains(code) || !codes_seen.insert(code.to_string()) {
                return Err(LinkOpError::CodeTaken(code.to_string()));
            }
        }
        if let Some(alias) = &request.alias {
            let domain = self.domains().stored(request.domain.as_deref())?;
            let key = alias_key(domain.as_deref(), alias).into_owned();
            if !aliases_seen.insert(key.clone()) {
                return Err(LinkOpError::Invalid(format!(
                    "the alias {alias:?} is on an earlier line too"
                )));
            }
            if let Some(owner) = self.store().resolve(&key)? {
                return Err(LinkOpError::AliasTaken {
                    alias: alias.clone(),
                    owner_code: owner.code,
                });
            }
        }
        Ok(())
    }
}
