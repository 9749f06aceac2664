//! The task that sends one receiver its events: waits for the first, lets `interval_ms`
//! pass since the last POST (so events that come meanwhile go together), takes at most
//! `batch` from the queue, and POSTs `{"events":[…]}` signed with the receiver's
//! secret. A POST that fails (no connection, a timeout, an answer other than 2xx) is
//! sent again, the same body, after a backoff that doubles from 100 ms to 30 s, until
//! it lands: the queue fills meanwhile, and past its bound new events are dropped and
//! counted where they are made, never waited for.

use super::settings::WebhookSettings;
use super::{Event, EventKind};
use crate::analytics::classify;
use crate::analytics::geo::GeoIp;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// The header carrying `sha256=<hex of HMAC-SHA256(secret, body)>`.
pub const SIGNATURE_HEADER: &str = "x-shardkit-signature";

/// How long one POST may take before it counts as failed.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// The first wait before a failed POST is sent again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest wait between two sends of a failed POST.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Sends `hook` the events of `inbox` until `stopped` turns true.
pub async fn run(
    hook: WebhookSettings,
    mut inbox: mpsc::Receiver<Arc<Event>>,
    geo: Option<Arc<GeoIp>>,
    mut stopped: watch::Receiver<bool>,
) {
    let client = match reqwest::Client::builder().timeout(POST_TIMEOUT).build() {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(url = %hook.url, error = %e, "cannot make the webhook client; its events are dropped");
            return;
        }
    };
    let interval = Duration::from_millis(hook.interval_ms);
    let mut last_post: Option<Instant> = None;
    loop {
        let first = tokio::select! {
            event = inbox.recv() => match event {
                Some(event) => event,
                None => return,
            },
            _ = stopped.changed() => return,
        };
        if let Some(at) = last_post {
            tokio::select! {
                _ = tokio::time::sleep_until(at + interval) => {}
                _ = stopped.changed() => return,
            }
        }
        let mut events = vec![first];
        while events.len() < hook.batch {
            match inbox.try_recv() {
                Ok(event) => events.push(event),
                Err(_) => break,
            }
        }
        let body = body(&events, geo.as_deref());
        let signature = sign(&hook.secret, &body);
        last_post = Some(Instant::now());
        if !post_until_taken(&client, &hook, body, &signature, &mut stopped).await {
            return;
        }
        metrics::counter!("shardkit_link_webhook_events_delivered_total", "url" => hook.url.clone())
            .increment(events.len() as u64);
    }
}

/// POSTs `body` until the receiver answers 2xx (`true`) or the server stops (`false`).
async fn post_until_taken(
    client: &reqwest::Client,
    hook: &WebhookSettings,
    body: Vec<u8>,
    signature: &str,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let mut backoff = FIRST_BACKOFF;
    let mut failures = 0u64;
    loop {
        let sent = client
            .post(&hook.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::USER_AGENT,
                concat!("shardkit-webhooks/", env!("CARGO_PKG_VERSION")),
            )
            .header(SIGNATURE_HEADER, signature)
            .body(body.clone())
            .send()
            .await;
        let failure = match sent {
            Ok(answer) if answer.status().is_success() => None,
            Ok(answer) => Some(format!("the receiver answered {}", answer.status())),
            Err(e) => Some(e.to_string()),
        };
        let Some(why) = failure else {
            if failures > 0 {
                tracing::info!(url = %hook.url, failures, "the webhook receiver takes events again");
            }
            return true;
        };
        failures += 1;
        metrics::counter!("shardkit_link_webhook_posts_failed_total", "url" => hook.url.clone())
            .increment(1);
        // The first failure, then one line a minute's worth of retries at the cap.
        if failures == 1 || failures.is_multiple_of(60) {
            tracing::warn!(url = %hook.url, error = %why, failures, "a webhook POST failed; sending it again (events wait in the queue, past its bound they are dropped and counted)");
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stopped.changed() => return false,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// `sha256=<hex>` of `body` under `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `{"events":[…]}`.
fn body(events: &[Arc<Event>], geo: Option<&GeoIp>) -> Vec<u8> {
    let events: Vec<Value> = events.iter().map(|e| event_json(e, geo)).collect();
    serde_json::to_vec(&json!({ "events": events })).unwrap_or_default()
}

/// One event: `{"id","type","at","link":{…},"click"?:{…}}`; the link as the API shows
/// it, without its password hash.
fn event_json(event: &Event, geo: Option<&GeoIp>) -> Value {
    let mut link = serde_json::to_value(&*event.link).unwrap_or_else(|_| json!({}));
    if let Some(object) = link.as_object_mut() {
        object.remove("password_hash");
        if event.link.password_hash.is_some() {
            object.insert("password".into(), json!(true));
        }
    }
    let mut value = json!({
        "id": event.id,
        "type": event.kind.name(),
        "at": humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + Duration::from_millis(event.at)
        ).to_string(),
        "link": link,
    });
    if let (EventKind::Clicked, Some(click)) = (event.kind, &event.click) {
        let agent = classify::agent(click.agent.as_deref());
        value["click"] = json!({
            "url": &*click.target,
            "referrer": classify::referrer(click.referrer.as_deref()),
            "browser": agent.browser,
            "os": agent.os,
            "device": agent.device,
            "bot": agent.bot,
            "country": classify::country(geo, click.ip),
        });
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231's test case 2, the HMAC-SHA256 every receiver's library computes.
    #[test]
    fn the_signature_is_hmac_sha256_in_hex() {
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
