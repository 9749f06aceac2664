//! `GET /healthz`: the process is up and serving.

use axum::Json;

/// Always `{"status":"ok"}` while the server accepts requests.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}
