//! Where a command's keys are among its arguments, as Redis's key specs say it: the
//! first key, the last key, the step. Cluster routing reads it to find a command's slot.

/// A command's key positions (argument 0 is the name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// Position of the first key argument (0: the command takes no key).
    pub first: i32,
    /// Position of the last key (negative: counted from the end, -1 the last argument).
    pub last: i32,
    /// Distance between keys (2 for `MSET k v k v`).
    pub step: i32,
}

impl KeySpec {
    /// A command without keys (`PING`).
    pub const NONE: KeySpec = KeySpec {
        first: 0,
        last: 0,
        step: 0,
    };
    /// A command whose one key is its first argument (`GET k`).
    pub const FIRST: KeySpec = KeySpec {
        first: 1,
        last: 1,
        step: 1,
    };
}

/// The keys of `args` under `spec`.
pub fn keys<'a>(spec: KeySpec, args: &'a [&'a [u8]]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let n = args.len() as i64;
    let first = i64::from(spec.first);
    let last = match i64::from(spec.last) {
        l if l < 0 => n + l,
        l => l,
    };
    let step = i64::from(spec.step).max(1);
    let range = if first <= 0 {
        0..0
    } else {
        first..(last.min(n - 1) + 1).max(first)
    };
    range.step_by(step as usize).map(move |i| args[i as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<&[u8]> {
        line.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn positions_step_and_count_from_the_end_as_redis_key_specs_do() {
        let every_other = KeySpec {
            first: 1,
            last: -1,
            step: 2,
        };
        let a = args("MSET a 1 b 2");
        assert_eq!(keys(every_other, &a).collect::<Vec<_>>(), [&b"a"[..], b"b"]);
        let all = KeySpec {
            first: 1,
            last: -1,
            step: 1,
        };
        assert_eq!(keys(all, &args("MGET a b c")).count(), 3);
        assert_eq!(keys(KeySpec::NONE, &args("PING")).count(), 0);
        assert_eq!(
            keys(KeySpec::FIRST, &args("GET k")).collect::<Vec<_>>(),
            [&b"k"[..]]
        );
        // A key position past the arguments gives no key rather than a panic.
        assert_eq!(keys(KeySpec::FIRST, &args("GET")).count(), 0);
    }
}
