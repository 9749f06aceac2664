//! Links as PostgreSQL rows: the columns every query selects, the conversions of
//! times and statuses, and what the indexes key on.

use shardkit_links::{Link, Redirect, StoreError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::Row;

/// The columns every link query selects, in the order [`row_to_link`] reads them.
pub(super) const COLUMNS: &str =
    "id, code, alias_name, url, created_at, expires_at, max_visits, redirect, tags, password_hash, author, rules::text, domain, title";

/// How many columns [`COLUMNS`] names: a query that selects more after them finds
/// its first extra column at this index.
pub(super) const COLUMN_COUNT: usize = 14;

/// [`COLUMNS`] qualified by the table alias `l`, for joins.
pub(super) const L_COLUMNS: &str =
    "l.id, l.code, l.alias_name, l.url, l.created_at, l.expires_at, l.max_visits, l.redirect, l.tags, l.password_hash, l.author, l.rules::text, l.domain, l.title";

/// Whether `"reuse": true` may hand `link` out again.
pub(super) fn reusable(link: &Link) -> bool {
    link.reusable()
}

/// The key of the URL indexes (`links.url_hash`, `link_urls.url_hash`).
pub(super) fn url_hash(url: &str) -> i64 {
    shardkit_ring::hash_bytes(url.as_bytes()) as i64
}

/// Unix ms to a `timestamptz` value.
pub(super) fn to_time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A `timestamptz` value to Unix ms.
pub(super) fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The `rules` column's value: the rules' JSON array, NULL for none.
pub(super) fn rules_json(link: &Link) -> Option<String> {
    (!link.rules.is_empty()).then(|| serde_json::to_string(&link.rules).unwrap_or_default())
}

/// Reads one row of [`COLUMNS`] (columns 0 to 13).
pub(super) fn row_to_link(row: &Row) -> Result<Link, StoreError> {
    let id: i64 = row.try_get(0).map_err(|e| StoreError::Corrupt {
        id: 0,
        reason: e.to_string(),
    })?;
    let corrupt = |e: tokio_postgres::Error| StoreError::Corrupt {
        id: id as u64,
        reason: e.to_string(),
    };
    let redirect: i16 = row.try_get(7).map_err(corrupt)?;
    let redirect = Redirect::from_status(redirect as u16).ok_or_else(|| StoreError::Corrupt {
        id: id as u64,
        reason: format!("redirect status {redirect}"),
    })?;
    let rules = match row.try_get::<_, Option<String>>(11).map_err(corrupt)? {
        Some(json) => serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
            id: id as u64,
            reason: format!("rules: {e}"),
        })?,
        None => Vec::new(),
    };
    Ok(Link {
        id: id as u64,
        code: row.try_get(1).map_err(corrupt)?,
        alias: row.try_get(2).map_err(corrupt)?,
        domain: row.try_get(12).map_err(corrupt)?,
        title: row.try_get(13).map_err(corrupt)?,
        url: row.try_get(3).map_err(corrupt)?,
        created_at: to_ms(row.try_get(4).map_err(corrupt)?),
        expires_at: row
            .try_get::<_, Option<SystemTime>>(5)
            .map_err(corrupt)?
            .map(to_ms),
        max_visits: row
            .try_get::<_, Option<i64>>(6)
            .map_err(corrupt)?
            .map(|v| v as u64),
        redirect,
        tags: row.try_get(8).map_err(corrupt)?,
        password_hash: row.try_get(9).map_err(corrupt)?,
        author: row.try_get(10).map_err(corrupt)?,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_and_reuse_rules_hold() {
        assert_eq!(to_ms(to_time(1_790_000_000_123)), 1_790_000_000_123);
        let mut link = Link {
            id: 1,
            url: "https://example.com/".into(),
            code: "a000001".into(),
            alias: None,
            domain: None,
            title: None,
            created_at: 0,
            expires_at: None,
            max_visits: None,
            redirect: Redirect::Found,
            tags: vec![],
            password_hash: None,
            author: None,
            rules: vec![],
        };
        assert!(reusable(&link));
        link.max_visits = Some(3);
        assert!(!reusable(&link));
        assert_eq!(
            url_hash("https://example.com/"),
            url_hash("https://example.com/")
        );
        assert_eq!(COLUMNS.split(", ").count(), L_COLUMNS.split(", ").count());
        assert_eq!(COLUMNS.split(", ").count(), COLUMN_COUNT);
    }
}
