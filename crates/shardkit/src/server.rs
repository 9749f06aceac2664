//! `shardkit serve`: opens the state, binds HTTP and RESP, serves until SIGINT or
//! SIGTERM, then stops accepting, lets connections finish, and closes the state
//! cleanly (the id time guard records the exact last time). A node that must start
//! over ([`shardkit_node::restart_in_place`]) drains the same way and hands its listening
//! sockets back to the caller, which restarts the binary on them.

use anyhow::Context;
use shardkit_node::config::Settings;
use shardkit_node::state::AppState;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long connections get to finish after a shutdown signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connections get to finish before a restart in place: a deposed leader
/// refuses every write by then, and its clients are better off reconnecting soon.
const RESTART_DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How the server stopped.
#[derive(Debug)]
pub enum Stopped {
    /// A shutdown signal: the process ends.
    Signal,
    /// The node must start over: restart the binary on these listening sockets
    /// (HTTP, RESP), still open and queueing connections.
    Restart {
        /// Why, and the exit status if the restart cannot happen.
        request: shardkit_node::restart_in_place::Request,
        /// Each with its name in [`shardkit_node::restart_in_place::HANDED_OVER`].
        listeners: Vec<(&'static str, std::net::TcpListener)>,
    },
}

/// Binds `addr` for `name` (`http`, `resp`), or takes the socket a previous image of
/// this process handed over for it (a restart in place), so the port never closes.
async fn listen(name: &str, addr: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    if let Some(inherited) = shardkit_node::restart_in_place::inherited(name, addr) {
        return Ok(TcpListener::from_std(inherited)?);
    }
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for {} on {addr}", name.to_uppercase()))
}

/// Tries the NATS settings once before anything is written, when the node needs NATS:
/// a login or TLS setup NATS refuses ends the start here, the data directory untouched;
/// a server that is not up yet is left to the start's own waiting.
#[cfg(feature = "nats")]
async fn refused_by_nats(settings: &Settings) -> anyhow::Result<()> {
    if settings.counters.log != shardkit_node::config::CounterLog::Jetstream
        && !settings.cluster.enabled
    {
        return Ok(());
    }
    match shardkit_node::nats_connect::connect(&settings.nats, "shardkit start").await {
        Ok(client) => {
            let _ = client.drain().await;
            Ok(())
        }
        Err(e) if shardkit_node::replication::jetstream::until_up::lasting(&e) => Err(e),
        Err(_) => Ok(()),
    }
}

#[cfg(not(feature = "nats"))]
async fn refused_by_nats(_: &Settings) -> anyhow::Result<()> {
    Ok(())
}

/// Checks the settings only a frontend can judge, which the node's `Settings::check`
/// cannot: `[access] public` names routes of HTTP's table, and the TLS certificates,
/// keys and CAs must parse. `serve` and `--print-config` call it before anything is
/// written, and [`run`] again for callers that skip the CLI.
pub fn check_frontend_settings(settings: &Settings) -> anyhow::Result<()> {
    crate::http::parse_public(&settings.access.public)?;
    crate::frontend_tls::Frontends::from_settings(settings)?;
    Ok(())
}

/// Binds `addr` for `name` when there is an address.
async fn listen_if(
    name: &str,
    addr: Option<std::net::SocketAddr>,
) -> anyhow::Result<Option<TcpListener>> {
    match addr {
        Some(addr) => Ok(Some(listen(name, addr).await?)),
        None => Ok(None),
    }
}

/// Runs the server to completion.
pub async fn run(mut settings: Settings) -> anyhow::Result<Stopped> {
    shardkit_node::restart_in_place::mark_start();
    crate::http::parse_public(&settings.access.public)?;
    let tls = crate::frontend_tls::Frontends::from_settings(&settings)?;
    let limits = settings.resp_limits.limits();
    refused_by_nats(&settings).await?;
    let http_listener = listen("http", settings.http.listen).await?;
    let resp_listener = listen_if("resp", settings.resp.listen).await?;
    let resp_tls_listener = listen_if("resp.tls", settings.resp.tls).await?;
    if settings.links.base_url.is_none() {
        let bound = http_listener.local_addr()?;
        if bound.ip().is_unspecified() {
            tracing::warn!(
                http = %bound,
                "links.base_url is not set and HTTP listens on an unspecified address: short \
                 URLs take each request's Host, and a request without one gets \
                 http://{bound}/...; set links.base_url to the address users reach \
                 (https://sho.rt, say), or links.hosts to refuse other Hosts"
            );
        }
    }
    // The addresses really bound (port 0 becomes a real port): a leader announces them.
    settings.http.listen = http_listener.local_addr()?;
    if let Some(l) = &resp_listener {
        settings.resp.listen = Some(l.local_addr()?);
    }
    if let Some(l) = &resp_tls_listener {
        settings.resp.tls = Some(l.local_addr()?);
    }
    let state = Arc::new(tokio::task::spawn_blocking(move || AppState::open(settings)).await??);
    let replication = {
        let state = Arc::clone(&state);
        tokio::task::spawn_blocking(move || {
            shardkit_node::replication::Running::start(
                state.settings.counters.log == shardkit_node::config::CounterLog::Jetstream,
                &state.store,
                &state.id_leases,
            )
        })
        .await??
    };
    // RESP (and the fsync task its connections wait on) run on a runtime of their own,
    // sized by `resp_threads`; HTTP keeps the main one. A cluster node's group commits
    // run on it too.
    let resp_runtime = shardkit_node::resp_runtime::RespRuntime::start(state.settings.resp_threads)
        .context("cannot start the RESP runtime")?;
    let cluster = join_cluster(&state, resp_runtime.handle()).await?;
    let reload = spawn_reload(&tls);
    let mut stop_signals = StopSignals::register()?;
    tracing::info!(
        http = %state.settings.http.listen,
        http_tls = state.settings.http.tls(),
        resp = %state.settings.resp.addr(),
        resp_tls = %state.settings.resp.tls.map_or_else(|| "off".to_string(), |a| a.to_string()),
        data = %state.settings.data.display(),
        layout = %state.layout,
        "shardkit listening"
    );

    let _ = shardkit_node::telemetry::prometheus();
    metrics::gauge!("shardkit_restarts_in_place")
        .set(shardkit_node::restart_in_place::count() as f64);
    // Copies of the listening sockets, kept open through the drain for a restart in
    // place: connections made meanwhile wait in the backlog for the next image.
    let mut kept = vec![("http", clone_listener(&http_listener)?)];
    for (name, listener) in [("resp", &resp_listener), ("resp.tls", &resp_tls_listener)] {
        if let Some(listener) = listener {
            kept.push((name, clone_listener(listener)?));
        }
    }
    let (stop, stopped) = watch::channel(false);
    let router = crate::http::router(Arc::clone(&state))?;
    let http = spawn_http(http_listener, tls.http, router, stopped.clone());
    let (stop_fsync, fsync_stopped) = watch::channel(false);
    let group_commit = resp_runtime.spawn(shardkit_node::counters::commit_task::GroupCommit::run(
        Arc::clone(&state.counters),
        state.settings.counters.log == shardkit_node::config::CounterLog::Jetstream,
        fsync_stopped,
    ));
    let clicks = tokio::spawn(flush_clicks(Arc::clone(&state), stopped.clone()));
    // Each webhook receiver's sender; they end with `stopped` (what is queued is lost).
    let _webhooks = state.links.webhooks.start(stopped.clone());
    let clients = Arc::new(crate::resp::clients::Clients::default());
    let mut resp = vec![resp_runtime.spawn(crate::resp::accept::sample_ops(stopped.clone()))];
    for (listener, port_tls) in [(resp_listener, None), (resp_tls_listener, tls.resp)] {
        let Some(listener) = listener else { continue };
        let listener = listener.into_std()?;
        let state = Arc::clone(&state);
        let clients = Arc::clone(&clients);
        let stopped = stopped.clone();
        resp.push(resp_runtime.spawn(async move {
            match TcpListener::from_std(listener) {
                Ok(listener) => {
                    crate::resp::accept::accept(listener, port_tls, state, clients, limits, stopped)
                        .await
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot move a RESP listener to its runtime")
                }
            }
        }));
    }

    let restart = tokio::select! {
        _ = stop_signals.first() => None,
        request = shardkit_node::restart_in_place::requested() => Some(request),
    };
    let drain_for = match restart {
        None => {
            tracing::info!("shutting down: no new connections, finishing requests");
            kept.clear();
            DRAIN_TIMEOUT
        }
        Some(request) => {
            tracing::warn!(
                code = request.code,
                "starting over: no new connections, finishing requests, then restarting in place"
            );
            RESTART_DRAIN_TIMEOUT
        }
    };
    let _ = stop.send(true);
    reload.abort();
    let drained = tokio::time::timeout(drain_for, async {
        let _ = http.await;
        for port in resp {
            let _ = port.await;
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still open after {drain_for:?}; closing anyway");
    }
    // Connections finishing their last batch may still wait for an fsync: stop the
    // fsync task only now.
    let _ = stop_fsync.send(true);
    let _ = group_commit.await;
    // Everything on it has ended; dropping a runtime inside another's context would panic.
    resp_runtime.shutdown().await;
    let _ = clicks.await;
    if let Some(replication) = replication {
        let _ = tokio::task::spawn_blocking(move || replication.stop()).await;
    }
    #[cfg(feature = "nats")]
    if let Some(cluster) = cluster {
        let _ = tokio::task::spawn_blocking(move || cluster.stop()).await;
    }
    #[cfg(not(feature = "nats"))]
    let NoCluster = cluster;
    let closed = match Arc::try_unwrap(state) {
        Ok(state) => tokio::task::spawn_blocking(move || state.close()).await?,
        Err(_) => {
            tracing::warn!(
                "state still in use at exit; the time guard keeps its written-ahead mark"
            );
            Ok(())
        }
    };
    let Some(request) = restart else {
        closed?;
        tracing::info!("stopped");
        return Ok(Stopped::Signal);
    };
    if let Err(e) = closed {
        // The counters are rebuilt from the snapshot and the stream on the way back;
        // what else the state holds was written as it was acknowledged.
        tracing::warn!(error = %format!("{e:#}"), "the state did not close cleanly before the restart");
    }
    Ok(Stopped::Restart {
        request,
        listeners: kept,
    })
}

/// A second handle on a listening socket (the same socket, another descriptor).
fn clone_listener(listener: &TcpListener) -> anyhow::Result<std::net::TcpListener> {
    use std::os::fd::AsFd;
    Ok(std::net::TcpListener::from(
        listener.as_fd().try_clone_to_owned()?,
    ))
}

/// Writes the clicks counted in memory to the counter engine every
/// `links.click_flush_ms` until told to stop (`AppState::close` flushes the rest).
async fn flush_clicks(state: Arc<AppState>, mut stopped: watch::Receiver<bool>) {
    let every = Duration::from_millis(state.settings.links.click_flush_ms.max(1));
    // A failing write is retried every flush: logged the first time, then once a minute.
    let failure_log = shardkit_util::log_every::LogEvery::minute();
    let mut failed_flushes = 0u64;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stopped.changed() => return,
        }
        let flushing = Arc::clone(&state);
        match tokio::task::spawn_blocking(move || {
            let engine = &flushing.counters.engine;
            flushing
                .links
                .analytics
                .flush(engine, &flushing.links.clicks)
        })
        .await
        {
            Ok(Err(e)) => {
                failed_flushes += 1;
                if failure_log.due() {
                    tracing::warn!(error = %e, failed_flushes, "clicks could not be written to the counter engine; kept in memory and retried every flush");
                }
            }
            Err(e) => tracing::warn!(error = %e, "the click flusher failed"),
            Ok(Ok(_)) => {
                if failed_flushes > 0 {
                    tracing::info!(
                        failed_flushes,
                        "clicks are written to the counter engine again"
                    );
                    failed_flushes = 0;
                }
            }
        }
    }
}

/// Serves HTTP, or HTTPS when the settings gave a certificate, until `stopped`.
fn spawn_http(
    listener: TcpListener,
    tls: Option<crate::frontend_tls::HttpTls>,
    router: axum::Router,
    mut stopped: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let shutdown = async move {
        let _ = stopped.changed().await;
    };
    let app = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
    match tls {
        None => tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }),
        #[cfg(feature = "tls")]
        Some(acceptor) => {
            use axum::serve::ListenerExt;
            // `tap_io` only to reach axum's `ConnectInfo` for any listener.
            let listener =
                crate::tls::http_listener::TlsListener::new(listener, acceptor).tap_io(|_| {});
            tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown)
                    .await
            })
        }
        #[cfg(not(feature = "tls"))]
        Some(never) => match never {},
    }
}

