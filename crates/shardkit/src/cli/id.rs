//! `shardkit id next` and `shardkit id decode`.

use super::busy_wait::{open_when_free, BUSY_WAIT};
use super::data_dir::{DataDir, DataDirArgs};
use super::layout_args::LayoutArgs;
use anyhow::{bail, Context};
use clap::Subcommand;
use shardkit::decoded_json::{decode_time_ordered, DecodedIdJson};
use shardkit_ids::{
    Clock, GenerateError, GeneratorOptions, GuardOptions, ShardGenerator, SystemClock, ULID_LEN,
};
use shardkit_node::config::{IdSettings, Overrides};
use shardkit_node::id_format::{self, IdFormat, TimeOrdered};
use std::io::Write;
use std::path::PathBuf;

/// The most ids one `id next` call prints: about ten seconds of one Instagram shard.
pub const MAX_COUNT: u64 = 10_000_000;

/// How far in the future a decoded id may lie before it is called bad input: more
/// than any generator runs ahead of its clock, far less than a wrong layout or epoch
/// puts it.
pub const FUTURE_TOLERANCE_MS: u64 = 60_000;

/// Subcommands of `shardkit id`.
#[derive(Debug, Subcommand)]
pub enum IdCommand {
    /// Print new ids, one a line: decimal ids of the layout, or UUIDv7s or ULIDs.
    ///
    /// A durable time guard in the data directory (one per format) makes sure no later
    /// run issues an id again, even after the clock steps back; two processes cannot
    /// share it, so a run waits (up to 10 s, saying so on stderr) while another one
    /// holds it. With --config the data directory and the layout are the node's
    /// (`data`, `[ids]`): ids made in its directory keep its layout.
    Next {
        #[command(flatten)]
        layout: LayoutArgs,
        /// The shard (worker) field, 0 to 2^shard_bits - 1 (default 0); snowflake only.
        #[arg(long)]
        shard: Option<u64>,
        /// snowflake (the layout's decimal ids), uuid7 (RFC 9562) or ulid.
        #[arg(long, default_value = "snowflake", value_parser = parse_format)]
        format: IdFormat,
        /// How many ids, 1 to 10,000,000.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        count: i64,
        #[command(flatten)]
        data: DataDirArgs,
    },
    /// Take ids apart: one JSON object a line with time, shard and sequence (or a
    /// UUIDv7's counter, a ULID's random part).
    Decode {
        #[command(flatten)]
        layout: LayoutArgs,
        /// Decimal ids of the layout, UUIDv7s (36 characters, or 32 hex digits) or
        /// ULIDs (26 characters), told apart by length.
        #[arg(required = true, value_name = "ID", allow_hyphen_values = true)]
        ids: Vec<String>,
        /// A node's settings file, read as `serve` reads it: its `[ids]` layout and
        /// epoch, to decode the node's ids, when --layout and --epoch are not given.
        #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

/// Runs one `shardkit id` subcommand, writing to `out`.
pub fn run(cmd: IdCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        IdCommand::Next {
            layout,
            shard,
            format,
            count,
            data,
        } => {
            let settings = data.settings(Overrides::default())?;
            let data = DataDir::new(settings.data);
            match format.time_ordered() {
                None => next(
                    &layout,
                    &settings.ids,
                    shard.unwrap_or(0),
                    count,
                    &data,
                    out,
                ),
                Some(_) if shard.is_some() => {
                    bail!("--shard applies to snowflake ids only: {format} ids have no shard")
                }
                Some(kind) => next_time_ordered(kind, count, &data, out),
            }
        }
        IdCommand::Decode {
            layout,
            ids,
            config,
        } => {
            let settings = super::config_file::read(config.as_deref(), Overrides::default())?;
            decode(&layout, &settings.ids, &ids, out)
        }
    }
}

fn parse_format(text: &str) -> Result<IdFormat, String> {
    text.parse()
}

fn checked_count(count: i64) -> anyhow::Result<u64> {
    match u64::try_from(count)
        .ok()
        .filter(|c| (1..=MAX_COUNT).contains(c))
    {
        Some(count) => Ok(count),
        None => bail!("--count must be between 1 and {MAX_COUNT}, got {count}"),
    }
}

fn next_time_ordered(
    kind: TimeOrdered,
    count: i64,
    data: &DataDir,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let count = checked_count(count)?;
    data.ensure()?;
    let options = GeneratorOptions::default();
    let in_use = |e: &GenerateError| matches!(e, GenerateError::GuardInUse(_));
    let mut buf = [0u8; ULID_LEN];
    match kind {
        TimeOrdered::Uuid7 => {
            let generator = open_when_free("the UUIDv7 time guard", BUSY_WAIT, in_use, || {
                id_format::open_uuid7(&data.dir, &options)
            })?;
            for _ in 0..count {
                writeln!(out, "{}", generator.next_id()?)?;
            }
        }
        TimeOrdered::Ulid => {
            let generator = open_when_free("the ULID time guard", BUSY_WAIT, in_use, || {
                id_format::open_ulid(&data.dir, &options)
            })?;
            for _ in 0..count {
                writeln!(out, "{}", generator.next_id()?.encode(&mut buf))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn next(
    layout: &LayoutArgs,
    ids: &IdSettings,
    shard: u64,
    count: i64,
    data: &DataDir,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let layout = layout.layout_over(ids)?;
    let count = checked_count(count)?;
    if shard >= layout.shards() {
        bail!(
            "--shard {shard} is out of range: layout {layout} has shards 0 to {}",
            layout.shards() - 1
        );
    }
    data.ensure()?;
    let options = GeneratorOptions {
        guard: Some(GuardOptions::new(data.time_guard())),
        ..GeneratorOptions::default()
    };
    // Another run on this data directory holds the time guard for a moment: wait for it.
    let generator = open_when_free(
        "the time guard",
        BUSY_WAIT,
        |e| matches!(e, GenerateError::GuardInUse(_)),
        || ShardGenerator::with_clock(layout, shard, SystemClock, &options),
    )?;
    let mut batch = vec![0u64; count.min(4096) as usize];
    let mut left = count;
    while left > 0 {
        let n = left.min(batch.len() as u64) as usize;
        generator.fill(&mut batch[..n])?;
        for id in &batch[..n] {
            writeln!(out, "{id}")?;
        }
        left -= n as u64;
    }
    out.flush()?;
    Ok(())
}

fn decode(
    layout: &LayoutArgs,
    settings: &IdSettings,
    ids: &[String],
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let layout = layout.layout_over(settings)?;
    let now_ms = SystemClock.unix_ms();
    // All or nothing: a script never gets half an answer with a zero exit code.
    let mut lines = Vec::with_capacity(ids.len());
    for text in ids {
        if let Some(decoded) = decode_time_ordered(text) {
            let json = decoded.map_err(anyhow::Error::msg)?;
            lines.push(serde_json::to_string(&json)?);
            continue;
        }
        let decoded = layout.decode_str(text)?;
        if decoded.unix_ms > now_ms + FUTURE_TOLERANCE_MS {
            let when = DecodedIdJson::new(&decoded, &layout)
                .map_or_else(|| "beyond year 9999".to_string(), |j| j.time);
            bail!("id {text} is from the future ({when}) in layout {layout}: wrong --layout or --epoch?");
        }
        let json = DecodedIdJson::new(&decoded, &layout)
            .with_context(|| format!("id {text} has a time that cannot be shown"))?;
        lines.push(serde_json::to_string(&json)?);
    }
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
