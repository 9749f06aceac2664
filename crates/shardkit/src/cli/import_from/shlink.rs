//! Shlink's short URLs through its REST API (`GET /rest/v3/short-urls?page=N&
//! itemsPerPage=50` with `X-Api-Key`), as its own JavaScript SDK types them:
//! `shortCode` is the path, `longUrl` the URL, `title`, `tags`, `dateCreated`, the
//! visits' `total`, `meta.validUntil` the expiry and `meta.maxVisits` the visit limit;
//! `domain` (a custom domain, `null` for Shlink's default) becomes the link's domain,
//! which must then be one of `[links] domains` here (the check says so otherwise).
//! `meta.validSince` has no counterpart and is left behind.

use super::{path_fields, Found, SourceAuth};
use anyhow::{bail, Context};
use serde_json::Value;
use shardkit_link_service::bulk_formats::LinkLine;

/// Short URLs a page asks for.
const PAGE: u64 = 50;

/// An RFC 3339 time with any offset (Shlink writes `+02:00`) as UTC with `Z`.
fn utc(text: &str) -> Result<String, String> {
    let bad = || format!("its time {text:?} is not an RFC 3339 time");
    let t = text.trim();
    if t.len() < 20 {
        return Err(bad());
    }
    let (base, zone) = t.split_at(19);
    let zone = zone.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset_s: i64 = match zone {
        "Z" | "z" | "+00:00" | "-00:00" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let h: i64 = z[1..3].parse().map_err(|_| bad())?;
            let m: i64 = z[4..6].parse().map_err(|_| bad())?;
            let s = (h * 60 + m) * 60;
            if z.starts_with('+') {
                s
            } else {
                -s
            }
        }
        _ => return Err(bad()),
    };
    let local = shardkit_links::parse_time(&format!("{base}Z")).map_err(|_| bad())?;
    let ms = (local as i64)
        .checked_sub(offset_s * 1000)
        .ok_or_else(bad)?;
    Ok(shardkit_links::format_time(
        u64::try_from(ms).map_err(|_| bad())?,
    ))
}

/// The import line of one short URL, as Shlink's API shows it.
fn line(short: &Value) -> Result<LinkLine, String> {
    let code = short["shortCode"].as_str().ok_or("it has no shortCode")?;
    let mut line = LinkLine {
        url: short["longUrl"]
            .as_str()
            .ok_or("it has no longUrl")?
            .to_string(),
        domain: short["domain"].as_str().map(String::from),
        title: short["title"]
            .as_str()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from),
        clicks: short["visitsSummary"]["total"]
            .as_u64()
            .or(short["visitsCount"].as_u64()),
        max_visits: short["meta"]["maxVisits"].as_u64(),
        ..LinkLine::default()
    };
    let tags: Vec<String> = short["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str())
        .map(|t| t.trim().replace(' ', "-"))
        .filter(|t| !t.is_empty())
        .collect();
    line.tags = (!tags.is_empty()).then_some(tags);
    if let Some(t) = short["dateCreated"].as_str() {
        line.created_at = Some(utc(t)?);
    }
    if let Some(t) = short["meta"]["validUntil"].as_str() {
        line.expires_at = Some(utc(t)?);
    }
    path_fields(code, &mut line)?;
    Ok(line)
}

/// The short URLs of the Shlink at `site`, with the API key of `auth`.
pub fn from_api(site: &str, auth: &SourceAuth) -> anyhow::Result<Vec<Found>> {
    let Some(key) = &auth.key else {
        bail!("Shlink's API needs --source-key (an API key: shlink api-key:generate)");
    };
    let api = format!("{}/rest/v3/short-urls", site.trim_end_matches('/'));
    let client = reqwest::blocking::Client::new();
    let mut found = Vec::new();
    let mut total = None;
    for page in 1.. {
        let response = client
            .get(&api)
            .header("X-Api-Key", key)
            .query(&[("page", page), ("itemsPerPage", PAGE)])
            .send()
            .with_context(|| format!("cannot reach {api}"))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .with_context(|| format!("{api} answered {status} with something that is not JSON"))?;
        if !status.is_success() {
            // Shlink answers problems as RFC 7807: a title, and the detail.
            let why = [answer["title"].as_str(), answer["detail"].as_str()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            bail!("{api} refused the request ({status}): {why}");
        }
        let list = &answer["shortUrls"];
        total = total.or(list["pagination"]["totalItems"].as_u64());
        let pages = list["pagination"]["pagesCount"].as_u64().unwrap_or(0);
        for (i, short) in list["data"].as_array().into_iter().flatten().enumerate() {
            let code = short["shortCode"].as_str().unwrap_or_default();
            found.push(Found {
                place: format!("`{code}` (API page {page}, short URL {})", i + 1),
                line: line(short),
            });
        }
        if page >= pages {
            break;
        }
    }
    if let Some(total) = total {
        if total as usize != found.len() {
            bail!(
                "Shlink reports {total} short URLs but its pages gave {} (short URLs made or deleted during the import move them): try again",
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
    fn a_short_url_becomes_a_line_with_its_times_in_utc() {
        let l = line(&json!({"shortCode": "launch-day", "shortUrl": "https://s.test/launch-day",
            "longUrl": "https://example.com/l", "dateCreated": "2019-09-25T23:12:47+02:00",
            "visitsSummary": {"total": 10, "nonBots": 8, "bots": 2}, "tags": ["spring sale", "news"],
            "meta": {"validSince": null, "validUntil": "2030-01-01T00:00:00-05:00", "maxVisits": 100},
            "domain": "go.example", "title": "Launch"}))
        .unwrap();
        assert_eq!(l.alias.as_deref(), Some("launch-day"));
        assert_eq!(l.created_at.as_deref(), Some("2019-09-25T21:12:47Z"));
        assert_eq!(l.expires_at.as_deref(), Some("2030-01-01T05:00:00Z"));
        assert_eq!(l.clicks, Some(10));
        assert_eq!(l.max_visits, Some(100));
        assert_eq!(l.domain.as_deref(), Some("go.example"));
        assert_eq!(l.tags, Some(vec!["spring-sale".into(), "news".into()]));
        assert!(utc("yesterday").is_err());
    }
}
