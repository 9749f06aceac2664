//! A node that must start over restarts itself in place: same process id, same
//! listening sockets, no supervisor needed.
//!
//! A deposed leader (its memory may hold writes the stream refused) and a replica that
//! diverged or fell behind the stream's purge point cannot mend their engine where it
//! stands: it is rebuilt from the newest snapshot and the stream, which is what a start
//! does. Rather than exit and wait for a supervisor (a node left down when there is
//! none), the server drains as on SIGTERM, closes its state and `exec`s its own binary
//! with the same arguments and environment. Its HTTP and RESP sockets are handed to the
//! new image open, as systemd's socket activation hands them over (`LISTEN_FDS`,
//! `LISTEN_PID`: descriptors 3 and 4), so a client that connects meanwhile waits in the
//! listen backlog instead of being refused; one that was connected reconnects, as
//! after Sentinel demotes a Redis master. The exit statuses (75 deposed, 76 behind)
//! remain only as the fallback when the `exec` fails or the drain hangs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How many times this process restarted in place since it was started from outside.
pub const COUNT_ENV: &str = "SHARDKIT_RESTARTS_IN_PLACE";

/// How many of those came in a row, each within [`STREAK_RESET`] of the one before.
pub const STREAK_ENV: &str = "SHARDKIT_RESTART_STREAK";

/// A node up this long before its restart starts a new streak (no backoff): a node
/// deposed by each of several faults in a row is not held back, one that restarts
/// as soon as it is up (a stream whose tail it keeps refusing) is.
pub const STREAK_RESET: Duration = Duration::from_secs(10);

/// The longest wait before a restart in a streak (a stream whose tail this node keeps
/// refusing would otherwise restart it as fast as it can start).
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long the drain may take before the process exits with the request's status
/// instead, for a supervisor (a drain that hangs must not keep a node that cannot
/// serve).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// Why the node starts over, and the exit status used when it cannot restart in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// 75: deposed leader, 76: replica behind the purge point or diverged.
    pub code: i32,
}

struct Pending {
    request: OnceLock<Request>,
    asked: tokio::sync::Notify,
    started: Instant,
}

fn pending() -> &'static Pending {
    static PENDING: OnceLock<Pending> = OnceLock::new();
    PENDING.get_or_init(|| Pending {
        request: OnceLock::new(),
        asked: tokio::sync::Notify::new(),
        started: Instant::now(),
    })
}

/// Notes the start of this process image (the uptime that decides whether a restart
/// continues a streak). Call it once, early.
pub fn mark_start() {
    let _ = pending();
}

/// Asks the server to restart in place; the first request wins. If no server loop is
/// there to do it (or it hangs), the process exits with `code` after [`DRAIN_LIMIT`].
pub fn request(code: i32) {
    let p = pending();
    if p.request.set(Request { code }).is_err() {
        return;
    }
    p.asked.notify_one();
    static WATCHDOG: AtomicBool = AtomicBool::new(false);
    if !WATCHDOG.swap(true, Ordering::AcqRel) {
        std::thread::spawn(move || {
            std::thread::sleep(DRAIN_LIMIT + backoff());
            tracing::error!(
                code,
                "the restart in place did not happen in time; exiting for a supervisor"
            );
            std::process::exit(code);
        });
    }
}

/// Waits until a restart is requested.
pub async fn requested() -> Request {
    let p = pending();
    loop {
        let asked = p.asked.notified();
        if let Some(r) = p.request.get() {
            return *r;
        }
        asked.await;
    }
}

/// Restarts in place since the process was started from outside (`INFO`, metrics).
pub fn count() -> u64 {
    env_u64(COUNT_ENV)
}

fn env_u64(name: &str) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// How long the next restart waits: nothing after a run of [`STREAK_RESET`] or more,
/// else 0.5 s doubling with every restart of the streak, at most [`MAX_BACKOFF`].
pub fn backoff() -> Duration {
    backoff_for(next_streak())
}

fn backoff_for(streak: u64) -> Duration {
    if streak <= 1 {
        return Duration::ZERO;
    }
    let shift = (streak - 2).min(16) as u32;
    (Duration::from_millis(500) * (1u32 << shift)).min(MAX_BACKOFF)
}

