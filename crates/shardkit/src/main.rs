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
        // `shardkit id next --count 1000 | head -1`: the reader left, nothing is wrong.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, the whole chain of causes: scripts grep this, people read it.
            eprintln!("shardkit: error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by `: `, leaving out a cause whose text the line
/// already holds (an error that shows its source in its own message would otherwise
/// print the OS error twice).
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