/// Handles SIGHUP while the server runs: the TLS certificates are read again (a
/// node without TLS logs that there is nothing to reload). Caught in every case, so
/// `systemctl reload` never ends a node.
fn spawn_reload(tls: &crate::frontend_tls::Frontends) -> tokio::task::JoinHandle<()> {
    #[cfg(feature = "tls")]
    let certificates = tls.certificates.clone();
    #[cfg(not(feature = "tls"))]
    let _ = tls;
    // Registered here, before the server says it listens, not in the task: a SIGHUP
    // that came between the two would end the process (the default action).
    use tokio::signal::unix::{signal, SignalKind};
    let hangups = signal(SignalKind::hangup());
    tokio::spawn(async move {
        let mut hangups = match hangups {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            #[cfg(feature = "tls")]
            if !certificates.is_empty() {
                crate::tls::reload::reload_all(&certificates);
                continue;
            }
            tracing::info!("SIGHUP: no TLS certificate to reload");
        }
    })
}

/// SIGINT and SIGTERM, registered when made: made before the server says it listens,
/// so a stop sent the moment it does is never met by the default action instead.
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn register() -> anyhow::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
        })
    }

    /// Waits for either.
    async fn first(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// With `[cluster] enabled`: the node's id, its view of the cluster in the state, and the
/// runner that keeps both current (blocks while connecting, on a blocking thread).
#[cfg(feature = "nats")]
async fn join_cluster(
    state: &Arc<AppState>,
    commits: tokio::runtime::Handle,
) -> anyhow::Result<Option<shardkit_node::cluster_runner::Runner>> {
    if !state.settings.cluster.enabled {
        return Ok(None);
    }
    let state = Arc::clone(state);
    let runner = tokio::task::spawn_blocking(move || {
        let me = shardkit_node::cluster::nats::node_id::load_or_create(&state.settings.data)?;
        let live = Arc::new(shardkit_node::cluster::live::Live::new(
            me,
            state.settings.cluster.groups,
        ));
        let runner = shardkit_node::cluster_runner::Runner::start(
            &state.settings,
            Arc::clone(&live),
            Arc::clone(&state.id_leases),
            commits,
        )?;
        let _ = state.cluster.set(live);
        anyhow::Ok(runner)
    })
    .await??;
    Ok(Some(runner))
}

/// What a node without the `nats` feature holds of a cluster: nothing to stop.
#[cfg(not(feature = "nats"))]
struct NoCluster;

/// Without the `nats` feature a node cannot join a cluster (the settings refuse it).
#[cfg(not(feature = "nats"))]
async fn join_cluster(_: &Arc<AppState>, _: tokio::runtime::Handle) -> anyhow::Result<NoCluster> {
    Ok(NoCluster)
}
