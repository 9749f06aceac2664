//! The bulk formats, read by bulk create and written by export, so an export imports
//! back as is: JSON lines (one [`LinkLine`] object a line) or CSV with the header
//! [`CSV_HEADER`] (tags separated by `|`, redirect rules as their JSON array). An
//! exported line carries everything a link is (code, alias, creation time, expiry,
//! visit limit, redirect, tags, rules), its click
//! total and its clicks per day (`daily`: `{"2026-11-23": 3, …}` in JSON,
//! `2026-11-23:3|2026-11-24:5` in CSV), and its click analytics (`analytics`, per day:
//! people, bots and each dimension's values; the same JSON in a CSV cell); a line with
//! a `code` restores that link, a line without makes a new one.

use super::analytics::export::LinkAnalytics;
use super::NewLink;
use serde::{Deserialize, Serialize};
use shardkit_links::{format_day, format_time, parse_day, Link};
use std::collections::BTreeMap;

/// Which bulk format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object a line.
    JsonLines,
    /// CSV with a header row.
    Csv,
}

/// The CSV header of an export (an import may hold any of these columns, `url` first).
pub const CSV_HEADER: [&str; 15] = [
    "url",
    "code",
    "alias",
    "created_at",
    "expires_at",
    "max_visits",
    "redirect",
    "tags",
    "clicks",
    "daily",
    "password_protected",
    "analytics",
    "rules",
    "domain",
    "title",
];

/// CSV columns an import takes besides [`CSV_HEADER`].
pub const CSV_IMPORT_ONLY: [&str; 1] = ["password"];

/// The most lines one bulk request may hold.
pub const MAX_LINES: usize = 100_000;

/// One line of a bulk file: the body of `POST /api/links` plus, for a line that
/// restores an exported link, its `code`, `created_at` and `clicks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkLine {
    /// The generated code to restore (absent: a new code is minted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The long URL.
    pub url: String,
    /// Custom alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// With `[links] domains`: the link's domain (absent: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Creation time (RFC 3339), kept by a restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// RFC 3339 instant after which the link answers 410 (may be past in a restore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Clicks after which the link answers 410.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// 301, 302, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<u16>,
    /// Labels for listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Redirect rules, as `POST /api/links` takes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<shardkit_links::RedirectRule>>,
    /// Clicks so far (restored as the link's total, so visits left stay the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clicks: Option<u64>,
    /// Clicks per UTC day (`YYYY-MM-DD`), the days that had any (restored as the
    /// link's daily series, so its stats page draws the same chart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily: Option<BTreeMap<String, u64>>,
    /// Click analytics per UTC day (restored onto the link's stats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analytics: Option<LinkAnalytics>,
    /// Hand back an existing plain link for the same URL (new links only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<bool>,
    /// The link's password (import only: an export never carries it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Written by an export for a link that has a password (which it does not carry):
    /// importing the line needs a `password` again, so the link is not left open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_protected: Option<bool>,
}

/// What a restored line keeps of the exported link beyond a new link's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The code to store the link under; `None`: a fresh one (a link imported from
    /// another shortener under an alias keeps its time and clicks, not a code of ours).
    pub code: Option<String>,
    /// Creation time (RFC 3339); `None`: now.
    pub created_at: Option<String>,
    /// Clicks to put back on the link's total.
    pub clicks: u64,
    /// Clicks to put back per day: (day number, clicks).
    pub daily: Vec<(u64, u64)>,
    /// Click analytics to put back.
    pub analytics: LinkAnalytics,
}

/// One parsed bulk line: a new link, or a restore of an exported one.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkItem {
    /// The fields a new link has.
    pub request: NewLink,
    /// Present when the line carries a `code`.
    pub restore: Option<Restore>,
    /// The name of the API key creating it (set by the server, never by the line).
    pub author: Option<String>,
}

impl BulkItem {
    /// The code this line restores, if it names one.
    pub fn restored_code(&self) -> Option<&str> {
        self.restore.as_ref()?.code.as_deref()
    }

