//! `[ids]`: the layout and clock policies of the node's id generator.

use serde::{Deserialize, Serialize};

/// `[ids]`: the layout and clock policies of the server's id generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct IdSettings {
    /// `instagram`, `snowflake`, `sonyflake`, `sonyflake-legacy` or `T/S/Q@Nms`.
    pub layout: String,
    /// RFC 3339 epoch; the layout's default (2024-01-01T00:00:00Z) when absent.
    pub epoch: Option<String>,
    /// How far ids may run ahead of the wall clock, in ms.
    pub max_lead_ms: u64,
    /// `refuse` or `wait` when the clock steps back further than that.
    pub on_clock_backwards: String,
}

impl Default for IdSettings {
    fn default() -> Self {
        Self {
            layout: "instagram".into(),
            epoch: None,
            max_lead_ms: 2_000,
            on_clock_backwards: "refuse".into(),
        }
    }
}

impl IdSettings {
    /// Refuses a clock policy the generator does not have. (The layout and epoch are
    /// checked where they are parsed, at start, against the data directory's record.)
    pub fn check(&self) -> anyhow::Result<()> {
        if !matches!(self.on_clock_backwards.as_str(), "refuse" | "wait") {
            anyhow::bail!(
                "ids.on_clock_backwards must be \"refuse\" or \"wait\", got {:?}",
                self.on_clock_backwards
            );
        }
        Ok(())
    }
}
