//! What the types alone cannot tell a reader of `/openapi.json`, written into the
//! document from the same constants the checks use: the value rules the server
//! enforces (bounds, patterns, enums) and the answers a whole kind of endpoint can give
//! (401 for a write when an API key is set, 413/415 for a JSON body, 429 for link
//! creation). `scripts/api-conformance` (schemathesis) holds the server to all of it.

use super::counters::MAX_MGET_KEYS;
use super::links::MAX_PAGE;
use serde_json::{json, Value};
use shardkit_counters::MAX_TXID_LEN;
use shardkit_links::{
    CIDR_PATTERN, COUNTRY_PATTERN, LANGUAGE_PATTERN, MAX_ALIAS_LEN, MAX_LANGUAGE_LEN,
    MAX_QUERY_PARAMS, MAX_QUERY_TEXT, MAX_RULES, MAX_TAGS, MAX_URL_CHARS, URL_PATTERN,
};
use shardkit_node::state::MAX_BATCH;

/// Longest counter or column name, bytes (the counter engine's rule).
const MAX_NAME_LEN: usize = 200;
/// Longest counter row key, bytes (the counter engine's rule).
const MAX_KEY_LEN: usize = 1024;
/// Counter and column names: no `:` (it separates the parts of RESP keys), no
/// whitespace, no control characters.
const NAME_PATTERN: &str = r"^[^:\s\x00-\x1f\x7f-\x9f]+$";
/// Ticket sequence names.
const TICKET_NAME_PATTERN: &str = r"^[A-Za-z0-9_.:-]{1,64}$";
/// Tags.
const TAG_PATTERN: &str = r"^[A-Za-z0-9_.:-]{1,64}$";
/// Aliases: letters, digits, `-` and `_`; from 7 characters on one of `-` `_` is
/// required, so no alias has the shape of a generated code.
const ALIAS_PATTERN: &str = r"^([A-Za-z0-9_-]{1,6}|[A-Za-z0-9_-]*[-_][A-Za-z0-9_-]*)$";
/// A bulk CSV body starts with its header: `url`, then any of the other columns.
const CSV_PATTERN: &str = r"^url(,(alias|expires_at|max_visits|redirect|tags))*(\r?\n|$)";
/// Expiry instants: RFC 3339 in UTC (`Z`). The server takes any instant in
/// the future; a schema cannot say "after now", so the pattern names a range that
/// always is (years 2100 to 9999, days 1 to 28).
const FUTURE_TIME_PATTERN: &str = r"^(2[1-9]|[3-9][0-9])[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?Z$";
/// A UTC day as the stats read it (days 1 to 28, so every match is a real day).
const DAY_PATTERN: &str = r"^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$";
/// A decimal id as `GET /api/ids/{id}` reads it.
const ID_PATTERN: &str = r"^[0-9]{1,19}$";

/// Adds the rules to the generated document; `shards` is the layout's shard count.
/// Answers the rules that found no place (a renamed field, say): empty when the
/// document and this file agree, which a unit test checks.
pub fn apply(doc: &mut Value, shards: u64) -> Vec<String> {
    let mut missing = Vec::new();
    shared_answers(doc);
    for (path, method, name, rules) in parameter_rules(shards) {
        if !merge(parameter_schema(doc, path, method, name), &rules) {
            missing.push(format!("{method} {path} parameter {name}"));
        }
    }
    for (schema, property, rules) in property_rules() {
        let target = doc.pointer_mut(&format!(
            "/components/schemas/{schema}/properties/{property}"
        ));
        if !merge(target, &rules) {
            missing.push(format!("{schema}.{property}"));
        }
    }
    if !bulk_body(doc) {
        missing.push("POST /api/links/bulk request body".to_string());
    }
    if !unlock_body(doc) {
        missing.push("POST /{code} request body".to_string());
    }
    missing
}

/// `{"error": …}` with a description.
fn error_answer(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

/// The methods an OpenAPI path item can hold.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// 401 on every write, 400/413/415 on every JSON body, 429 on the limited creations.
fn shared_answers(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let json_body = operation
                .pointer("/requestBody/content/application~1json")
                .is_some();
            let Some(responses) = operation
                .get_mut("responses")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let mut add = |status: &str, description: &str| {
                responses
                    .entry(status)
                    .or_insert_with(|| error_answer(description));
            };
            if method != "get" && method != "head" {
                add(
                    "401",
                    "The server has an API key and the request did not send it as `Authorization: Bearer <key>`",
                );
            }
            if json_body {
                add("400", "The body is not JSON of the documented shape");
                add("413", "The body is larger than 2 MiB");
                add(
                    "415",
                    "The body is not sent as `Content-Type: application/json`",
                );
            }
            if method == "post" && (path == "/api/links" || path == "/api/links/bulk") {
                add(
                    "429",
                    "Too many creations from this client address (`[links] create_per_second`, `create_burst`)",
                );
            }
            if path == "/api/links/bulk" && method == "post" {
                add("413", "The body is larger than 64 MiB: split the file");
            }
        }
    }
}

