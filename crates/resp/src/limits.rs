//! Bounds on what a client may announce, checked before anything is allocated.

/// Size limits of the protocol. A client over one gets an error reply; where the frame
/// boundary is then unknown the connection is closed (as Redis does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (Redis: `proto-max-bulk-len`, 512 MB; counters need far less).
    pub max_bulk_len: usize,
    /// Most arguments in one command (`MGET` with many keys).
    pub max_array_len: usize,
    /// Longest inline (telnet-style) command line.
    pub max_inline_len: usize,
    /// Most unparsed bytes a connection may hold while waiting for the rest of a command.
    pub max_buffer: usize,
}

impl Default for Limits {
    /// 16 MiB bulk strings, 1 Mi arguments, 64 KiB inline lines (as Redis), 64 MiB buffer.
    fn default() -> Self {
        Self {
            max_bulk_len: 16 << 20,
            max_array_len: 1 << 20,
            max_inline_len: 64 << 10,
            max_buffer: 64 << 20,
        }
    }
}
