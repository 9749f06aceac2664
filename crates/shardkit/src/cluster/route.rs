//! Where a command goes in a cluster, decided from its keys as Redis's `getNodeByQuery`
//! decides it: the command table's key positions give the keys; keys in more than one
//! slot are refused; a slot served elsewhere is answered with `-MOVED`; a slot nobody
//! serves with `-CLUSTERDOWN`.

use super::map::SlotMap;
use super::slot::key_slot;
use crate::resp::table::CommandSpec;

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

/// The keys of `args` (argument 0 is the name) by the spec's first key, last key and
/// step (a negative last key counts from the end, as in Redis's key specs).
pub fn keys<'a>(spec: &CommandSpec, args: &'a [&'a [u8]]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let n = args.len() as i64;
    let first = i64::from(spec.first_key);
    let last = match i64::from(spec.last_key) {
        l if l < 0 => n + l,
        l => l,
    };
    let step = i64::from(spec.key_step).max(1);
    let range = if first <= 0 {
        0..0
    } else {
        first..(last.min(n - 1) + 1).max(first)
    };
    range.step_by(step as usize).map(move |i| args[i as usize])
}

/// Decides where `args` go, for node `me` under `map`.
pub fn route(spec: &CommandSpec, args: &[&[u8]], map: &SlotMap, me: &str) -> Route {
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
    use crate::resp::table::lookup;

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
        let spec = lookup(args[0]).unwrap();
        route(spec, &args, &map(), &format!("{me:040}"))
    }

    #[test]
    fn keys_follow_the_command_tables_positions() {
        let args: Vec<&[u8]> = ["MSET", "a", "1", "b", "2"].map(str::as_bytes).to_vec();
        let got: Vec<&[u8]> = keys(lookup(b"mset").unwrap(), &args).collect();
        assert_eq!(got, [&b"a"[..], b"b"]);
        let args: Vec<&[u8]> = ["MGET", "a", "b", "c"].map(str::as_bytes).to_vec();
        assert_eq!(keys(lookup(b"mget").unwrap(), &args).count(), 3);
        let args: Vec<&[u8]> = ["PING"].map(str::as_bytes).to_vec();
        assert_eq!(keys(lookup(b"ping").unwrap(), &args).count(), 0);
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
            route(lookup(b"get").unwrap(), &args, &gap, "x"),
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
                    route(lookup(b"get").unwrap(), &args, &m, &me),
                    "{key}"
                );
            }
        }
    }
}
