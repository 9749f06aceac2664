//! Where a command goes in a cluster, decided from its keys as Redis's `getNodeByQuery`
//! decides it: the command table's key positions give the keys; keys in more than one
//! slot are refused; a slot served elsewhere is answered with `-MOVED`; a slot nobody
//! serves with `-CLUSTERDOWN`.

use super::map::SlotMap;
use super::slot::key_slot;
use shardkit_resp::keys::{keys, KeySpec};

/// Redis's text for keys in several slots.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// Redis's text for a slot no node serves.
pub const CLUSTERDOWN: &str = "CLUSTERDOWN Hash slot not served";

/// What to do with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// It names no key: run it here.
    NoKeys,
    /// Every key is in `slot`, which this node serves: run it on that slot's group.
    Here {
        /// The slot of its keys.
        slot: u16,
    },
    /// Every key is in `slot`, which another node owns: `-MOVED` to it (or, for a read
    /// after `READONLY`, served by this node if it follows the slot's group).
    Moved {
        /// The slot of its keys.
        slot: u16,
        /// The error to answer, `MOVED <slot> <host>:<port>`.
        moved: String,
    },
    /// Refuse it with this error (without the leading `-`).
    Refuse(String),
}

/// Decides where `args` go, for node `me` under `map`.
pub fn route(spec: KeySpec, args: &[&[u8]], map: &SlotMap, me: &str) -> Route {
    let mut slot = None;
    for key in keys(spec, args) {
        let s = key_slot(key);
        match slot {
            None => slot = Some(s),
            Some(seen) if seen != s => return Route::Refuse(CROSSSLOT.into()),
            Some(_) => {}
        }
    }
    match slot {
        Some(slot) => route_slot(slot, map, me),
        None => Route::NoKeys,
    }
}

/// [`route`] for a command whose one key is `key` (`GET`, `INCR`, `HINCRBY`...):
/// a node's usual command, routed without walking the key positions.
pub fn route_key(key: &[u8], map: &SlotMap, me: &str) -> Route {
    route_slot(key_slot(key), map, me)
}

/// Where a command on slot `slot` goes, for node `me` under `map`.
fn route_slot(slot: u16, map: &SlotMap, me: &str) -> Route {
    // Served here is the common case: decided on the owner's id, no look-up of its
    // node (this node is the one named).
    if map.owner_id_of(slot) == Some(me) {
        return Route::Here { slot };
    }
    match map.owner_of(slot) {
        None => Route::Refuse(CLUSTERDOWN.into()),
        Some(node) => Route::Moved {
            slot,
            moved: format!("MOVED {slot} {}:{}", node.host, node.port),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::map::NodeInfo;

    /// The key positions of the commands these tests send, as the command table has them.
    fn spec_of(name: &[u8]) -> KeySpec {
        match name.to_ascii_lowercase().as_slice() {
            b"ping" => KeySpec::NONE,
            b"mget" => KeySpec {
                first: 1,
                last: -1,
                step: 1,
            },
            _ => KeySpec::FIRST,
        }
    }

    fn map() -> SlotMap {
        let node = |i: u8| NodeInfo {
            id: format!("{i:040}"),
            host: "127.0.0.1".into(),
            port: 7000 + u16::from(i),
            http: String::new(),
        };
        SlotMap::place(3, 64, &[node(1), node(2)], 1)
    }

    fn go(line: &str, me: u8) -> Route {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let spec = spec_of(args[0]);
        route(spec, &args, &map(), &format!("{me:040}"))
    }

    #[test]
    fn commands_run_here_move_or_are_refused_in_redis_words() {
        // The owners are read off the map rather than hard-coded.
        let m = map();
        let slot = key_slot(b"weibo:{123}:likes");
        let owner = m.owner_of(slot).unwrap();
        let here = if owner.port == 7001 { 1 } else { 2 };
        let elsewhere = 3 - here;
        assert_eq!(go("INCR weibo:{123}:likes", here), Route::Here { slot });
        assert_eq!(
            go("HINCRBY weibo:{123} likes 1", here),
            Route::Here { slot }
        );
        assert_eq!(
            go("INCR weibo:{123}:likes", elsewhere),
            Route::Moved {
                slot,
                moved: format!("MOVED {slot} 127.0.0.1:{}", owner.port)
            }
        );
        assert_eq!(
            go("MGET weibo:{123}:a weibo:{123}:b", here),
            Route::Here { slot }
        );
        assert_eq!(
            go("MGET weibo:{123}:a weibo:{124}:b", here),
            Route::Refuse(CROSSSLOT.into())
        );
        assert_eq!(go("PING", here), Route::NoKeys);
        let mut gap = m.clone();
        gap.owner = vec![None; 64];
        let args: Vec<&[u8]> = ["GET", "k"].map(str::as_bytes).to_vec();
        assert_eq!(
            route(spec_of(b"get"), &args, &gap, "x"),
            Route::Refuse(CLUSTERDOWN.into())
        );
    }

    #[test]
    fn a_one_key_command_routes_by_its_key_as_the_walk_of_its_keys_does() {
        let m = map();
        for key in [
            "weibo:{123}:likes",
            "weibo:123",
            "{}x",
            "a{b",
            "k{}{z}",
            "",
            "x{y}",
        ] {
            let args: Vec<&[u8]> = ["GET", key].map(str::as_bytes).to_vec();
            for me in [1u8, 2, 3] {
                let me = format!("{me:040}");
                assert_eq!(
                    route_key(key.as_bytes(), &m, &me),
                    route(spec_of(b"get"), &args, &m, &me),
                    "{key}"
                );
            }
        }
    }
}
