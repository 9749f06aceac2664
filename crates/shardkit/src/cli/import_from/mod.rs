//! `shardkit links import --from yourls|bitly|kutt|shlink FILE|URL`: the links of a shortener a
//! team leaves, each keeping its path (as our code where it has a code's shape, else
//! as an alias), URL, title, tags, creation time and visit count. Every link is
//! checked by the server first (a bulk dry run): a path already taken, or a link this
//! server cannot take, is reported by its place in the source and nothing is imported;
//! `--dry-run` stops there. Then the links go in batches, as `links import` sends them.
//!
//! - [`yourls`]: a `mysqldump` of YOURLS's `yourls_url` table, or its API (paged).
//! - [`bitly`]: Bitly's CSV export.
//! - [`kutt`]: Kutt's REST API (paged).
//! - [`shlink`]: Shlink's REST API (paged).
//! - [`sql_dump`]: the rows of one table of a `mysqldump` file.

mod bitly;
mod kutt;
mod shlink;
mod sql_dump;
mod yourls;

use super::api_server::ApiServer;
use anyhow::{bail, Context};
use clap::ValueEnum;
use serde_json::Value;
use shardkit::plural::plural;
use shardkit_link_service::bulk_formats::LinkLine;
use std::io::Write;

/// Where the links come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Source {
    /// YOURLS: a `mysqldump DB yourls_url` file, or the site's URL (its API, with
    /// `--source-user` and `--source-password`, or `--source-signature`).
    Yourls,
    /// Bitly: the CSV of its links export.
    Bitly,
    /// Kutt: the site's URL (its API, with `--source-key`).
    Kutt,
    /// Shlink: the site's URL (its REST API, with `--source-key`).
    Shlink,
}

/// How to reach a source's API.
#[derive(Debug, Clone, Default)]
pub struct SourceAuth {
    /// User name (YOURLS).
    pub user: Option<String>,
    /// Password (YOURLS).
    pub password: Option<String>,
    /// Signature token (YOURLS).
    pub signature: Option<String>,
    /// API key (Kutt, Shlink).
    pub key: Option<String>,
}

/// One link read from a source: where it is there (for messages), and the line the
/// bulk API takes, or why it cannot be one.
pub struct Found {
    /// `row 12`, `link 3 of page 2`: what names it in the source.
    pub place: String,
    /// The import line, or why the link cannot be imported.
    pub line: Result<LinkLine, String>,
}

/// The links of `from` (a file, or a URL where the source has an API).
fn read(source: Source, from: &str, auth: &SourceAuth) -> anyhow::Result<Vec<Found>> {
    let is_url = from.starts_with("http://") || from.starts_with("https://");
    match (source, is_url) {
        (Source::Yourls, true) => yourls::from_api(from, auth),
        (Source::Yourls, false) => yourls::from_dump(&read_file(from)?),
        (Source::Bitly, false) => bitly::from_csv(&read_file(from)?),
        (Source::Kutt, true) => kutt::from_api(from, auth),
        (Source::Shlink, true) => shlink::from_api(from, auth),
        (Source::Shlink, false) => bail!(
            "--from shlink reads Shlink's REST API: give the site's URL (and --source-key), not a file"
        ),
        (Source::Kutt, false) => bail!(
            "--from kutt reads Kutt's API: give the site's URL (and --source-key), not a file"
        ),
        (Source::Bitly, true) => bail!(
            "--from bitly reads Bitly's CSV export (a file), not a URL: export the links in Bitly and give the file"
        ),
    }
}

fn read_file(path: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))
}

/// The path fields of a link whose path was `path` in the source: our code where it
/// has a code's shape (7 to 11 letters and digits), else an alias; an error naming
/// why it can be neither.
pub fn path_fields(path: &str, line: &mut LinkLine) -> Result<(), String> {
    if shardkit_links::looks_like_code(path) {
        line.code = Some(path.to_string());
        return Ok(());
    }
    shardkit_links::validate_alias(path)
        .map_err(|e| format!("its path {path:?} can be neither a code nor an alias here: {e}"))?;
    line.alias = Some(path.to_string());
    Ok(())
}

