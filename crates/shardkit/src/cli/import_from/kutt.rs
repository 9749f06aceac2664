//! Kutt's links through its REST API (`GET /api/v2/links?limit=50&skip=N` with the
//! account's `X-API-KEY`), a page of 50 (its most) at a time: `address` is the path,
//! `target` the URL, `description` the title, `visit_count` the clicks, `expire_in` the
//! expiry. A link with a password cannot come along (Kutt never shows it), and is
//! reported; its reported `total` is checked against what the pages gave.

use super::{path_fields, Found, SourceAuth};
use anyhow::{bail, Context};
use serde_json::Value;
use shardkit_link_service::bulk_formats::LinkLine;
use std::collections::HashSet;

/// Links a page of Kutt's API answers (its largest `limit`).
const PAGE: usize = 50;

/// The import line of one Kutt link, as its API shows it.
fn line(link: &Value) -> Result<LinkLine, String> {
    let address = link["address"].as_str().ok_or("it has no address")?;
    if link["password"].as_bool() == Some(true) {
        return Err(format!(
            "{address:?} has a password, which Kutt never shows: remove it there, or make the link here"
        ));
    }
    let mut line = LinkLine {
        url: link["target"]
            .as_str()
            .ok_or("it has no target")?
            .to_string(),
        title: link["description"]
            .as_str()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from),
        created_at: link["created_at"].as_str().map(String::from),
        expires_at: link["expire_in"].as_str().map(String::from),
        clicks: link["visit_count"].as_u64(),
        ..LinkLine::default()
    };
    path_fields(address, &mut line)?;
    Ok(line)
}

/// The links of the Kutt at `site`, with the API key of `auth`.
pub fn from_api(site: &str, auth: &SourceAuth) -> anyhow::Result<Vec<Found>> {
    let Some(key) = &auth.key else {
        bail!("Kutt's API needs --source-key (the API key of its settings page)");
    };
    let api = format!("{}/api/v2/links", site.trim_end_matches('/'));
    let client = reqwest::blocking::Client::new();
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut total = None;
    for page in 0.. {
        let response = client
            .get(&api)
            .header("X-API-KEY", key)
            .query(&[("limit", PAGE), ("skip", page * PAGE)])
            .send()
            .with_context(|| format!("cannot reach {api}"))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .with_context(|| format!("{api} answered {status} with something that is not JSON"))?;
        if !status.is_success() {
            bail!(
                "{api} refused the request ({status}): {}",
                answer["error"].as_str().unwrap_or("?")
            );
        }
        total = total.or(answer["total"].as_u64());
        let links = answer["data"].as_array().cloned().unwrap_or_default();
        for (i, link) in links.iter().enumerate() {
            let id = link["id"].as_str().unwrap_or_default().to_string();
            if !seen.insert(id) {
                continue;
            }
            let address = link["address"].as_str().unwrap_or_default();
            found.push(Found {
                place: format!("`{address}` (API page {}, link {})", page + 1, i + 1),
                line: line(link),
            });
        }
        if links.len() < PAGE {
            break;
        }
    }
    if let Some(total) = total {
        if total as usize != found.len() {
            bail!(
                "Kutt reports {total} links but its pages gave {} different ones (links made or deleted during the import move them): try again",
                found.len()
            );
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_kutt_link_becomes_a_line_and_a_password_is_named() {
        let l = line(&json!({"address": "launch-day", "target": "https://example.com/l", "description": "Launch",
            "visit_count": 4, "created_at": "2026-11-30T13:09:44.865Z", "expire_in": null, "password": false}))
        .unwrap();
        assert_eq!(l.alias.as_deref(), Some("launch-day"));
        assert_eq!(l.title.as_deref(), Some("Launch"));
        assert_eq!(l.clicks, Some(4));
        assert_eq!(l.created_at.as_deref(), Some("2026-11-30T13:09:44.865Z"));
        let locked =
            line(&json!({"address": "x", "target": "https://example.com/", "password": true}));
        assert!(locked.unwrap_err().contains("password"));
    }
}