    /// Whether its code is minted here (no code given).
    pub fn minted(&self) -> bool {
        self.restored_code().is_none()
    }

    /// A new link (no restore).
    pub fn new_link(request: NewLink) -> Self {
        Self {
            request,
            restore: None,
            author: None,
        }
    }
}

impl TryFrom<LinkLine> for BulkItem {
    type Error = String;

    fn try_from(line: LinkLine) -> Result<Self, String> {
        if line.password_protected == Some(true) && line.password.is_none() {
            return Err(
                "the link had a password, which an export does not carry: give it one (\"password\") to import it"
                    .into(),
            );
        }
        let restores = line.created_at.is_some()
            || line.clicks.is_some()
            || line.daily.is_some()
            || line.analytics.is_some();
        if line.code.is_some() && line.reuse == Some(true) {
            return Err("reuse cannot go with code: a line with a code restores that link".into());
        }
        if line.code.is_none() && restores && line.alias.is_none() {
            return Err(
                "created_at, clicks, daily and analytics restore a link and need its code or alias"
                    .into(),
            );
        }
        if line.code.is_none() && restores && line.reuse == Some(true) {
            return Err("reuse cannot go with created_at, clicks, daily or analytics".into());
        }
        let restore = if line.code.is_some() || restores {
            let analytics = line.analytics.unwrap_or_default();
            // Checked here, so the restore after the write cannot fail on it.
            super::analytics::export::tally(0, &analytics)?;
            let mut daily = Vec::new();
            for (day, n) in line.daily.unwrap_or_default() {
                daily.push((parse_day(&day).map_err(|e| format!("daily: {e}"))?, n));
            }
            Some(Restore {
                code: line.code,
                created_at: line.created_at,
                clicks: line.clicks.unwrap_or(0),
                daily,
                analytics,
            })
        } else {
            None
        };
        Ok(BulkItem {
            request: NewLink {
                url: line.url,
                alias: line.alias,
                domain: line.domain,
                title: line.title,
                expires_at: line.expires_at,
                max_visits: line.max_visits,
                redirect: line.redirect,
                tags: line.tags,
                reuse: line.reuse,
                password: line.password,
                region: None,
                rules: line.rules,
            },
            restore,
            author: None,
        })
    }
}

impl Format {
    /// From a content type or a `format=` value: anything mentioning csv is CSV.
    pub fn detect(hint: &str) -> Format {
        if hint.to_ascii_lowercase().contains("csv") {
            Format::Csv
        } else {
            Format::JsonLines
        }
    }
}

/// One data line of a bulk body: its line number in the body (1-based, blank lines
/// counted) and the item or the reason it is bad.
pub type ParsedLine = (usize, Result<BulkItem, String>);

