//! Per-client limit on link creation (governor's GCRA, keyed by the client's IP), so
//! one client cannot fill the code space or the disk. Applied to the creating routes
//! only; redirects are never limited.

use super::ApiError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::{Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

/// Creations per client address.
pub type Limiter = governor::DefaultKeyedRateLimiter<IpAddr>;

/// The limiter for `per_second` creations with bursts of `burst`; `None` when off (0).
pub fn limiter(per_second: u32, burst: u32) -> Option<Arc<Limiter>> {
    let rate = NonZeroU32::new(per_second)?;
    let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
    Some(Arc::new(RateLimiter::keyed(
        Quota::per_second(rate).allow_burst(burst),
    )))
}

/// What the creation limit needs: the limiter (none when off) and the proxies whose
/// forwarding headers name the client (`[http] trusted_proxies`).
#[derive(Clone)]
pub struct Creation {
    /// The per-client limiter; `None`: no limit.
    pub limiter: Option<Arc<Limiter>>,
    /// `[http] trusted_proxies`.
    pub trusted: Arc<[ipnet::IpNet]>,
}

/// Refuses a creation with 429 when the client's rate is used up.
pub async fn creation(State(creation): State<Creation>, request: Request, next: Next) -> Response {
    if let Some(limiter) = &creation.limiter {
        let ip = super::client_addr::client(
            super::client_addr::peer(request.extensions()),
            request.headers(),
            &creation.trusted,
        );
        if limiter.check_key(&ip).is_err() {
            return ApiError::too_many_requests(
                "too many links created from this address; wait a moment and try again",
            )
            .into_response();
        }
    }
    next.run(request).await
}