/// An import from another shortener, as `links import --from` was asked for it.
pub struct Import<'a> {
    /// The shortener.
    pub source: Source,
    /// Its export (a file) or its URL.
    pub from: &'a str,
    /// How to reach its API.
    pub auth: SourceAuth,
    /// The domain the links go to (`None`: the default).
    pub domain: Option<&'a str>,
    /// Check and report only.
    pub dry_run: bool,
    /// Links a request.
    pub batch: usize,
}

/// Checks every link with the server, then (unless `dry_run`) imports them; prints one
/// JSON object a link to `out` and a summary to stderr.
pub fn run(import: &Import<'_>, server: &ApiServer, out: &mut impl Write) -> anyhow::Result<()> {
    let Import {
        source,
        from,
        ref auth,
        domain,
        dry_run,
        batch,
    } = *import;
    let mut found = read(source, from, auth)?;
    if let Some(domain) = domain {
        for f in &mut found {
            if let Ok(line) = &mut f.line {
                line.domain = Some(domain.to_string());
            }
        }
    }
    let client = server.client()?;
    let post = |query: &str, lines: &[&Found]| -> anyhow::Result<Vec<Value>> {
        let mut body = String::new();
        for f in lines {
            if let Ok(line) = &f.line {
                body.push_str(&serde_json::to_string(line)?);
                body.push('\n');
            }
        }
        let answer = super::links::post_bulk(&client, server, query, "application/x-ndjson", body)?;
        Ok(answer["results"].as_array().cloned().unwrap_or_default())
    };
    // Every readable link checked, a batch at a time; then the report by place.
    let readable: Vec<&Found> = found.iter().filter(|f| f.line.is_ok()).collect();
    let mut problems = 0u64;
    let mut verdicts: Vec<Value> = Vec::new();
    for chunk in readable.chunks(batch) {
        verdicts.extend(post("dry_run=true", chunk)?);
    }
    let mut checked = readable.iter().zip(&verdicts);
    for f in &found {
        let row = match &f.line {
            Err(why) => serde_json::json!({ "source": f.place, "error": why }),
            Ok(_) => {
                let (_, verdict) = checked
                    .next()
                    .context("the server answered fewer lines than it was sent")?;
                let mut row = verdict.clone();
                row["source"] = Value::from(f.place.clone());
                if let Some(map) = row.as_object_mut() {
                    map.remove("line");
                }
                row
            }
        };
        if row.get("ok").is_none() {
            problems += 1;
            serde_json::to_writer(&mut *out, &row)?;
            out.write_all(b"\n")?;
        } else if dry_run {
            serde_json::to_writer(&mut *out, &row)?;
            out.write_all(b"\n")?;
        }
    }
    if problems > 0 {
        bail!(
            "{} of {} cannot be imported (each named above by its place in the source); nothing was imported",
            plural(problems, "link"),
            found.len()
        );
    }
    if dry_run {
        eprintln!(
            "{} would be imported; nothing was (--dry-run)",
            plural(found.len() as u64, "link")
        );
        return Ok(());
    }
    let mut created = 0u64;
    for chunk in readable.chunks(batch) {
        let rows = post("on_conflict=fail", chunk)?;
        for (f, row) in chunk.iter().zip(rows) {
            let mut row = row;
            row["source"] = Value::from(f.place.clone());
            if let Some(map) = row.as_object_mut() {
                map.remove("line");
            }
            if row.get("error").is_some() {
                problems += 1;
            } else {
                created += 1;
            }
            serde_json::to_writer(&mut *out, &row)?;
            out.write_all(b"\n")?;
        }
    }
    eprintln!("{} imported", plural(created, "link"));
    if problems > 0 {
        bail!(
            "{} failed after the check passed (made meanwhile by someone else?); see each above",
            plural(problems, "link")
        );
    }
    Ok(())
}
