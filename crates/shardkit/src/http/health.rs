//! `GET /healthz`: the process is up and serving.

use axum::Json;

/// Always `{"status":"ok"}` while the server accepts requests.
#[utoipa::path(get, path = "/healthz", tag = "meta", responses((status = 200, description = "Serving", body = super::openapi::HealthBody)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}
