//! The one error shape of the API: `4xx {"error":"<what is wrong, in words>"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An error answer: a status and a sentence for the caller.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// 400: the request is wrong; the message says how.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }
    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into() }
    }
    /// 405.
    pub fn method_not_allowed() -> Self {
        Self { status: StatusCode::METHOD_NOT_ALLOWED, message: "method not allowed on this endpoint".into() }
    }
    /// 401: missing or wrong API key.
    pub fn unauthorized() -> Self {
        Self { status: StatusCode::UNAUTHORIZED, message: "this endpoint needs the API key: send Authorization: Bearer <key>".into() }
    }
    /// 503: the server cannot do it now (clock behind, storage failing); retry later.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}
