//! `shardkit ticket next`: numbers from a named Flickr-style sequence.

use super::busy_wait::{open_when_free, BUSY_WAIT};
use super::data_dir::DataDirArgs;
use anyhow::Context;
use clap::Subcommand;
use shardkit_ids::tickets::{EmbeddedTicketStore, SequenceSpec, TicketStore, MAX_TICKETS_PER_CALL};
use shardkit_ids::TicketError;
use std::io::Write;

/// Subcommands of `shardkit ticket`.
#[derive(Debug, Subcommand)]
pub enum TicketCommand {
    /// Print the next numbers of a sequence, one a line, reserved with one fsynced write.
    Next {
        /// Sequence name: 1 to 64 characters of A-Z a-z 0-9 _ - . :
        name: String,
        /// How many numbers, 1 to 1,000,000.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Step between numbers (Flickr's two servers: 2). Fixed when the sequence is created.
        #[arg(long, default_value_t = 1)]
        increment: u64,
        /// First number, 1 to --increment (Flickr's two servers: 1 and 2).
        #[arg(long, default_value_t = 1)]
        offset: u64,
        #[command(flatten)]
        data: DataDirArgs,
    },
}

/// Runs one `shardkit ticket` subcommand, writing to `out`.
pub fn run(cmd: TicketCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        TicketCommand::Next {
            name,
            count,
            increment,
            offset,
            data,
        } => {
            if count == 0 || count > MAX_TICKETS_PER_CALL {
                return Err(TicketError::BadCount {
                    got: count,
                    max: MAX_TICKETS_PER_CALL,
                }
                .into());
            }
            let spec = SequenceSpec::new(increment, offset)?;
            let data = data.resolve()?;
            data.ensure()?;
            // Another run on this data directory has the store open for a moment: wait.
            let store = open_when_free(
                "the ticket store",
                BUSY_WAIT,
                |e| matches!(e, TicketError::StoreInUse(_)),
                || EmbeddedTicketStore::open(data.tickets()),
            )?;
            let first = store.reserve(&name, spec, count)?;
            for position in first..first + count {
                let number = spec
                    .number(position)
                    .with_context(|| format!("sequence {name:?} is exhausted"))?;
                writeln!(out, "{number}")?;
            }
            out.flush()?;
            Ok(())
        }
    }
}
