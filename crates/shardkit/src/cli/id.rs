//! `shardkit id next` and `shardkit id decode`.

use super::busy_wait::{open_when_free, BUSY_WAIT};
use super::data_dir::DataDirArgs;
use super::layout_args::LayoutArgs;
use anyhow::{bail, Context};
use clap::Subcommand;
use shardkit::decoded_json::DecodedIdJson;
use shardkit_ids::{
    Clock, GenerateError, GeneratorOptions, GuardOptions, ShardGenerator, SystemClock,
};
use std::io::Write;

/// The most ids one `id next` call prints: about ten seconds of one Instagram shard.
pub const MAX_COUNT: u64 = 10_000_000;

/// How far in the future a decoded id may lie before it is called bad input: more
/// than any generator runs ahead of its clock, far less than a wrong layout or epoch
/// puts it.
pub const FUTURE_TOLERANCE_MS: u64 = 60_000;

/// Subcommands of `shardkit id`.
#[derive(Debug, Subcommand)]
pub enum IdCommand {
    /// Print new ids, one decimal id a line.
    ///
    /// A durable time guard in the data directory makes sure no later run issues an
    /// id again, even after the clock steps back; two processes cannot share it, so a
    /// run waits (up to 10 s, saying so on stderr) while another one holds it.
    Next {
        #[command(flatten)]
        layout: LayoutArgs,
        /// The shard (worker) field, 0 to 2^shard_bits - 1.
        #[arg(long, default_value_t = 0)]
        shard: u64,
        /// How many ids, 1 to 10,000,000.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        count: i64,
        #[command(flatten)]
        data: DataDirArgs,
    },
    /// Take ids apart: one JSON object a line with time, shard and sequence.
    Decode {
        #[command(flatten)]
        layout: LayoutArgs,
        /// Decimal ids.
        #[arg(required = true, value_name = "ID", allow_hyphen_values = true)]
        ids: Vec<String>,
    },
}

/// Runs one `shardkit id` subcommand, writing to `out`.
pub fn run(cmd: IdCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        IdCommand::Next {
            layout,
            shard,
            count,
            data,
        } => next(&layout, shard, count, &data, out),
        IdCommand::Decode { layout, ids } => decode(&layout, &ids, out),
    }
}

fn next(
    layout: &LayoutArgs,
    shard: u64,
    count: i64,
    data: &DataDirArgs,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let layout = layout.layout()?;
    let Some(count) = u64::try_from(count)
        .ok()
        .filter(|c| (1..=MAX_COUNT).contains(c))
    else {
        bail!("--count must be between 1 and {MAX_COUNT}, got {count}");
    };
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

fn decode(layout: &LayoutArgs, ids: &[String], out: &mut impl Write) -> anyhow::Result<()> {
    let layout = layout.layout()?;
    let now_ms = SystemClock.unix_ms();
    // All or nothing: a script never gets half an answer with a zero exit code.
    let mut lines = Vec::with_capacity(ids.len());
    for text in ids {
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
