//! `shardkit links import FILE` and `shardkit links export`: bulk create and export
//! through a running server's API (the server owns the data directory), with a
//! progress bar on stderr for big files.

use anyhow::{bail, Context};
use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

/// File format of import and export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    /// One JSON object a line (`{"url":…,"alias":…}`).
    Jsonl,
    /// CSV with the header url,alias,expires_at,max_visits,redirect,tags.
    Csv,
}

/// Subcommands of `shardkit links`.
#[derive(Debug, Subcommand)]
pub enum LinksCommand {
    /// Create every link of FILE (JSON lines or CSV); prints one result a line.
    Import {
        /// The file; `.csv` files are CSV unless --format says otherwise.
        file: PathBuf,
        /// File format (default: from the file name).
        #[arg(long, value_enum)]
        format: Option<FileFormat>,
        /// Links per request (each request is one durable transaction).
        #[arg(long, default_value_t = 5_000)]
        batch: usize,
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

/// Which server to talk to.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Base URL of the running server.
    #[arg(long, env = "SHARDKIT_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// API key, sent as `Authorization: Bearer KEY`.
    #[arg(long, env = "SHARDKIT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}

impl ServerArgs {
    fn client(&self) -> anyhow::Result<reqwest::blocking::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {key}")
                    .parse()
                    .context("the API key is not a valid header value")?,
            );
        }
        Ok(reqwest::blocking::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs(600))
            .build()?)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.trim_end_matches('/'))
    }
}

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

/// Runs one `shardkit links` subcommand.
pub fn run(cmd: LinksCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        LinksCommand::Import {
            file,
            format,
            batch,
            server,
        } => import(&file, format, batch.max(1), &server, out),
        LinksCommand::Export {
            format,
            tag,
            out: path,
            server,
        } => {
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
                .with_context(|| format!("cannot reach {}", server.server))?;
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
            eprintln!(
                "exported {} links",
                body.iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    .saturating_sub(usize::from(format == FileFormat::Csv))
            );
            Ok(())
        }
    }
}

fn import(
    file: &PathBuf,
    format: Option<FileFormat>,
    batch: usize,
    server: &ServerArgs,
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
    let (mut created, mut failed, mut done_lines) = (0u64, 0u64, 0u64);
    let mut lines = reader.lines();
    loop {
        let mut body = header.clone();
        let mut in_batch = 0;
        for line in lines.by_ref() {
            let line = line.with_context(|| format!("cannot read {}", file.display()))?;
            bar.inc(line.len() as u64 + 1);
            if line.trim().is_empty() {
                continue;
            }
            body.push_str(&line);
            body.push('\n');
            in_batch += 1;
            if in_batch == batch {
                break;
            }
        }
        if in_batch == 0 {
            break;
        }
        let response = client
            .post(server.url("/api/links/bulk"))
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .with_context(|| format!("cannot reach {}", server.server))?;
        let status = response.status();
        let answer: Value = response.json().with_context(|| {
            format!("the server answered {status} with something that is not JSON")
        })?;
        if !status.is_success() {
            bail!(
                "the server refused the batch starting at data line {}: {}",
                done_lines + 1,
                answer["error"].as_str().unwrap_or("?")
            );
        }
        for row in answer["results"].as_array().into_iter().flatten() {
            let mut row = row.clone();
            row["line"] = Value::from(done_lines + row["line"].as_u64().unwrap_or(0));
            if row.get("error").is_some() {
                failed += 1;
            } else {
                created += 1;
            }
            serde_json::to_writer(&mut *out, &row)?;
            out.write_all(b"\n")?;
        }
        done_lines += in_batch as u64;
        bar.set_message(format!("{created} created, {failed} failed"));
    }
    bar.finish_and_clear();
    eprintln!("{created} links created, {failed} failed");
    if failed > 0 {
        bail!(
            "{failed} of {} lines were not created; see the error of each above",
            created + failed
        );
    }
    Ok(())
}
