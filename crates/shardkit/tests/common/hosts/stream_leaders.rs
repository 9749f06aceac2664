//! Which NATS server leads each of some streams, over time, as one server answers: a
//! partition test reports how long NATS itself took to elect new stream leaders beside
//! how long shardkit's failover took, so the two can be told apart.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One stream's leaders as seen: (when, the leading server's name, `None` when the
/// stream's info did not answer or named no leader), a row per change.
pub type Leaders = Vec<(Instant, Option<String>)>;

/// Polls every stream of `streams` through the NATS server at `url` every 250 ms until
/// `until`; the leaders seen, per stream in the order given.
pub fn watch(url: String, streams: Vec<String>, until: Instant) -> JoinHandle<Vec<Leaders>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut seen: Vec<Leaders> = vec![Vec::new(); streams.len()];
            let Ok(client) = async_nats::ConnectOptions::new()
                .connection_timeout(Duration::from_secs(2))
                .connect(url.as_str())
                .await
            else {
                return seen;
            };
            let js = async_nats::jetstream::new(client);
            while Instant::now() < until {
                for (name, leaders) in streams.iter().zip(seen.iter_mut()) {
                    let leader = tokio::time::timeout(Duration::from_millis(500), async {
                        let mut stream = js.get_stream(name).await.ok()?;
                        stream.info().await.ok()?.cluster.as_ref()?.leader.clone()
                    })
                    .await
                    .ok()
                    .flatten();
                    if leaders.last().map(|(_, l)| l) != Some(&leader) {
                        leaders.push((Instant::now(), leader));
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            seen
        })
    })
}

/// For each stream led by `server` just before `at`: how long after `at` another server
/// was first seen leading it (`None`: not within the watch).
pub fn elected_after(all: &[Leaders], server: &str, at: Instant) -> Vec<Option<Duration>> {
    all.iter()
        .filter(|leaders| {
            leaders
                .iter()
                .rev()
                .find(|(t, _)| *t <= at)
                .is_some_and(|(_, l)| l.as_deref() == Some(server))
        })
        .map(|leaders| {
            leaders
                .iter()
                .find(|(t, l)| *t > at && l.as_deref().is_some_and(|l| l != server))
                .map(|(t, _)| *t - at)
        })
        .collect()
}

/// One stream's leaders as a line of changes, times from `at` (`h1 -2.0 s, none +0.5 s,
/// h2 +6.1 s`): the first entry is the leader seen when the watch began.
pub fn timeline(leaders: &Leaders, at: Instant) -> String {
    leaders
        .iter()
        .map(|(t, leader)| {
            let from = if *t >= at {
                format!("+{:.1}", (*t - at).as_secs_f64())
            } else {
                format!("-{:.1}", (at - *t).as_secs_f64())
            };
            format!("{} {from} s", leader.as_deref().unwrap_or("none"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
