//! [`RemoteCache`]: links homed in other regions, fetched once and then served from
//! here for at most `[regions] remote_ttl_ms`. Misses (`404` at home) are kept as long,
//! so a scan of unknown codes does not cross regions per request. Concurrent first
//! reads of one path wait for a single fetch. A failed fetch is remembered for
//! [`DOWN_BACKOFF`], so requests for links of a region that is down answer at once
//! instead of each waiting out the timeout.

use super::peers::PeerError;
use shardkit_links::Link;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a failed fetch answers for its path without trying again.
pub const DOWN_BACKOFF: Duration = Duration::from_millis(500);

/// One cached answer of a home region.
#[derive(Debug, Clone)]
enum Remote {
    /// The link (`None`: the home has no such link), as fetched at the instant.
    Found(Option<Arc<Link>>, Instant),
    /// The home could not be reached at the instant.
    Down(Arc<str>, Instant),
}

/// Where a cached answer came from, for the callers' figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Served from the cache.
    Cache,
    /// Fetched from the home region by this call.
    Fetched,
}

/// The bounded cache of remote links.
pub struct RemoteCache {
    cache: quick_cache::sync::Cache<String, Remote>,
    ttl: Duration,
}

impl std::fmt::Debug for RemoteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteCache")
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl RemoteCache {
    /// Up to `entries` paths, each served for `ttl` after its fetch.
    pub fn new(entries: usize, ttl: Duration) -> Self {
        Self {
            cache: quick_cache::sync::Cache::new(entries.max(16)),
            ttl,
        }
    }

    /// The answer for `path` if it is still within its bound.
    fn fresh(&self, value: &Remote) -> Option<Result<Option<Arc<Link>>, String>> {
        match value {
            Remote::Found(link, at) if at.elapsed() < self.ttl => Some(Ok(link.clone())),
            Remote::Down(reason, at) if at.elapsed() < DOWN_BACKOFF => {
                Some(Err(reason.to_string()))
            }
            _ => None,
        }
    }

    /// The link at `path` (homed in another region): from the cache while within the
    /// bound, else from `fetch` (one at a time per path). `Err`: the home could not be
    /// reached (now, or within [`DOWN_BACKOFF`]); the text names the region.
    pub async fn get<F, Fut>(
        &self,
        path: &str,
        fetch: F,
    ) -> (Result<Option<Arc<Link>>, String>, Source)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<Link>, PeerError>>,
    {
        for _ in 0..2 {
            match self.cache.get_value_or_guard_async(path).await {
                Ok(value) => {
                    if let Some(answer) = self.fresh(&value) {
                        metrics::counter!("shardkit_link_region_cache_hits_total").increment(1);
                        return (answer, Source::Cache);
                    }
                    // Past its bound: drop it and take the placeholder.
                    self.cache.remove(path);
                }
                Err(guard) => {
                    let answer = match fetch().await {
                        Ok(link) => {
                            let link = link.map(Arc::new);
                            let _ = guard.insert(Remote::Found(link.clone(), Instant::now()));
                            Ok(link)
                        }
                        Err(e) => {
                            let reason: Arc<str> = Arc::from(e.to_string());
                            let _ = guard.insert(Remote::Down(Arc::clone(&reason), Instant::now()));
                            Err(reason.to_string())
                        }
                    };
                    return (answer, Source::Fetched);
                }
            }
        }
        // Another request put a stale value back between the two tries: fetch directly.
        let answer = match fetch().await {
            Ok(link) => {
                let link = link.map(Arc::new);
                self.cache.insert(
                    path.to_string(),
                    Remote::Found(link.clone(), Instant::now()),
                );
                Ok(link)
            }
            Err(e) => Err(e.to_string()),
        };
        (answer, Source::Fetched)
    }

    /// Drops `path` (a change made through this region: the next read fetches it).
    pub fn forget(&self, path: &str) {
        self.cache.remove(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(code: &str) -> Link {
        Link {
            id: 7,
            url: "https://example.cn/".into(),
            code: code.into(),
            alias: None,
            domain: None,
            title: None,
            created_at: 0,
            expires_at: None,
            max_visits: None,
            redirect: Default::default(),
            tags: vec![],
            password_hash: None,
            author: None,
            rules: vec![],
        }
    }

    #[tokio::test]
    async fn a_link_is_fetched_once_then_served_until_its_bound() {
        let cache = RemoteCache::new(16, Duration::from_millis(200));
        let calls = std::sync::atomic::AtomicU32::new(0);
        let fetch = || async {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Some(link("Vabcdef")))
        };
        let (first, source) = cache.get("Vabcdef", fetch).await;
        assert_eq!(source, Source::Fetched);
        assert_eq!(first.unwrap().unwrap().code, "Vabcdef");
        let (_, source) = cache.get("Vabcdef", fetch).await;
        assert_eq!(source, Source::Cache);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (_, source) = cache.get("Vabcdef", fetch).await;
        assert_eq!(
            source,
            Source::Fetched,
            "past the bound the home is asked again"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_fetch_answers_at_once_for_a_moment() {
        let cache = RemoteCache::new(16, Duration::from_secs(60));
        let down = || async {
            Err(PeerError::Unreachable {
                region: "cn".into(),
                timeout_ms: 10,
                reason: "cut".into(),
            })
        };
        let (answer, _) = cache.get("Vabcdef", down).await;
        assert!(answer.unwrap_err().contains("region cn"));
        let (answer, source) = cache
            .get("Vabcdef", || async { Ok(Some(link("Vabcdef"))) })
            .await;
        assert_eq!(source, Source::Cache);
        assert!(answer.is_err());
    }
}
