//! Bitly's links from its CSV export. Its columns are matched by name (case and
//! spaces ignored) among the names Bitly's exports have used: the short link (`link`,
//! `bitlink`, `short link`, `short url`, `id`), the long URL (`long_url`, `long url`,
//! `destination`, `original url`), `title`, the creation time (`created_at`,
//! `created`, `date created`, `creation date`), `tags` (split at `,`, `|` or `;`,
//! spaces in a tag made `-`) and the clicks (`clicks`, `total clicks`,
//! `engagements`, `total engagements`).

use super::{path_fields, Found};
use anyhow::bail;
use shardkit_link_service::bulk_formats::LinkLine;

const SHORT: &[&str] = &["link", "bitlink", "shortlink", "shorturl", "id"];
const LONG: &[&str] = &["long_url", "longurl", "destination", "originalurl"];
const CREATED: &[&str] = &["created_at", "created", "datecreated", "creationdate"];
const CLICKS: &[&str] = &["clicks", "totalclicks", "engagements", "totalengagements"];

/// The links of a Bitly CSV export.
pub fn from_csv(text: &str) -> anyhow::Result<Vec<Found>> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = reader
        .headers()?
        .iter()
        .map(|h| h.trim().to_ascii_lowercase().replace(' ', ""))
        .collect();
    let at = |names: &[&str]| headers.iter().position(|h| names.contains(&h.as_str()));
    let (Some(short), Some(long)) = (at(SHORT), at(LONG)) else {
        bail!(
            "the CSV has no short-link column ({}) or no long-URL column ({}): is it Bitly's links export? Its header: {}",
            SHORT.join(", "),
            LONG.join(", "),
            headers.join(",")
        );
    };
    let (title, created, tags, clicks) = (at(&["title"]), at(CREATED), at(&["tags"]), at(CLICKS));
    let mut found = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let number = i + 2;
        let place = format!("CSV line {number}");
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                found.push(Found {
                    place,
                    line: Err(format!("unreadable: {e}")),
                });
                continue;
            }
        };
        let cell = |i: Option<usize>| {
            i.and_then(|i| row.get(i))
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        found.push(Found {
            place,
            line: line(
                cell(Some(short)).unwrap_or_default(),
                cell(Some(long)),
                cell(title),
                cell(created),
                cell(tags),
                cell(clicks),
            ),
        });
    }
    Ok(found)
}

fn line(
    short: &str,
    long: Option<&str>,
    title: Option<&str>,
    created: Option<&str>,
    tags: Option<&str>,
    clicks: Option<&str>,
) -> Result<LinkLine, String> {
    let url = long.ok_or("it has no long URL")?;
    // `bit.ly/3xYz`, `https://bit.ly/3xYz`, `bit.ly/3xYz?x`: the back-half.
    let path = short
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if path.is_empty() || !short.contains('/') {
        return Err(format!(
            "its short link {short:?} has no back-half (bit.ly/…)"
        ));
    }
    let mut line = LinkLine {
        url: url.to_string(),
        title: title.map(String::from),
        ..LinkLine::default()
    };
    if let Some(t) = created {
        line.created_at = Some(time(t)?);
    }
    if let Some(tags) = tags {
        let tags: Vec<String> = tags
            .split([',', '|', ';'])
            .map(|t| t.trim().replace(' ', "-"))
            .filter(|t| !t.is_empty())
            .collect();
        line.tags = (!tags.is_empty()).then_some(tags);
    }
    if let Some(c) = clicks {
        line.clicks = Some(
            c.replace(',', "")
                .parse()
                .map_err(|_| format!("its clicks {c:?} are not a count"))?,
        );
    }
    path_fields(path, &mut line)?;
    Ok(line)
}

/// A creation time as Bitly writes it: RFC 3339 (`2024-03-01T10:20:30+0000` too),
/// `YYYY-MM-DD HH:MM:SS` (UTC) or a day.
fn time(text: &str) -> Result<String, String> {
    let t = text.trim();
    let bad = || format!("its creation time {t:?} is not a date and time");
    if t.len() == 10 {
        return shardkit_links::parse_time(&format!("{t}T00:00:00Z"))
            .map(|_| format!("{t}T00:00:00Z"))
            .map_err(|_| bad());
    }
    if t.len() < 19 {
        return Err(bad());
    }
    let (day, rest) = (&t[..10], &t[11..19]);
    let tail = t[19..].trim();
    let utc = matches!(tail, "" | "Z" | "z" | "+0000" | "+00:00" | "UTC");
    if !utc {
        return Err(format!(
            "its creation time {t:?} is not in UTC (write it with Z or +0000)"
        ));
    }
    let text = format!("{day}T{rest}Z");
    shardkit_links::parse_time(&text).map_err(|_| bad())?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_becomes_lines_by_its_column_names() {
        let csv = "Title,Bitlink,Long URL,Date Created,Tags,Total Clicks\n\
                   Launch,bit.ly/launch-day,https://example.com/l,2024-03-01 10:20:30,\"spring, big news\",\"1,204\"\n\
                   ,https://bit.ly/3xYzAbC,https://example.com/c,2024-03-02T08:00:00+0000,,0\n\
                   Odd,bit.ly/a.b,https://example.com/o,2024-03-03,,\n";
        let found = from_csv(csv).unwrap();
        let first = found[0].line.as_ref().unwrap();
        assert_eq!(first.alias.as_deref(), Some("launch-day"));
        assert_eq!(first.title.as_deref(), Some("Launch"));
        assert_eq!(first.created_at.as_deref(), Some("2024-03-01T10:20:30Z"));
        assert_eq!(first.tags, Some(vec!["spring".into(), "big-news".into()]));
        assert_eq!(first.clicks, Some(1204));
        let second = found[1].line.as_ref().unwrap();
        assert_eq!(second.code.as_deref(), Some("3xYzAbC"));
        assert_eq!(second.created_at.as_deref(), Some("2024-03-02T08:00:00Z"));
        assert!(found[2].line.as_ref().unwrap_err().contains("a.b"));
        assert_eq!(found[2].place, "CSV line 4");
        assert!(from_csv("a,b\n1,2\n").is_err());
    }
}
