//! Runs the real `shardkit` command line with none of the environment variables that
//! carry settings, so a test sees only what it passes (a developer's shell may have
//! `SHARDKIT_CONFIG` or `SHARDKIT_SERVER` set).

use std::path::Path;
use std::process::{Command, Output};

/// Every variable a subcommand reads a setting from.
pub const SETTINGS_ENV: &[&str] = &[
    "SHARDKIT_CONFIG",
    "SHARDKIT_DATA",
    "SHARDKIT_HTTP",
    "SHARDKIT_API_KEY",
    "SHARDKIT_SERVER",
    "SHARDKIT_STORE",
    "SHARDKIT_PG_SERVERS",
    "SHARDKIT_KEYS_POSTGRES",
    "SHARDKIT_LAYOUT",
    "SHARDKIT_EPOCH",
];

/// `shardkit ARGS` with `env` set and every other settings variable unset.
pub fn shardkit(args: &[&str], env: &[(&str, &str)]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_shardkit")), args, env)
}

/// [`shardkit`] run in `cwd`, where a default `./shardkit-data` would be made.
pub fn shardkit_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shardkit"));
    cmd.current_dir(cwd);
    run(cmd, args, env)
}

fn run(mut cmd: Command, args: &[&str], env: &[(&str, &str)]) -> Output {
    cmd.args(args);
    for var in SETTINGS_ENV {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run shardkit")
}

/// Its standard output, trimmed, when it succeeded; its standard error otherwise.
pub fn outcome(output: &Output) -> Result<String, String> {
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}
