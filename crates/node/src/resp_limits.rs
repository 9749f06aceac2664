//! `[resp_limits]`: the sizes a Redis client may announce, as the RESP frontend's
//! parser takes them.

use serde::{Deserialize, Serialize};

/// `[resp_limits]`: sizes a Redis client may announce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct RespLimitSettings {
    /// Largest bulk string, bytes.
    pub max_bulk_len: usize,
    /// Most arguments in one command.
    pub max_array_len: usize,
    /// Most unparsed bytes held for one connection.
    pub max_buffer: usize,
}

impl Default for RespLimitSettings {
    fn default() -> Self {
        let limits = shardkit_resp::Limits::default();
        Self {
            max_bulk_len: limits.max_bulk_len,
            max_array_len: limits.max_array_len,
            max_buffer: limits.max_buffer,
        }
    }
}

impl RespLimitSettings {
    /// The parser's limits: these, the rest as the wire format's defaults.
    pub fn limits(&self) -> shardkit_resp::Limits {
        shardkit_resp::Limits {
            max_bulk_len: self.max_bulk_len,
            max_array_len: self.max_array_len,
            max_buffer: self.max_buffer,
            ..shardkit_resp::Limits::default()
        }
    }
}