/// The schema of one parameter of one operation.
fn parameter_schema<'a>(
    doc: &'a mut Value,
    path: &str,
    method: &str,
    name: &str,
) -> Option<&'a mut Value> {
    let pointer = format!("/paths/{}/{method}/parameters", path.replace('/', "~1"));
    doc.pointer_mut(&pointer)?
        .as_array_mut()?
        .iter_mut()
        .find(|p| p["name"] == name)?
        .get_mut("schema")
}

/// Copies every key of `rules` into `target`; false when there is no target.
fn merge(target: Option<&mut Value>, rules: &Value) -> bool {
    match (target.and_then(Value::as_object_mut), rules.as_object()) {
        (Some(target), Some(rules)) => {
            for (key, value) in rules {
                target.insert(key.clone(), value.clone());
            }
            true
        }
        _ => false,
    }
}

/// Counter and column names.
fn name_rules() -> Value {
    json!({"minLength": 1, "maxLength": MAX_NAME_LEN, "pattern": NAME_PATTERN})
}

/// Rules of query and path parameters: (path, method, parameter, schema keywords).
fn parameter_rules(shards: u64) -> Vec<(&'static str, &'static str, &'static str, Value)> {
    let count = json!({"minimum": 1, "maximum": MAX_BATCH});
    let key = json!({"minLength": 1, "maxLength": MAX_KEY_LEN});
    let day = json!({"pattern": DAY_PATTERN});
    vec![
        ("/api/ids", "post", "count", count.clone()),
        (
            "/api/ids",
            "post",
            "shard",
            json!({"minimum": 0, "maximum": shards.saturating_sub(1)}),
        ),
        (
            "/api/ids",
            "post",
            "key",
            json!({"type": "integer", "format": "uint64", "minimum": 0, "maximum": u64::MAX}),
        ),
        ("/api/ids/{id}", "get", "id", json!({"pattern": ID_PATTERN})),
        ("/api/tickets/{name}", "post", "count", count),
        (
            "/api/tickets/{name}",
            "post",
            "name",
            json!({"pattern": TICKET_NAME_PATTERN}),
        ),
        (
            "/api/counters/{counter}/{key}",
            "get",
            "counter",
            name_rules(),
        ),
        ("/api/counters/{counter}/{key}", "get", "key", key.clone()),
        (
            "/api/counters/{counter}/{key}/incr",
            "post",
            "counter",
            name_rules(),
        ),
        ("/api/counters/{counter}/{key}/incr", "post", "key", key),
        (
            "/api/counters/{counter}/mget",
            "post",
            "counter",
            name_rules(),
        ),
        (
            "/api/links",
            "get",
            "limit",
            json!({"minimum": 1, "maximum": MAX_PAGE}),
        ),
        (
            "/api/links",
            "get",
            "cursor",
            json!({"pattern": r"^[0-9]{0,19}$"}),
        ),
        (
            "/api/links/export",
            "get",
            "format",
            json!({"enum": ["jsonl", "csv", null]}),
        ),
        (
            "/api/links/{code}/stats",
            "get",
            "by",
            json!({"enum": ["referrer", "browser", "os", "device", "country", "day", null]}),
        ),
        ("/api/links/{code}/stats", "get", "from", day.clone()),
        ("/api/links/{code}/stats", "get", "to", day.clone()),
        (
            "/api/stats/top",
            "get",
            "by",
            json!({"enum": ["links", "referrer", "browser", "os", "device", "country", null]}),
        ),
        ("/api/stats/top", "get", "from", day.clone()),
        ("/api/stats/top", "get", "to", day),
        (
            "/api/stats/top",
            "get",
            "limit",
            json!({"minimum": 1, "maximum": super::stats::MAX_TOP}),
        ),
    ]
}

