//! YOURLS's links: the rows of its `yourls_url` table (keyword, url, title,
//! timestamp, ip, clicks), from a `mysqldump` file or from its API's `stats` action,
//! a page of 1,000 at a time. Its times are the database server's local time, read as
//! UTC (run YOURLS's database in UTC, or shift them after).

use super::sql_dump::{self, Value};
use super::{path_fields, Found, SourceAuth};
use anyhow::{bail, Context};
use shardkit_link_service::bulk_formats::LinkLine;
use std::collections::HashSet;

/// Links a page of the API answers.
const PAGE: usize = 1_000;

/// The import line of one YOURLS link.
fn line(
    keyword: &str,
    url: &str,
    title: Option<&str>,
    timestamp: Option<&str>,
    clicks: Option<u64>,
) -> Result<LinkLine, String> {
    let mut line = LinkLine {
        url: url.to_string(),
        title: title
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from),
        clicks,
        ..LinkLine::default()
    };
    if let Some(t) = timestamp {
        line.created_at = Some(time(t)?);
    }
    path_fields(keyword, &mut line)?;
    Ok(line)
}

/// `2026-11-30 12:22:21` (MySQL's DATETIME) as RFC 3339, read as UTC.
fn time(text: &str) -> Result<String, String> {
    let t = text.trim();
    let ok = t.len() == 19 && t.as_bytes()[10] == b' ';
    if !ok {
        return Err(format!("its timestamp {t:?} is not YYYY-MM-DD HH:MM:SS"));
    }
    Ok(format!("{}T{}Z", &t[..10], &t[11..]))
}

/// The links of a `mysqldump` of the `yourls_url` table (or any `*_url` table of
/// YOURLS: the first whose rows the dump holds).
pub fn from_dump(dump: &str) -> anyhow::Result<Vec<Found>> {
    let table = dump
        .match_indices("CREATE TABLE `")
        .filter_map(|(at, _)| dump[at + 14..].split('`').next())
        .find(|t| t.ends_with("_url"))
        .unwrap_or("yourls_url")
        .to_string();
    let (columns, rows) = sql_dump::rows(dump, &table).map_err(anyhow::Error::msg)?;
    let at = |name: &str| columns.iter().position(|c| c == name);
    let (Some(k), Some(u)) = (at("keyword"), at("url")) else {
        bail!("the dump's `{table}` has no keyword and url columns: is it YOURLS's links table?");
    };
    let (title, timestamp, clicks) = (at("title"), at("timestamp"), at("clicks"));
    let text = |row: &[Value], i: Option<usize>| i.and_then(|i| row.get(i)).cloned().flatten();
    Ok(rows
        .into_iter()
        .map(|(n, row)| {
            let keyword = text(&row, Some(k)).unwrap_or_default();
            let place = format!("row of `{keyword}` (dump line {n})");
            let line = match text(&row, Some(u)) {
                None => Err("it has no url".to_string()),
                Some(url) => {
                    let clicks = match text(&row, clicks).map(|c| c.parse::<u64>()) {
                        Some(Err(_)) => Err("its clicks are not a count".to_string()),
                        Some(Ok(c)) => Ok(Some(c)),
                        None => Ok(None),
                    };
                    clicks.and_then(|clicks| {
                        line(
                            &keyword,
                            &url,
                            text(&row, title).as_deref(),
                            text(&row, timestamp).as_deref(),
                            clicks,
                        )
                    })
                }
            };
            Found { place, line }
        })
        .collect())
}

