//! `[[links.webhooks]]`: where the service POSTs its events, signed with what, which
//! ones, and how they are batched and queued.

use super::EventKind;
use serde::{Deserialize, Serialize};

/// Most events one queue holds while its receiver is slow or down: past it, events are
/// dropped and counted (`shardkit_link_webhook_events_dropped_total`).
pub const MAX_QUEUE: usize = 10_000_000;

/// One receiver of events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// The receiver's address (http or https).
    pub url: String,
    /// The key of the HMAC-SHA256 signature of each body, sent as
    /// `X-Shardkit-Signature: sha256=<hex>` (at least 16 characters).
    pub secret: String,
    /// The events it gets: `link.clicked`, `link.created`, `link.updated`,
    /// `link.deleted` (default: all four).
    #[serde(default = "EventKind::all")]
    pub events: Vec<EventKind>,
    /// Most events in one POST.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Least time between two POSTs, ms (events that come meanwhile wait and go
    /// together).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// Most events waiting for this receiver; past it new events are dropped and
    /// counted, so a receiver that is down never holds up a redirect or fills memory.
    #[serde(default = "default_queue")]
    pub queue: usize,
}

fn default_batch() -> usize {
    100
}

fn default_interval_ms() -> u64 {
    1_000
}

fn default_queue() -> usize {
    100_000
}

impl WebhookSettings {
    /// Refuses values that cannot work, naming the setting (`links.webhooks[i].…`).
    pub fn check(&self, i: usize) -> anyhow::Result<()> {
        let name = |field: &str| format!("links.webhooks[{i}].{field}");
        match url::Url::parse(&self.url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {}
            _ => anyhow::bail!(
                "{} must be an http or https URL, got {:?}",
                name("url"),
                self.url
            ),
        }
        if self.secret.chars().count() < 16 {
            anyhow::bail!(
                "{} must be at least 16 characters (the key receivers check signatures with)",
                name("secret")
            );
        }
        if self.events.is_empty() {
            anyhow::bail!(
                "{} names no event: give some of link.clicked, link.created, link.updated, link.deleted, or leave it out for all",
                name("events")
            );
        }
        if !(1..=10_000).contains(&self.batch) {
            anyhow::bail!(
                "{} must be 1 to 10000 events, got {}",
                name("batch"),
                self.batch
            );
        }
        if !(1..=3_600_000).contains(&self.interval_ms) {
            anyhow::bail!(
                "{} must be 1 to 3600000 ms, got {}",
                name("interval_ms"),
                self.interval_ms
            );
        }
        if !(1..=MAX_QUEUE).contains(&self.queue) {
            anyhow::bail!(
                "{} must be 1 to {MAX_QUEUE} events, got {}",
                name("queue"),
                self.queue
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(toml_text: &str) -> Result<WebhookSettings, String> {
        let hook: WebhookSettings = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        hook.check(2).map_err(|e| e.to_string())?;
        Ok(hook)
    }

    #[test]
    fn defaults_and_bad_values_named() {
        let ok =
            hook("url = \"https://hooks.example/in\"\nsecret = \"0123456789abcdef\"\n").unwrap();
        assert_eq!(ok.events, EventKind::all());
        assert_eq!((ok.batch, ok.interval_ms, ok.queue), (100, 1_000, 100_000));
        for (text, names) in [
            (
                "url = \"ftp://x\"\nsecret = \"0123456789abcdef\"",
                "links.webhooks[2].url",
            ),
            (
                "url = \"https://x\"\nsecret = \"short\"",
                "links.webhooks[2].secret",
            ),
            (
                "url = \"https://x\"\nsecret = \"0123456789abcdef\"\nevents = []",
                "links.webhooks[2].events",
            ),
            (
                "url = \"https://x\"\nsecret = \"0123456789abcdef\"\nevents = [\"link.visited\"]",
                "link.visited",
            ),
            (
                "url = \"https://x\"\nsecret = \"0123456789abcdef\"\nbatch = 0",
                "links.webhooks[2].batch",
            ),
            (
                "url = \"https://x\"\nsecret = \"0123456789abcdef\"\nqueue = 0",
                "links.webhooks[2].queue",
            ),
            (
                "url = \"https://x\"\nsecret = \"0123456789abcdef\"\nretries = 3",
                "retries",
            ),
        ] {
            let err = hook(text).unwrap_err();
            assert!(err.contains(names), "{text}: {err}");
        }
    }
}
