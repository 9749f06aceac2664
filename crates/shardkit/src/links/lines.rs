//! The bulk formats, read by bulk create and written by export, so an export imports
//! back as is: JSON lines (one [`NewLink`] object a line) or CSV with the header
//! `url,alias,expires_at,max_visits,redirect,tags` (tags separated by `|`).

use super::NewLink;
use shardkit_links::{format_time, Link};

/// Which bulk format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object a line.
    JsonLines,
    /// CSV with a header row.
    Csv,
}

/// The CSV header.
pub const CSV_HEADER: [&str; 6] = [
    "url",
    "alias",
    "expires_at",
    "max_visits",
    "redirect",
    "tags",
];

/// The most lines one bulk request may hold.
pub const MAX_LINES: usize = 100_000;

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

/// Parses a bulk body into one request (or the reason it is bad) per data line.
/// Blank JSON lines are skipped.
pub fn parse(format: Format, body: &str) -> Result<Vec<Result<NewLink, String>>, String> {
    let out: Vec<Result<NewLink, String>> = match format {
        Format::JsonLines => body
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                serde_json::from_str::<NewLink>(l).map_err(|e| format!("line {}: {e}", n + 1))
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
                if !CSV_HEADER.contains(&h.trim()) {
                    return Err(format!(
                        "unknown CSV column {h:?}; the columns are {}",
                        CSV_HEADER.join(",")
                    ));
                }
            }
            reader
                .records()
                .enumerate()
                .map(|(n, r)| {
                    r.map_err(|e| format!("row {}: {e}", n + 2))
                        .and_then(|r| from_row(&headers, &r, n + 2))
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
) -> Result<NewLink, String> {
    let mut link = NewLink::default();
    for (name, value) in headers.iter().zip(row.iter()) {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match name.trim() {
            "url" => link.url = value.to_string(),
            "alias" => link.alias = Some(value.to_string()),
            "expires_at" => link.expires_at = Some(value.to_string()),
            "max_visits" => {
                link.max_visits =
                    Some(value.parse().map_err(|_| {
                        format!("row {number}: max_visits {value:?} is not a number")
                    })?)
            }
            "redirect" => {
                link.redirect = Some(
                    value
                        .parse()
                        .map_err(|_| format!("row {number}: redirect {value:?} is not a number"))?,
                )
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
    Ok(link)
}

/// A stored link as the request that would make it again.
pub fn as_request(link: &Link) -> NewLink {
    NewLink {
        url: link.url.clone(),
        alias: link.alias.clone(),
        expires_at: link.expires_at.map(format_time),
        max_visits: link.max_visits,
        redirect: Some(link.redirect.status()),
        tags: if link.tags.is_empty() {
            None
        } else {
            Some(link.tags.clone())
        },
        reuse: None,
    }
}

/// Appends links to `out` in `format` (the CSV header first when `header`).
pub fn write(format: Format, links: &[Link], header: bool, out: &mut Vec<u8>) {
    match format {
        Format::JsonLines => {
            for link in links {
                if serde_json::to_writer(&mut *out, &as_request(link)).is_ok() {
                    out.push(b'\n');
                }
            }
        }
        Format::Csv => {
            let mut writer = csv::Writer::from_writer(out);
            if header {
                let _ = writer.write_record(CSV_HEADER);
            }
            for link in links {
                let r = as_request(link);
                let _ = writer.write_record([
                    r.url,
                    r.alias.unwrap_or_default(),
                    r.expires_at.unwrap_or_default(),
                    r.max_visits.map(|n| n.to_string()).unwrap_or_default(),
                    r.redirect.map(|n| n.to_string()).unwrap_or_default(),
                    r.tags.map(|t| t.join("|")).unwrap_or_default(),
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
    fn both_formats_parse_and_write_back() {
        let parsed = parse(
            Format::JsonLines,
            "{\"url\":\"https://a.example/\"}\n\n{\"url\":1}\n",
        )
        .unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parsed[0].is_ok() && parsed[1].as_ref().unwrap_err().starts_with("line 3"));
        let csv = "url,alias,tags,max_visits\nhttps://a.example/,my-alias,x|y,3\n\"https://b.example/?q=1,2\",,,\n";
        let parsed = parse(Format::Csv, csv).unwrap();
        let first = parsed[0].as_ref().unwrap();
        assert_eq!(first.alias.as_deref(), Some("my-alias"));
        assert_eq!(
            first.tags.as_deref(),
            Some(&["x".to_string(), "y".to_string()][..])
        );
        assert_eq!(parsed[1].as_ref().unwrap().url, "https://b.example/?q=1,2");
        assert!(parse(Format::Csv, "link\nx\n").is_err());
        let link = Link {
            id: 1,
            url: "https://b.example/?q=1,2".into(),
            code: "a000000".into(),
            alias: None,
            created_at: 0,
            expires_at: None,
            max_visits: Some(3),
            redirect: Default::default(),
            tags: vec!["x".into()],
        };
        for format in [Format::Csv, Format::JsonLines] {
            let mut out = Vec::new();
            write(format, std::slice::from_ref(&link), true, &mut out);
            let back = parse(format, std::str::from_utf8(&out).unwrap()).unwrap();
            assert_eq!(back[0].as_ref().unwrap(), &as_request(&link));
        }
    }
}