/// The links of a running YOURLS, through `yourls-api.php?action=stats`, newest first,
/// a page at a time; the total it reports is checked against what came back, since
/// links made during the import, or many made in one second, move its pages.
pub fn from_api(site: &str, auth: &SourceAuth) -> anyhow::Result<Vec<Found>> {
    let api = format!("{}/yourls-api.php", site.trim_end_matches('/'));
    let mut query: Vec<(&str, String)> = vec![
        ("action", "stats".into()),
        ("filter", "last".into()),
        ("format", "json".into()),
        ("limit", PAGE.to_string()),
    ];
    match (&auth.signature, &auth.user, &auth.password) {
        (Some(signature), _, _) => query.push(("signature", signature.clone())),
        (None, Some(user), Some(password)) => {
            query.push(("username", user.clone()));
            query.push(("password", password.clone()));
        }
        _ => bail!("YOURLS's API needs --source-signature, or --source-user and --source-password"),
    }
    let client = reqwest::blocking::Client::new();
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut total = None;
    for page in 0.. {
        let mut q = query.clone();
        q.push(("start", (page * PAGE).to_string()));
        let response = client
            .get(&api)
            .query(&q)
            .send()
            .with_context(|| format!("cannot reach {api}"))?;
        let status = response.status();
        let answer: serde_json::Value = response
            .json()
            .with_context(|| format!("{api} answered {status} with something that is not JSON"))?;
        if !status.is_success() {
            bail!(
                "{api} refused the request ({status}): {}",
                answer["message"].as_str().unwrap_or("?")
            );
        }
        total = total.or_else(|| {
            answer["stats"]["total_links"]
                .as_str()
                .and_then(|t| t.parse::<usize>().ok())
                .or(answer["stats"]["total_links"].as_u64().map(|t| t as usize))
        });
        let links = answer["links"].as_object().cloned().unwrap_or_default();
        let count = links.len();
        // `link_1`, `link_2`, …: in the answer's order.
        let mut ordered: Vec<(usize, serde_json::Value)> = links
            .into_iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("link_")?.parse().ok()?, v)))
            .collect();
        ordered.sort_by_key(|(i, _)| *i);
        for (i, link) in ordered {
            let short = link["shorturl"].as_str().unwrap_or_default();
            let keyword = short.rsplit('/').next().unwrap_or_default().to_string();
            if !seen.insert(keyword.clone()) {
                continue;
            }
            let clicks = link["clicks"]
                .as_u64()
                .or_else(|| link["clicks"].as_str()?.parse().ok());
            let place = format!("`{keyword}` (API page {}, link {i})", page + 1);
            let line = match link["url"].as_str() {
                None => Err("it has no url".to_string()),
                Some(url) => line(
                    &keyword,
                    url,
                    link["title"].as_str(),
                    link["timestamp"].as_str(),
                    clicks,
                ),
            };
            found.push(Found { place, line });
        }
        if count < PAGE {
            break;
        }
    }
    if let Some(total) = total {
        if total != found.len() {
            bail!(
                "YOURLS reports {total} links but its pages gave {} different ones (links made during the import, or many in one second, move its pages): import from a mysqldump of yourls_url instead",
                found.len()
            );
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dumps_rows_become_lines_with_their_paths_times_and_clicks() {
        let dump = "CREATE TABLE `yourls_url` (\n  `keyword` varchar(100) NOT NULL,\n  `url` text NOT NULL,\n  `title` text,\n  `timestamp` timestamp NOT NULL,\n  `ip` varchar(41) NOT NULL,\n  `clicks` int(10) unsigned NOT NULL,\n  PRIMARY KEY (`keyword`)\n);\nINSERT INTO `yourls_url` VALUES ('launch','https://example.com/l','Launch','2026-11-30 12:22:20','127.0.0.1',3),('abcdefg','https://example.com/c',NULL,'2026-11-30 12:22:21','127.0.0.1',0),('a.b','https://example.com/x','','2026-11-30 12:22:22','127.0.0.1',0);\n";
        let found = from_dump(dump).unwrap();
        let launch = found[0].line.as_ref().unwrap();
        assert_eq!(launch.alias.as_deref(), Some("launch"));
        assert_eq!(launch.title.as_deref(), Some("Launch"));
        assert_eq!(launch.created_at.as_deref(), Some("2026-11-30T12:22:20Z"));
        assert_eq!(launch.clicks, Some(3));
        let coded = found[1].line.as_ref().unwrap();
        assert_eq!(coded.code.as_deref(), Some("abcdefg"));
        assert_eq!(coded.alias, None);
        let err = found[2].line.as_ref().unwrap_err();
        assert!(err.contains("a.b"), "{err}");
        assert!(found[2].place.contains("a.b"));
    }
}
