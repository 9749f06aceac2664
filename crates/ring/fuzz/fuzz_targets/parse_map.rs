//! Fuzzes the shard-map parsers (TOML and JSON): any input must give a map or a named
//! error, never a panic; a map that parses must render and parse back to itself, and a
//! plan on it must apply.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardkit_ring::{Format, NodeSpec, Plan, ShardMap};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [Format::Toml, Format::Json] {
        if let Ok(map) = ShardMap::parse(text, format) {
            let rendered = map.render(format).expect("a valid map renders");
            assert_eq!(ShardMap::parse(&rendered, format).as_ref(), Ok(&map));
            if let Ok(plan) = Plan::add(&map, NodeSpec::new("fuzz-new-node")) {
                plan.apply(&map).expect("a fresh plan applies");
            }
        }
    }
});