/// Parses a bulk body into one item (or the reason it is bad) per data line, each with
/// its line number in the body. Blank lines are skipped but counted.
pub fn parse(format: Format, body: &str) -> Result<Vec<ParsedLine>, String> {
    let out: Vec<ParsedLine> = match format {
        Format::JsonLines => body
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                let item = serde_json::from_str::<LinkLine>(l)
                    .map_err(|e| e.to_string())
                    .and_then(BulkItem::try_from)
                    .map_err(|e| format!("line {}: {e}", n + 1));
                (n + 1, item)
            })
            .collect(),
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .flexible(true)
                .from_reader(body.as_bytes());
            let headers = reader
                .headers()
                .map_err(|e| format!("the CSV header cannot be read: {e}"))?
                .clone();
            if headers.iter().next().map(str::trim) != Some("url") {
                return Err(format!(
                    "the CSV header must start with url (columns: {})",
                    CSV_HEADER.join(",")
                ));
            }
            for h in headers.iter() {
                if !CSV_HEADER.contains(&h.trim()) && !CSV_IMPORT_ONLY.contains(&h.trim()) {
                    return Err(format!(
                        "unknown CSV column {h:?}; the columns are {}",
                        CSV_HEADER.join(",")
                    ));
                }
            }
            // The csv crate's line count skips blank lines, and a record's position is
            // where the blank lines before it begin: count the newlines up to its text.
            let line_at = |position: Option<&csv::Position>| {
                let mut byte = position.map_or(0, |p| p.byte() as usize).min(body.len());
                let bytes = body.as_bytes();
                while byte < bytes.len() && matches!(bytes[byte], b'\n' | b'\r') {
                    byte += 1;
                }
                bytes[..byte].iter().filter(|&&b| b == b'\n').count() + 1
            };
            reader
                .records()
                .map(|record| match record {
                    Ok(record) => {
                        let line = line_at(record.position());
                        (line, from_row(&headers, &record, line))
                    }
                    Err(e) => {
                        let line = line_at(e.position());
                        (line, Err(format!("line {line}: {e}")))
                    }
                })
                .collect()
        }
    };
    if out.len() > MAX_LINES {
        return Err(format!(
            "{} lines in one request; at most {MAX_LINES}, split the file",
            out.len()
        ));
    }
    Ok(out)
}

fn from_row(
    headers: &csv::StringRecord,
    row: &csv::StringRecord,
    number: usize,
) -> Result<BulkItem, String> {
    let mut link = LinkLine::default();
    let number_of = |name: &str, value: &str| -> Result<u64, String> {
        value
            .parse()
            .map_err(|_| format!("line {number}: {name} {value:?} is not a number"))
    };
    for (name, value) in headers.iter().zip(row.iter()) {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match name.trim() {
            "url" => link.url = value.to_string(),
            "code" => link.code = Some(value.to_string()),
            "alias" => link.alias = Some(value.to_string()),
            "domain" => link.domain = Some(value.to_string()),
            "title" => link.title = Some(value.to_string()),
            "created_at" => link.created_at = Some(value.to_string()),
            "expires_at" => link.expires_at = Some(value.to_string()),
            "max_visits" => link.max_visits = Some(number_of("max_visits", value)?),
            "redirect" => {
                link.redirect =
                    Some(value.parse().map_err(|_| {
                        format!("line {number}: redirect {value:?} is not a number")
                    })?)
            }
            "clicks" => link.clicks = Some(number_of("clicks", value)?),
            "password" => link.password = Some(value.to_string()),
            "password_protected" => {
                link.password_protected = Some(match value {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(format!(
                            "line {number}: password_protected {value:?} is not true or false"
                        ))
                    }
                })
            }
            "daily" => {
                let mut days = BTreeMap::new();
                for pair in value.split('|').map(str::trim).filter(|p| !p.is_empty()) {
                    let (day, n) = pair.split_once(':').ok_or_else(|| {
                        format!("line {number}: daily {pair:?} is not day:clicks like 2026-11-23:3")
                    })?;
                    days.insert(day.trim().to_string(), number_of("daily clicks", n.trim())?);
                }
                link.daily = Some(days);
            }
            "analytics" => {
                link.analytics = Some(serde_json::from_str(value).map_err(|e| {
                    format!("line {number}: analytics is not the JSON an export writes: {e}")
                })?)
            }
            "rules" => {
                link.rules = Some(serde_json::from_str(value).map_err(|e| {
                    format!("line {number}: rules is not a JSON array of rules: {e}")
                })?)
            }
            "tags" => {
                link.tags = Some(
                    value
                        .split('|')
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty())
                        .collect(),
                )
            }
            _ => {}
        }
    }
    BulkItem::try_from(link).map_err(|e| format!("line {number}: {e}"))
}

/// A link's clicks as export writes them: the total and (day number, clicks) for
/// each day that had any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clicks {
    /// All clicks.
    pub total: u64,
    /// Per UTC day, oldest first.
    pub daily: Vec<(u64, u64)>,
    /// Click analytics by day.
    pub analytics: LinkAnalytics,
}

