//! The reference for `bench/http-ids.sh` and `bench/links-redirect.sh`: the same
//! HTTP stack as shardkit (axum on hyper, tokio multi-thread) answering a constant
//! (`POST /api/ids`: an id; `GET /{code}`: a 302 to one URL), so the benchmark shows
//! what shardkit's own work costs on top of the stack.
//!
//! `cargo run --release --example bare_http -- 127.0.0.1:18090`

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18090".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let app = Router::new()
            .route(
                "/api/ids",
                post(|| async {
                    (
                        [("content-type", "application/json")],
                        r#"{"ids":["765485701750849536"]}"#,
                    )
                }),
            )
            .route(
                "/{code}",
                get(|| async {
                    (
                        StatusCode::FOUND,
                        [("location", "https://example.com/landing")],
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        axum::serve(listener, app).await
    })
}
