//! `{"ids":["…","…"]}` written straight into one buffer: ids are answered in batches
//! of up to 100,000, and building a `String` and a JSON value per id would cost more
//! than making the ids.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The JSON answer for a list of ids or tickets, as strings.
pub fn ids_response(ids: &[u64]) -> Response {
    let mut body = Vec::with_capacity(10 + ids.len() * 23);
    body.extend_from_slice(b"{\"ids\":[");
    let mut digits = itoa::Buffer::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.push(b'"');
        body.extend_from_slice(digits.format(*id).as_bytes());
        body.push(b'"');
    }
    body.extend_from_slice(b"]}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The same answer for ids given as text (UUIDv7s, ULIDs), which need no escaping.
pub fn text_ids_response(ids: &[String]) -> Response {
    let mut body = Vec::with_capacity(10 + ids.iter().map(|id| id.len() + 3).sum::<usize>());
    body.extend_from_slice(b"{\"ids\":[");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.push(b'"');
        body.extend_from_slice(id.as_bytes());
        body.push(b'"');
    }
    body.extend_from_slice(b"]}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_body_is_the_json_of_string_ids() {
        for ids in [
            vec![],
            vec![7u64],
            vec![1, u64::MAX, 765_485_701_750_849_536],
        ] {
            let response = ids_response(&ids);
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            let expected =
                serde_json::json!({ "ids": ids.iter().map(u64::to_string).collect::<Vec<_>>() });
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap(),
                expected
            );
        }
    }
}