/// A stored link, with its clicks, as the line that restores it.
pub fn as_line(link: &Link, clicks: &Clicks) -> LinkLine {
    LinkLine {
        code: Some(link.code.clone()),
        url: link.url.clone(),
        alias: link.alias.clone(),
        domain: link.domain.clone(),
        title: link.title.clone(),
        created_at: Some(format_time_exact(link.created_at)),
        expires_at: link.expires_at.map(format_time_exact),
        max_visits: link.max_visits,
        redirect: Some(link.redirect.status()),
        tags: if link.tags.is_empty() {
            None
        } else {
            Some(link.tags.clone())
        },
        rules: (!link.rules.is_empty()).then(|| link.rules.clone()),
        clicks: Some(clicks.total),
        daily: (!clicks.daily.is_empty()).then(|| {
            clicks
                .daily
                .iter()
                .map(|&(day, n)| (format_day(day), n))
                .collect()
        }),
        analytics: (!clicks.analytics.is_empty()).then(|| clicks.analytics.clone()),
        reuse: None,
        password: None,
        password_protected: link.password_hash.is_some().then_some(true),
    }
}

/// RFC 3339 with milliseconds when the instant has them, so a restore keeps it exactly.
fn format_time_exact(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format_time(ms)
    } else {
        humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
        )
        .to_string()
    }
}