/// Rules of body fields: (schema, property, schema keywords).
fn property_rules() -> Vec<(&'static str, &'static str, Value)> {
    // Link targets: the link crate's rule, which the server enforces as written.
    let url = json!({"minLength": 1, "maxLength": MAX_URL_CHARS, "pattern": URL_PATTERN});
    let max_visits = json!({"format": "uint64", "minimum": 1, "maximum": u64::MAX});
    let expires_at = json!({"pattern": FUTURE_TIME_PATTERN});
    let redirect = json!({"enum": [301, 302, 307, 308, null]});
    let tags = json!({"maxItems": MAX_TAGS, "items": {"type": "string", "pattern": TAG_PATTERN}});
    let rules = rules_schema(&url);
    vec![
        ("IncrBody", "column", name_rules()),
        (
            "IncrBody",
            "txid",
            json!({"minLength": 1, "maxLength": MAX_TXID_LEN}),
        ),
        (
            "MgetBody",
            "keys",
            json!({"maxItems": MAX_MGET_KEYS, "items": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LEN}}),
        ),
        ("NewLink", "url", url.clone()),
        (
            "NewLink",
            "alias",
            json!({"minLength": 1, "maxLength": MAX_ALIAS_LEN, "pattern": ALIAS_PATTERN}),
        ),
        ("NewLink", "expires_at", expires_at.clone()),
        ("NewLink", "max_visits", max_visits.clone()),
        ("NewLink", "redirect", redirect.clone()),
        ("NewLink", "tags", tags.clone()),
        ("NewLink", "rules", rules.clone()),
        ("LinkPatch", "url", url),
        ("LinkPatch", "expires_at", expires_at),
        ("LinkPatch", "max_visits", max_visits),
        ("LinkPatch", "redirect", redirect),
        ("LinkPatch", "tags", tags),
        ("LinkPatch", "rules", rules),
    ]
}

/// Redirect rules: each exactly one condition beside its `url` (a link's URL rule).
fn rules_schema(url: &Value) -> Value {
    let url = {
        let mut url = url.clone();
        url["type"] = json!("string");
        url
    };
    let rule = |condition: &str, schema: Value| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": [condition, "url"],
            "properties": {condition: schema, "url": url},
        })
    };
    json!({
        "maxItems": MAX_RULES,
        "items": {"oneOf": [
            rule("device", json!({"type": "string", "enum": ["ios", "android", "desktop"]})),
            rule("language", json!({"type": "string", "maxLength": MAX_LANGUAGE_LEN, "pattern": LANGUAGE_PATTERN})),
            rule("country", json!({"type": "string", "pattern": COUNTRY_PATTERN})),
            rule("query", json!({
                "type": "object",
                "minProperties": 1,
                "maxProperties": MAX_QUERY_PARAMS,
                "propertyNames": {"minLength": 1, "maxLength": MAX_QUERY_TEXT},
                "additionalProperties": {"oneOf": [
                    {"const": true},
                    {"type": "string", "maxLength": MAX_QUERY_TEXT},
                ]},
            })),
            rule("cidr", json!({"type": "string", "pattern": CIDR_PATTERN})),
        ]},
    })
}

/// The bulk body: JSON lines (also without a content type) or CSV, never empty.
fn bulk_body(doc: &mut Value) -> bool {
    let Some(body) = doc.pointer_mut("/paths/~1api~1links~1bulk/post/requestBody") else {
        return false;
    };
    body["required"] = json!(true);
    body["content"] = json!({
        "application/x-ndjson": {"schema": {"type": "string", "minLength": 1}},
        "text/csv": {"schema": {"type": "string", "pattern": CSV_PATTERN}},
    });
    true
}

/// The password form of `POST /{code}`: the form, or no body at all. An empty body is
/// also what an empty string is on the wire, so `""` is stated as the empty form it is
/// (a client that sends it has sent no field, which a link without a password takes).
fn unlock_body(doc: &mut Value) -> bool {
    let Some(schema) = doc.pointer_mut(
        "/paths/~1{code}/post/requestBody/content/application~1x-www-form-urlencoded/schema",
    ) else {
        return false;
    };
    *schema = json!({"oneOf": [
        {"type": "null"},
        {"type": "string", "maxLength": 0},
        {"$ref": "#/components/schemas/PasswordForm"},
    ]});
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_finds_its_place_in_the_document() {
        let mut doc =
            serde_json::to_value(<super::super::openapi::ApiDoc as utoipa::OpenApi>::openapi())
                .unwrap();
        assert_eq!(apply(&mut doc, 8192), Vec::<String>::new());
        assert_eq!(
            doc.pointer("/paths/~1api~1ids/post/parameters/1/schema/maximum"),
            Some(&json!(8191))
        );
        assert!(doc
            .pointer("/paths/~1api~1links~1{code}/patch/responses/415")
            .is_some());
        assert!(doc
            .pointer("/paths/~1api~1links/post/responses/429")
            .is_some());
    }
}
