//! `[access]`: routes the operator opens to callers without a key. The patterns are
//! the HTTP router's, so the HTTP frontend parses and enforces them.

use serde::{Deserialize, Serialize};

/// `[access]`: routes the operator opens to callers without a key.
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, documented::DocumentedFields,
)]
#[serde(default, deny_unknown_fields)]
pub struct AccessSettings {
    /// Routes open without a key even when keys are configured, as `"METHOD /path"`
    /// with the router's patterns (`"GET /api/links/{code}"`, `"GET /metrics"`); a
    /// pattern alone means GET.
    pub public: Vec<String>,
}
