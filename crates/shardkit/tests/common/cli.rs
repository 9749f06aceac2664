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

/// `cmd`'s output, or an error naming `within` when it has not exited by then (it is
/// killed): a command line that hangs fails its test with what it printed instead of
/// running into nextest's timeout, which keeps no output.
pub fn output_within(cmd: &mut Command, within: std::time::Duration) -> Result<Output, String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start: {e}"))?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("wait: {e}"))? {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        None => Err(format!(
            "still running after {within:?} (killed); it printed: {}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
    }
}
