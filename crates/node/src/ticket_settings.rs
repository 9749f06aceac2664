//! `[tickets]`: how this node numbers its ticket sequences (Flickr's ticket servers);
//! checked when the sequences open, against what the data directory holds.

use serde::{Deserialize, Serialize};

/// `[tickets]`: how this server's ticket sequences are numbered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct TicketSettings {
    /// Step between numbers (2 for Flickr's pair of servers).
    pub increment: u64,
    /// First number, 1 to `increment`.
    pub offset: u64,
    /// First block size of each sequence.
    pub initial_step: u64,
}

impl Default for TicketSettings {
    fn default() -> Self {
        Self {
            increment: 1,
            offset: 1,
            initial_step: 1_000,
        }
    }
}
