//! The small HTML pages people see when a short link does not work (404, 410),
//! in the look of the web page, with everything escaped.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The page frame (styles inline: nothing is loaded from elsewhere).
pub const FRAME: &str = include_str!("assets/frame.html");

/// `text` safe inside HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole page: `title` (escaped) and `body` (HTML, already safe).
pub fn page(title: &str, body: &str) -> String {
    FRAME
        .replace("{title}", &escape(title))
        .replace("{body}", body)
}

/// Whether the client asked for HTML (a browser); API clients get `{"error":…}`.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

/// An HTML page for a browser, the API's `{"error":…}` for anything else.
pub fn answer(html: bool, status: StatusCode, title: &str, sentence: &str) -> Response {
    if html {
        message(status, title, sentence)
    } else {
        super::ApiError::new(status, sentence).into_response()
    }
}

/// A page with a heading and one sentence.
pub fn message(status: StatusCode, title: &str, sentence: &str) -> Response {
    let body = format!(
        "<h1>{}</h1><p>{}</p><p><a href=\"/\">Shorten a link</a></p>",
        escape(title),
        escape(sentence)
    );
    (status, Html(page(title, &body))).into_response()
}

/// 404: no such short link.
pub fn not_found(html: bool, code: &str) -> Response {
    answer(
        html,
        StatusCode::NOT_FOUND,
        "Link not found",
        &format!("There is no short link /{code}."),
    )
}

/// 410: the link existed but is used up.
pub fn gone(html: bool, code: &str, why: &str) -> Response {
    answer(
        html,
        StatusCode::GONE,
        "Link gone",
        &format!("The short link /{code} no longer redirects: {why}."),
    )
}

/// The form a password-protected link answers: one field, posted back to `/{code}`.
/// `status` is 200 on the first visit, 401 after a wrong password (with `note`).
pub fn password_form(status: StatusCode, code: &str, note: Option<&str>) -> Response {
    let note = note
        .map(|n| format!("<p role=\"alert\">{}</p>", escape(n)))
        .unwrap_or_default();
    let body = format!(
        "<h1>This link needs a password</h1>{note}<form method=\"post\" action=\"/{code}\">\
         <label>Password <input type=\"password\" name=\"password\" autofocus required \
         maxlength=\"128\"></label> <button type=\"submit\">Open</button></form>",
        code = escape(code),
    );
    (status, Html(page("Password needed", &body))).into_response()
}
