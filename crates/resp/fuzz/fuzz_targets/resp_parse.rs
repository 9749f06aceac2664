//! Fuzzes the RESP parser the way a connection drives it: every complete command is
//! taken, errors with a known boundary are skipped, a fatal one ends the stream.
//! Run: `cd crates/resp/fuzz && cargo fuzz run resp_parse -- -max_total_time=60`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardkit_resp::parse::Parsed;
use shardkit_resp::{Limits, Parser};

fuzz_target!(|data: &[u8]| {
    let mut parser = Parser::new(Limits {
        max_bulk_len: 1024,
        max_array_len: 64,
        max_inline_len: 1024,
        max_buffer: 1 << 16,
    });
    let mut at = 0;
    while at < data.len() {
        let used = match parser.parse(&data[at..]) {
            Ok(Parsed::Command(cmd, used)) => {
                assert!(!cmd.is_empty());
                used
            }
            Ok(Parsed::Skip(used)) => used,
            Ok(Parsed::Incomplete) => break,
            Err(e) => match e.skip {
                Some(n) => n,
                None => break,
            },
        };
        assert!(used > 0 && at + used <= data.len());
        at += used;
    }
});
