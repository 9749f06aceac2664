//! Webhooks: the service tells receivers what happens to its links (a click, a link
//! made, changed or deleted) by POSTing the events in batches, as Dub's `link.clicked`
//! webhooks do.
//!
//! The request that causes an event never waits on a receiver: [`Webhooks::emit`] puts
//! the event on each receiver's bounded queue or, when the queue is full, drops it and
//! counts the drop (`shardkit_link_webhook_events_dropped_total`). One task per receiver
//! ([`delivery`]) batches the queue (at most `batch` events, POSTs at least
//! `interval_ms` apart), signs each body and sends it again, with backoff, until the
//! receiver answers 2xx: delivery is at least once, and a batch sent again carries the
//! same event ids, so a receiver drops what it has seen. The queues live in memory: a
//! server that stops loses what it had not delivered.
//!
//! - [`settings`]: the `[[links.webhooks]]` tables.
//! - [`delivery`]: the sending task: batches, signatures, retries.

pub mod delivery;
pub mod settings;

use crate::analytics::geo::GeoIp;
use serde::{Deserialize, Serialize};
use settings::WebhookSettings;
use shardkit_links::Link;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// A redirect was served.
    #[serde(rename = "link.clicked")]
    Clicked,
    /// A link was made (one by one, in bulk, or restored by an import).
    #[serde(rename = "link.created")]
    Created,
    /// A link was changed.
    #[serde(rename = "link.updated")]
    Updated,
    /// A link was deleted.
    #[serde(rename = "link.deleted")]
    Deleted,
}

impl EventKind {
    /// Every kind: what a receiver gets when its settings name none.
    pub fn all() -> Vec<EventKind> {
        vec![
            EventKind::Clicked,
            EventKind::Created,
            EventKind::Updated,
            EventKind::Deleted,
        ]
    }

    /// Its name in the event's `type`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Clicked => "link.clicked",
            EventKind::Created => "link.created",
            EventKind::Updated => "link.updated",
            EventKind::Deleted => "link.deleted",
        }
    }
}

/// A click as the redirect saw it; classified (browser, country…) by the sending task,
/// off the redirect path.
#[derive(Debug, Clone)]
pub struct ClickFacts {
    /// Where the visit was sent (the link's URL or the one a redirect rule chose).
    pub target: Box<str>,
    /// `Referer`.
    pub referrer: Option<Box<str>>,
    /// `User-Agent`.
    pub agent: Option<Box<str>>,
    /// The client's address.
    pub ip: IpAddr,
}

/// One event as queued: cheap to make (the link is shared, nothing is serialized).
#[derive(Debug)]
pub struct Event {
    /// Unique in this server's life and beyond (a random prefix drawn at start, then a
    /// sequence): the receiver's key for dropping a batch it was sent twice.
    pub id: String,
    /// What happened.
    pub kind: EventKind,
    /// When, ms since the Unix epoch.
    pub at: u64,
    /// The link as it is after the event (as it was, for a delete).
    pub link: Arc<Link>,
    /// For a click.
    pub click: Option<ClickFacts>,
}

/// One receiver's end of the service: the kinds it wants, its queue, and the counter
/// of what the queue had no room for (a handle, so a drop costs no look-up; made by
/// [`Webhooks::start`], once the server's metrics recorder is installed).
struct Receiver {
    kinds: Vec<EventKind>,
    url: String,
    queue: mpsc::Sender<Arc<Event>>,
    dropped: std::sync::OnceLock<metrics::Counter>,
}

impl Receiver {
    fn drop_one(&self) {
        if let Some(dropped) = self.dropped.get() {
            dropped.increment(1);
        }
    }
}