/// Appends links with their clicks to `out` in `format` (the CSV header first when
/// `header`).
pub fn write(format: Format, links: &[(Link, Clicks)], header: bool, out: &mut Vec<u8>) {
    match format {
        Format::JsonLines => {
            for (link, clicks) in links {
                if serde_json::to_writer(&mut *out, &as_line(link, clicks)).is_ok() {
                    out.push(b'\n');
                }
            }
        }
        Format::Csv => {
            let mut writer = csv::Writer::from_writer(out);
            if header {
                let _ = writer.write_record(CSV_HEADER);
            }
            for (link, clicks) in links {
                let r = as_line(link, clicks);
                let _ = writer.write_record([
                    r.url,
                    r.code.unwrap_or_default(),
                    r.alias.unwrap_or_default(),
                    r.created_at.unwrap_or_default(),
                    r.expires_at.unwrap_or_default(),
                    r.max_visits.map(|n| n.to_string()).unwrap_or_default(),
                    r.redirect.map(|n| n.to_string()).unwrap_or_default(),
                    r.tags.map(|t| t.join("|")).unwrap_or_default(),
                    r.clicks.map(|n| n.to_string()).unwrap_or_default(),
                    r.daily
                        .map(|days| {
                            days.iter()
                                .map(|(day, n)| format!("{day}:{n}"))
                                .collect::<Vec<_>>()
                                .join("|")
                        })
                        .unwrap_or_default(),
                    r.password_protected
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                    r.analytics
                        .and_then(|a| serde_json::to_string(&a).ok())
                        .unwrap_or_default(),
                    r.rules
                        .and_then(|rules| serde_json::to_string(&rules).ok())
                        .unwrap_or_default(),
                    r.domain.unwrap_or_default(),
                    r.title.unwrap_or_default(),
                ]);
            }
            let _ = writer.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // The bulk parsers take whatever a client sends: they answer, never panic.
        #[test]
        fn parsers_never_panic(body in "(?s).{0,400}", csv_first in any::<bool>()) {
            let _ = parse(Format::JsonLines, &body);
            let csv = if csv_first { format!("url,alias,tags\n{body}") } else { body.clone() };
            let _ = parse(Format::Csv, &csv);
        }
    }

    #[test]
    fn line_numbers_count_blank_lines() {
        let parsed = parse(
            Format::JsonLines,
            "{\"url\":\"https://a.example/\"}\n\n  \n{\"url\":1}\n",
        )
        .unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].0, 1);
        assert_eq!(parsed[1].0, 4);
        assert!(parsed[1].1.as_ref().unwrap_err().starts_with("line 4"));
        let csv = "url,alias\nhttps://a.example/,\n\n\nhttps://b.example/,x\n";
        let lines: Vec<usize> = parse(Format::Csv, csv)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(lines, [2, 5]);
    }

    #[test]
    fn both_formats_parse_and_write_back() {
        let csv = "url,alias,tags,max_visits\nhttps://a.example/,my-alias,x|y,3\n\"https://b.example/?q=1,2\",,,\n";
        let parsed = parse(Format::Csv, csv).unwrap();
        let first = &parsed[0].1.as_ref().unwrap().request;
        assert_eq!(first.alias.as_deref(), Some("my-alias"));
        assert_eq!(
            first.tags.as_deref(),
            Some(&["x".to_string(), "y".to_string()][..])
        );
        assert_eq!(
            parsed[1].1.as_ref().unwrap().request.url,
            "https://b.example/?q=1,2"
        );
        assert!(parse(Format::Csv, "link\nx\n").is_err());
        let link = Link {
            id: 1,
            url: "https://b.example/?q=1,2".into(),
            code: "a000000".into(),
            alias: Some("b-link".into()),
            domain: None,
            title: None,
            created_at: 1_790_000_000_123,
            expires_at: Some(1_800_000_000_000),
            max_visits: Some(3),
            redirect: shardkit_links::Redirect::Temporary,
            tags: vec!["x".into(), "y".into()],
            password_hash: None,
            author: None,
            rules: vec![],
        };
        let mut day = crate::analytics::export::DayLine {
            people: 4,
            bots: 1,
            ..Default::default()
        };
        day.referrer.insert("news.example.com".into(), 3);
        day.referrer.insert("direct".into(), 1);
        day.country.insert("DE".into(), 4);
        let clicks = Clicks {
            total: 5,
            daily: vec![(20_410, 2), (20_415, 3)],
            analytics: [("2025-11-17".to_string(), day)].into(),
        };
        for format in [Format::Csv, Format::JsonLines] {
            let mut out = Vec::new();
            write(format, &[(link.clone(), clicks.clone())], true, &mut out);
            let text = std::str::from_utf8(&out).unwrap();
            assert!(
                text.contains("2025-11-18") && text.contains("2025-11-23"),
                "{text}"
            );
            let back = parse(format, text).unwrap();
            let expected = BulkItem::try_from(as_line(&link, &clicks)).unwrap();
            assert_eq!(back[0].1.as_ref().unwrap(), &expected, "{format:?}");
            let restore = expected.restore.unwrap();
            assert_eq!(restore.code.as_deref(), Some("a000000"));
            assert_eq!(restore.clicks, 5);
            assert_eq!(restore.daily, clicks.daily);
            assert_eq!(restore.analytics, clicks.analytics, "{format:?}");
            assert_eq!(
                shardkit_links::parse_time(restore.created_at.as_deref().unwrap()),
                Ok(link.created_at)
            );
        }
    }

    #[test]
    fn restore_fields_need_a_code() {
        let parsed = parse(
            Format::JsonLines,
            "{\"url\":\"https://a.example/\",\"clicks\":3}\n",
        )
        .unwrap();
        assert!(parsed[0].1.as_ref().unwrap_err().contains("need its code"));
        let bad_day = parse(
            Format::JsonLines,
            "{\"url\":\"https://a.example/\",\"code\":\"a000000\",\"daily\":{\"23/11/2026\":1}}\n",
        )
        .unwrap();
        let err = bad_day[0].1.as_ref().unwrap_err();
        assert!(err.contains("not a day like 2026-11-23"), "{err}");
        let bad_pair = parse(
            Format::Csv,
            "url,code,daily\nhttps://a.example/,a000000,2026-11-23=4\n",
        )
        .unwrap();
        assert!(bad_pair[0].1.as_ref().unwrap_err().contains("day:clicks"));
    }
}
