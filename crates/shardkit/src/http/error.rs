//! The one error shape of the API: `4xx {"error":"<what is wrong, in words>"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An error answer: a status and a sentence for the caller.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    /// One more field beside `error` (409's owner `code`).
    extra: Option<(&'static str, String)>,
}

impl ApiError {
    /// Any status with a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            extra: None,
        }
    }
    /// 409: taken by someone else; `field` names the owner (e.g. `code`).
    pub fn conflict(
        message: impl Into<String>,
        field: &'static str,
        owner: impl Into<String>,
    ) -> Self {
        Self {
            extra: Some((field, owner.into())),
            ..Self::new(StatusCode::CONFLICT, message)
        }
    }
    /// 429: the client's creation rate is used up.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, message)
    }
    /// The sentence for the caller.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// 400: the request is wrong; the message says how.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    /// A body the extractor refused (`Json`, `Bytes`): 413 when it is too large, 415
    /// when its content type is not the one the endpoint reads, 400 for anything else
    /// (unreadable or not the expected shape), always with the extractor's sentence.
    pub fn body_rejected(status: StatusCode, message: impl Into<String>) -> Self {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                Self::new(status, message)
            }
            _ => Self::bad_request(message),
        }
    }
    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    /// 405.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed on this endpoint",
        )
    }
    /// 401: missing or wrong API key.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "this endpoint needs the API key: send Authorization: Bearer <key>",
        )
    }
    /// 421: this node is a read-only replica; `leader` is the HTTP address of the node
    /// that takes writes (absent while none holds the lease).
    pub fn misdirected(leader: Option<String>) -> Self {
        let message = match &leader {
            Some(addr) => format!("this node is a read-only replica; send writes to the leader at {addr}"),
            None => "this node is a read-only replica and no leader holds the lease right now; retry shortly".to_string(),
        };
        Self {
            extra: leader.map(|addr| ("leader", addr)),
            ..Self::new(StatusCode::MISDIRECTED_REQUEST, message)
        }
    }
    /// 421: on a Redis Cluster node, a counter row or ticket sequence whose slot another
    /// node owns; `owner` is that node's HTTP address (as `-MOVED` names its RESP
    /// address).
    pub fn moved(slot: u16, owner: &str) -> Self {
        let message = if owner.is_empty() {
            format!(
                "slot {slot} is owned by another node of the Redis Cluster, whose \
                 HTTP address the slot map does not hold yet (run `shardkit cluster rebalance` \
                 to rewrite the map); ask CLUSTER SLOTS over the Redis protocol"
            )
        } else {
            format!("slot {slot} is owned by another node of the Redis Cluster: send the request to {owner}")
        };
        Self {
            extra: (!owner.is_empty()).then(|| ("owner", owner.to_string())),
            ..Self::new(StatusCode::MISDIRECTED_REQUEST, message)
        }
    }
    /// 403: a valid key whose roles do not cover the request.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    /// The same answer with one more field beside `error` (`region` of a link homed
    /// elsewhere or of a region that did not answer).
    pub fn with(mut self, field: &'static str, value: impl Into<String>) -> Self {
        self.extra = Some((field, value.into()));
        self
    }
    /// 503: the server cannot do it now (clock behind, storage failing); retry later.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message });
        if let (Some((field, value)), Some(object)) = (self.extra, body.as_object_mut()) {
            object.insert(field.to_string(), serde_json::Value::String(value));
        }
        (self.status, Json(body)).into_response()
    }
}