/// The events' way out: every configured receiver's queue. Empty (and free) without
/// `[[links.webhooks]]`.
pub struct Webhooks {
    receivers: Vec<Receiver>,
    /// The sending tasks' halves, taken once by [`Webhooks::start`].
    waiting: parking_lot::Mutex<Vec<(WebhookSettings, mpsc::Receiver<Arc<Event>>)>>,
    geo: Option<Arc<GeoIp>>,
    prefix: u64,
    sequence: AtomicU64,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("receivers", &self.receivers.len())
            .finish()
    }
}

impl Webhooks {
    /// The queues of `hooks` (checked settings); click events are classified with
    /// `geo` for their country. Nothing is sent before [`Webhooks::start`].
    pub fn new(hooks: &[WebhookSettings], geo: Option<Arc<GeoIp>>) -> Webhooks {
        let mut receivers = Vec::new();
        let mut waiting = Vec::new();
        for hook in hooks {
            let (queue, inbox) = mpsc::channel(hook.queue);
            receivers.push(Receiver {
                kinds: hook.events.clone(),
                url: hook.url.clone(),
                queue,
                dropped: std::sync::OnceLock::new(),
            });
            waiting.push((hook.clone(), inbox));
        }
        let mut seed = [0u8; 8];
        // Without randomness the prefix is 0: ids stay unique within this life.
        let _ = getrandom::fill(&mut seed);
        Webhooks {
            receivers,
            waiting: parking_lot::Mutex::new(waiting),
            geo,
            prefix: u64::from_le_bytes(seed),
            sequence: AtomicU64::new(0),
        }
    }

    /// No receivers.
    pub fn none() -> Webhooks {
        Webhooks::new(&[], None)
    }

    /// Queues an event for every receiver that wants its kind; never waits (a full
    /// queue drops it, counted).
    pub fn emit(&self, kind: EventKind, link: Arc<Link>, click: Option<ClickFacts>) {
        self.emit_with(kind, || (link, click));
    }

    /// [`Webhooks::emit`], the event's parts made only when a queue has room for it: a
    /// receiver that is down costs a redirect one counted drop, no copy of its facts.
    pub fn emit_with(
        &self,
        kind: EventKind,
        parts: impl FnOnce() -> (Arc<Link>, Option<ClickFacts>),
    ) {
        let mut room = false;
        for receiver in self.receivers.iter().filter(|r| r.kinds.contains(&kind)) {
            if receiver.queue.capacity() == 0 {
                receiver.drop_one();
            } else {
                room = true;
            }
        }
        if !room {
            return;
        }
        let (link, click) = parts();
        let event = Arc::new(Event {
            id: format!(
                "{:016x}{:016x}",
                self.prefix,
                self.sequence.fetch_add(1, Ordering::Relaxed)
            ),
            kind,
            at: shardkit_links::now_ms(),
            link,
            click,
        });
        for receiver in self
            .receivers
            .iter()
            .filter(|r| r.kinds.contains(&kind) && r.queue.capacity() > 0)
        {
            if receiver.queue.try_send(Arc::clone(&event)).is_err() {
                receiver.drop_one();
            }
        }
    }

    /// Starts one sending task per receiver on the current runtime; they end when
    /// `stopped` turns true. Called once; a second call starts nothing.
    pub fn start(
        &self,
        stopped: tokio::sync::watch::Receiver<bool>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        for receiver in &self.receivers {
            for metric in [
                "shardkit_link_webhook_events_delivered_total",
                "shardkit_link_webhook_posts_failed_total",
            ] {
                metrics::counter!(metric, "url" => receiver.url.clone()).increment(0);
            }
            let dropped = metrics::counter!("shardkit_link_webhook_events_dropped_total", "url" => receiver.url.clone());
            dropped.increment(0);
            let _ = receiver.dropped.set(dropped);
        }
        let waiting = std::mem::take(&mut *self.waiting.lock());
        waiting
            .into_iter()
            .map(|(hook, inbox)| {
                let geo = self.geo.clone();
                tokio::spawn(delivery::run(hook, inbox, geo, stopped.clone()))
            })
            .collect()
    }
}
