//! Per-client limit on link creation (governor's GCRA, keyed by the client's IP), so
//! one client cannot fill the code space or the disk. Applied to the creating routes
//! only; redirects are never limited.

use super::ApiError;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::{Quota, RateLimiter};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
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

/// Refuses a creation with 429 when the client's rate is used up.
pub async fn creation(
    State(limiter): State<Option<Arc<Limiter>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(limiter) = &limiter {
        let ip = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if limiter.check_key(&ip).is_err() {
            return ApiError::too_many_requests(
                "too many links created from this address; wait a moment and try again",
            )
            .into_response();
        }
    }
    next.run(request).await
}
