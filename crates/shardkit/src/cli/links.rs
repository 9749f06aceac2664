//! `shardkit links import FILE` and `shardkit links export`: bulk create and export
//! through a running server's API (the server owns the data directory), with a
//! progress bar on stderr for big files. Which server, and the key: `api_server`.

use super::api_server::{ApiServer, ServerArgs};
use anyhow::{bail, Context};
use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use shardkit::plural::plural;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

/// File format of import and export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    /// One JSON object a line (`{"url":…,"alias":…}`).
    Jsonl,
    /// CSV with the header url,code,alias,created_at,expires_at,max_visits,redirect,tags,clicks,daily,password_protected.
    Csv,
}

/// What an imported line whose code or alias the server already holds does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnConflict {
    /// Report the line as an error; the import then exits 1 (the default).
    Fail,
    /// Report the line as skipped; it does not fail the import.
    Skip,
}

/// Subcommands of `shardkit links`.
#[derive(Debug, Subcommand)]
pub enum LinksCommand {
    /// Create every link of FILE (JSON lines or CSV); prints one result a line.
    ///
    /// Lines of an export (with a `code`) restore those links: same code, alias,
    /// creation time, expiry, visit limit, redirect, tags and clicks. With `--from`,
    /// FILE (or URL) is another shortener's export: every link is checked first, and a
    /// path taken here is reported by its place there with nothing imported.
    Import {
        /// The file; `.csv` files are CSV unless --format says otherwise. With `--from`
        /// the source's export, or the URL of its API (YOURLS).
        file: PathBuf,
        /// The shortener FILE comes from: `yourls` (a mysqldump of `yourls_url`, or the
        /// site's URL), `bitly` (its CSV export), `kutt` or `shlink` (the site's URL).
        #[arg(long, value_enum)]
        from: Option<super::import_from::Source>,
        /// With `--from`: check every link and report, import nothing.
        #[arg(long, requires = "from")]
        dry_run: bool,
        /// With `--from yourls URL`: the user name its API takes.
        #[arg(long, requires = "from")]
        source_user: Option<String>,
        /// With `--from yourls URL`: that user's password.
        #[arg(long, requires = "from")]
        source_password: Option<String>,
        /// With `--from yourls URL`: its API's signature token (instead of a password).
        #[arg(long, requires = "from")]
        source_signature: Option<String>,
        /// With `--from kutt|shlink URL`: its API key.
        #[arg(long, requires = "from")]
        source_key: Option<String>,
        /// With `--from`: the domain (`[links] domains`) the links go to (default: the
        /// first).
        #[arg(long, requires = "from")]
        domain: Option<String>,
        /// File format (default: from the file name).
        #[arg(long, value_enum)]
        format: Option<FileFormat>,
        /// Links per request (each request is one durable transaction), 1 to 100,000.
        #[arg(long, default_value_t = 5_000, allow_negative_numbers = true)]
        batch: i64,
        /// A line whose code or alias the server already holds: `fail` (the default:
        /// the line is an error and the import exits 1) or `skip`.
        #[arg(long, value_enum, default_value = "fail")]
        on_conflict: OnConflict,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print every link in the import format.
    Export {
        /// File format.
        #[arg(long, value_enum, default_value = "jsonl")]
        format: FileFormat,
        /// Only links with this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// The most lines one import request may hold (the server's limit per bulk request).
pub const MAX_BATCH: usize = 100_000;

fn bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    let style =
        ProgressStyle::with_template("{spinner} {bytes}/{total_bytes} [{bar:30}] {msg} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar
}

/// `POST /api/links/bulk?{query}` with `body`: the server's answer, or why there is
/// none (unreachable, not JSON, or its refusal with its reason).
pub(super) fn post_bulk(
    client: &reqwest::blocking::Client,
    server: &ApiServer,
    query: &str,
    content_type: &str,
    body: String,
) -> anyhow::Result<Value> {
    let response = client
        .post(server.url(&format!("/api/links/bulk?{query}")))
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(body)
        .send()
        .with_context(|| format!("cannot reach {}", server.describe()))?;
    let status = response.status();
    let answer: Value = response
        .json()
        .with_context(|| format!("the server answered {status} with something that is not JSON"))?;
    if !status.is_success() {
        bail!(
            "the server refused it: {}",
            answer["error"].as_str().unwrap_or("?")
        );
    }
    Ok(answer)
}

/// Runs one `shardkit links` subcommand.
pub fn run(cmd: LinksCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        LinksCommand::Import {
            file,
            format,
            batch,
            on_conflict,
            from,
            dry_run,
            source_user,
            source_password,
            source_signature,
            source_key,
            domain,
            server,
        } => {
            let Some(batch) = usize::try_from(batch)
                .ok()
                .filter(|b| (1..=MAX_BATCH).contains(b))
            else {
                bail!("--batch must be between 1 and {MAX_BATCH}, got {batch}");
            };
            let Some(source) = from else {
                return import(&file, format, batch, on_conflict, &server.resolve()?, out);
            };
            if format.is_some() {
                bail!("--format is for our own files; with --from the source says how its export is written");
            }
            let import = super::import_from::Import {
                source,
                from: file.to_str().context("the file name is not UTF-8")?,
                auth: super::import_from::SourceAuth {
                    user: source_user,
                    password: source_password,
                    signature: source_signature,
                    key: source_key,
                },
                domain: domain.as_deref(),
                dry_run,
                batch,
            };
            super::import_from::run(&import, &server.resolve()?, out)
        }
        LinksCommand::Export {
            format,
            tag,
            out: path,
            server,
        } => {
            let server = server.resolve()?;
            let client = server.client()?;
            let mut url = server.url(&format!(
                "/api/links/export?format={}",
                if format == FileFormat::Csv {
                    "csv"
                } else {
                    "jsonl"
                }
            ));
            if let Some(tag) = tag {
                url.push_str(&format!("&tag={tag}"));
            }
            let bar = bar(None);
            bar.set_message("exporting");
            let response = client
                .get(&url)
                .send()
                .with_context(|| format!("cannot reach {}", server.describe()))?;
            let status = response.status();
            let body = response.bytes()?;
            if !status.is_success() {
                bail!(
                    "the server answered {status}: {}",
                    String::from_utf8_lossy(&body)
                );
            }
            bar.finish_and_clear();
            match path {
                Some(path) => std::fs::write(&path, &body)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => out.write_all(&body)?,
            }
            let lines = body.iter().filter(|&&b| b == b'\n').count();
            let links = lines.saturating_sub(usize::from(format == FileFormat::Csv));
            eprintln!("exported {}", plural(links as u64, "link"));
            Ok(())
        }
    }
}

fn import(
    file: &PathBuf,
    format: Option<FileFormat>,
    batch: usize,
    on_conflict: OnConflict,
    server: &ApiServer,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let format = format.unwrap_or(
        if file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            FileFormat::Csv
        } else {
            FileFormat::Jsonl
        },
    );
    let handle =
        std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let size = handle.metadata().map(|m| m.len()).ok();
    let mut reader = BufReader::new(handle);
    let client = server.client()?;
    let content_type = if format == FileFormat::Csv {
        "text/csv"
    } else {
        "application/x-ndjson"
    };
    let mut header = String::new();
    if format == FileFormat::Csv {
        reader.read_line(&mut header)?;
    }
    let bar = bar(size);
    bar.inc(header.len() as u64);
    let conflict = match on_conflict {
        OnConflict::Fail => "fail",
        OnConflict::Skip => "skip",
    };
    let (mut created, mut failed, mut skipped) = (0u64, 0u64, 0u64);
    // Lines of the file read so far (the CSV header included): the server numbers the
    // lines of each request's body, blank ones too, and the body's line 1 is the file's
    // line `file_lines + 1` (for CSV the repeated header is the body's line 1).
    let mut file_lines = u64::from(format == FileFormat::Csv);
    let body_offset = |file_lines: u64| file_lines - u64::from(format == FileFormat::Csv);
    let mut lines = reader.lines();
    loop {
        let mut body = header.clone();
        let mut in_batch = 0;
        let mut read = 0u64;
        for line in lines.by_ref() {
            let line = line.with_context(|| format!("cannot read {}", file.display()))?;
            bar.inc(line.len() as u64 + 1);
            read += 1;
            body.push_str(&line);
            body.push('\n');
            if line.trim().is_empty() {
                continue;
            }
            in_batch += 1;
            if in_batch == batch {
                break;
            }
        }
        if in_batch == 0 {
            break;
        }
        let query = format!("on_conflict={conflict}");
        let answer = post_bulk(&client, server, &query, content_type, body)
            .map_err(|e| e.context(format!("the batch starting at line {}", file_lines + 1)))?;
        let offset = body_offset(file_lines);
        for row in answer["results"].as_array().into_iter().flatten() {
            let mut row = row.clone();
            row["line"] = Value::from(offset + row["line"].as_u64().unwrap_or(0));
            if row.get("error").is_some() {
                failed += 1;
            } else if row.get("skipped").is_some() {
                skipped += 1;
            } else {
                created += 1;
            }
            serde_json::to_writer(&mut *out, &row)?;
            out.write_all(b"\n")?;
        }
        file_lines += read;
        bar.set_message(format!("{created} created, {failed} failed"));
    }
    bar.finish_and_clear();
    let skipped_text = if skipped > 0 {
        format!(", {skipped} skipped")
    } else {
        String::new()
    };
    eprintln!(
        "{} created, {failed} failed{skipped_text}",
        plural(created, "link")
    );
    if failed > 0 {
        bail!(
            "{failed} of {} were not created; see the error of each above",
            plural(created + failed + skipped, "line")
        );
    }
    Ok(())
}
