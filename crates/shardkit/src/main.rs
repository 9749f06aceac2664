//! The `shardkit` binary: a thin shell over the library crates.
//!
//! Every subcommand lives in its own module under `cli/`; this file only parses the
//! command line, runs the chosen subcommand and turns an error into one line on stderr
//! and a non-zero exit code.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, the whole chain of causes: scripts grep this, people read it.
            eprintln!("shardkit: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
