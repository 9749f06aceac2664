//! One client connection: read, parse every complete command in the buffer
//! (pipelining), answer each into one output buffer, write it once.

use super::session::Session;
use super::table;
use bytes::{Buf, BytesMut};
use shardkit_node::state::AppState;
use shardkit_resp::parse::Parsed;
use shardkit_resp::{reply, Limits, Parser};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The two ends of a connection, as CLIENT LIST shows them.
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// The address it connected to.
    pub local: Option<SocketAddr>,
}

/// Serves one connection (plain TCP or TLS) until the client quits, breaks the
/// protocol beyond repair, or `shutdown` fires (then the replies already computed are
/// written first).
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    ends: Ends,
    state: Arc<AppState>,
    clients: Arc<super::clients::Clients>,
    limits: Limits,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut output = BytesMut::with_capacity(16 * 1024);
    let mut parser = Parser::new(limits);
    let addr = |a: Option<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
    let registration = clients.register(Session::next_id(), addr(ends.peer), addr(ends.local));
    let client = Arc::clone(&registration.client);
    let mut session = Session::new(!state.access.enforced(), Arc::clone(&client), clients);
    // One future for the whole connection, not one per batch: each new one would join
    // and leave the shutdown and kill waiter lists again for every read.
    let closed = async {
        tokio::select! {
            _ = shutdown.changed() => {}
            _ = client.killed() => {}
        }
    };
    tokio::pin!(closed);
    loop {
        let read = tokio::select! {
            biased;
            read = stream.read_buf(&mut input) => read,
            _ = &mut closed => return,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut close = false;
        let mut commands_run = 0u64;
        let mut last_command = None;
        loop {
            let used = match parser.parse(&input) {
                Ok(Parsed::Command(cmd, used)) => {
                    commands_run += 1;
                    last_command = table::execute(&cmd, &state, &mut session, &mut output);
                    close = session.closing;
                    used
                }
                Ok(Parsed::Skip(used)) => used,
                Ok(Parsed::Incomplete) => break,
                Err(e) => {
                    super::incr_run::flush(&state.counters, &mut session, &mut output);
                    reply::error(&mut output, &format!("ERR {}", e.message));
                    match e.skip {
                        Some(used) => used,
                        None => {
                            close = true;
                            0
                        }
                    }
                }
            };
            input.advance(used);
            if close {
                break;
            }
        }
        // The batch's last increments, before its commit.
        super::incr_run::flush(&state.counters, &mut session, &mut output);
        if !close && input.len() > limits.max_buffer {
            reply::error(
                &mut output,
                "ERR Protocol error: client query buffer too big",
            );
            close = true;
        }
        // No reply of this batch goes out before its writes are durable; if they cannot
        // be made durable, none does and the connection closes (the client must not take
        // an unacknowledged write for done).
        if !session.pending.is_none()
            && commit(&state.counters, std::mem::take(&mut session.pending))
                .await
                .is_err()
        {
            return;
        }
        // A cluster node's slot groups: every group's commit asked for first, so they
        // run side by side, then each awaited.
        let groups = std::mem::take(&mut session.group_pending);
        for (counters, pending) in &groups {
            counters.group_commit.ask(*pending);
        }
        for (counters, pending) in groups {
            if commit(&counters, pending).await.is_err() {
                return;
            }
        }
        shardkit_node::telemetry::add(&shardkit_node::telemetry::RESP_COMMANDS, commands_run);
        if commands_run > 0 {
            client.touch(last_command.unwrap_or("unknown"));
        }
        shardkit_node::telemetry::add(
            &shardkit_node::telemetry::RESP_ERRORS,
            count_errors(&output),
        );
        if stream.write_all(&output).await.is_err() {
            return;
        }
        output.clear();
        if close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Waits once for every write of a batch. Under fsync `always` that is an fsync shared
/// with the other connections' batches ([`shardkit_node::counters::commit_task`]); under `everysec` and
/// `no` the records are already where the policy wants them.
async fn commit(
    counters: &shardkit_node::counters::Counters,
    pending: shardkit_counters::Pending,
) -> Result<(), ()> {
    if counters.writes_wait_for_disk {
        counters
            .group_commit
            .wait(counters, pending)
            .await
            .map_err(|_| ())
    } else {
        counters.engine.commit(pending).map_err(|_| ())
    }
}

/// Error replies in a batch of replies: each starts a line with `-`. Counted on the
/// output so every error path is included without touching each command.
fn count_errors(output: &[u8]) -> u64 {
    let mut errors = u64::from(output.first() == Some(&b'-'));
    errors += output.windows(3).filter(|w| w == b"\r\n-").count() as u64;
    errors
}