fn next_streak() -> u64 {
    if pending().started.elapsed() >= STREAK_RESET {
        1
    } else {
        env_u64(STREAK_ENV) + 1
    }
}

/// The first descriptor of the systemd socket-activation protocol.
const FIRST_FD: i32 = 3;

/// The listening sockets a node may hand over, by name. A restart in place names the
/// ones it hands in `LISTEN_FDNAMES` (some ports are optional); a service manager's
/// socket activation without names hands them in this order.
pub const HANDED_OVER: [&str; 3] = ["http", "resp", "resp.tls"];

/// Where the socket for `name` is among the handed-over descriptors.
fn handed_index(name: &str) -> Option<usize> {
    match std::env::var("LISTEN_FDNAMES") {
        Ok(names) if !names.is_empty() => names.split(':').position(|n| n == name),
        _ => HANDED_OVER.iter().position(|n| *n == name),
    }
}

/// The listening socket handed over for `name` (one of [`HANDED_OVER`]) by a previous
/// image of this process (or by a service manager's socket activation), if it is a
/// TCP socket bound to `addr` (any port of its IP when `addr`'s port is 0). One that
/// is bound elsewhere (the settings changed) is closed and `addr` bound instead.
pub fn inherited(name: &str, addr: SocketAddr) -> Option<std::net::TcpListener> {
    static HANDED: std::sync::Mutex<Option<listenfd::ListenFd>> = std::sync::Mutex::new(None);
    let index = handed_index(name)?;
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let fds = handed.get_or_insert_with(listenfd::ListenFd::from_env);
    let listener = match fds.take_tcp_listener(index) {
        Ok(Some(listener)) => listener,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!(error = %e, name, "an inherited descriptor is not a TCP socket; binding instead");
            return None;
        }
    };
    let bound = listener.local_addr().ok()?;
    if bound.ip() != addr.ip() || (addr.port() != 0 && addr.port() != bound.port()) {
        tracing::warn!(%bound, %addr, name, "an inherited socket is bound elsewhere; binding the configured address instead");
        return None;
    }
    // Not to be inherited by anything this image starts.
    let _ = rustix::io::fcntl_setfd(&listener, rustix::io::FdFlags::CLOEXEC);
    listener.set_nonblocking(true).ok()?;
    Some(listener)
}

/// Replaces this process with a new image of its own binary, same arguments and
/// environment, handing `listeners` over, each under its name (one of
/// [`HANDED_OVER`]). Returns only if that failed (the caller then exits with the
/// request's status).
pub fn exec(request: Request, listeners: Vec<(&str, std::net::TcpListener)>) -> std::io::Error {
    use command_fds::{CommandFdExt, FdMapping};
    use std::os::unix::process::CommandExt;
    let wait = backoff();
    let streak = next_streak();
    if !wait.is_zero() {
        tracing::warn!(
            ms = wait.as_millis() as u64,
            streak,
            "restarted in place often in a row; waiting before the next start"
        );
        std::thread::sleep(wait);
    }
    let handed = listeners.len();
    let names = listeners
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(":");
    let mappings = listeners
        .into_iter()
        .zip(FIRST_FD..)
        .map(|((_, listener), child_fd)| FdMapping {
            parent_fd: std::os::fd::OwnedFd::from(listener),
            child_fd,
        })
        .collect();
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    let exe = std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into());
    tracing::warn!(
        code = request.code,
        restarts = count() + 1,
        "restarting in place: a new image of this binary, the same listening sockets"
    );
    let mut command = std::process::Command::new(exe);
    command
        .arg0(arg0)
        .args(args)
        .env("LISTEN_FDS", handed.to_string())
        .env("LISTEN_PID", std::process::id().to_string())
        .env("LISTEN_FDNAMES", names)
        .env(COUNT_ENV, (count() + 1).to_string())
        .env(STREAK_ENV, streak.to_string());
    if let Err(e) = command.fd_mappings(mappings) {
        return std::io::Error::other(format!("cannot hand the listening sockets over: {e}"));
    }
    command.exec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_in_a_row_back_off_up_to_a_bound() {
        assert_eq!(backoff_for(1), Duration::ZERO);
        assert_eq!(backoff_for(2), Duration::from_millis(500));
        assert_eq!(backoff_for(4), Duration::from_secs(2));
        assert_eq!(backoff_for(40), MAX_BACKOFF);
    }
}
