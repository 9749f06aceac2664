//! Redis's glob patterns (`SCAN … MATCH`, `CONFIG GET`): `*` any run of bytes, `?` one
//! byte, `[abc]`, `[a-z]`, `[^a]` a set, `\x` the byte `x`.
//!
//! Hand-written because Redis's dialect is what clients send and none of the glob
//! crates speaks it exactly (`^` negation, byte strings, backslash escapes).

/// Whether `text` matches `pattern`, byte for byte (`nocase` folds ASCII case).
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: (pattern after it, text it covers up to).
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let step = match pattern.get(p) {
            Some(b'*') => {
                while pattern.get(p) == Some(&b'*') {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
                star = Some((p, t));
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => set_match(pattern, p + 1, text[t], nocase),
            Some(b'\\') if p + 1 < pattern.len() => eq(pattern[p + 1], text[t]).then_some(p + 2),
            Some(&c) => eq(c, text[t]).then_some(p + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                p = next;
                t += 1;
            }
            (None, Some((after, covered))) => {
                p = after;
                t = covered + 1;
                star = Some((after, covered + 1));
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the set starting at `start` (just after `[`); the position
/// after the closing `]` if it matches.
fn set_match(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<usize> {
    let eq = |a: u8, b: u8| a == b || nocase && a.eq_ignore_ascii_case(&b);
    let mut i = start;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut found = false;
    while i < pattern.len() && pattern[i] != b']' {
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            found |= eq(pattern[i + 1], c);
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (lo, hi) = (
                pattern[i].min(pattern[i + 2]),
                pattern[i].max(pattern[i + 2]),
            );
            let in_range = |x: u8| (lo..=hi).contains(&x);
            found |= in_range(c)
                || nocase && (in_range(c.to_ascii_lowercase()) || in_range(c.to_ascii_uppercase()));
            i += 3;
        } else {
            found |= eq(pattern[i], c);
            i += 1;
        }
    }
    // An unclosed set runs to the end of the pattern, as in Redis.
    let after = (i + 1).min(pattern.len());
    (found != negate).then_some(after)
}

/// The literal bytes every match starts with (up to the first special byte), so a
/// `SCAN` can skip counters whose names cannot match.
pub fn literal_prefix(pattern: &[u8]) -> &[u8] {
    let end = pattern
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_cases() {
        let yes: &[(&[u8], &[u8])] = &[
            (b"*", b""),
            (b"*", b"anything"),
            (b"likes:*", b"likes:42"),
            (b"h?llo", b"hello"),
            (b"h*llo", b"heeeello"),
            (b"h[ae]llo", b"hallo"),
            (b"h[^e]llo", b"hallo"),
            (b"h[a-b]llo", b"hbllo"),
            (b"a\\*b", b"a*b"),
            (b"*:1?", b"weibo:12"),
            (b"a*b*c", b"axxbyyc"),
        ];
        for (p, t) in yes {
            assert!(matches(p, t, false), "{p:?} {t:?}");
        }
        let no: &[(&[u8], &[u8])] = &[
            (b"likes:*", b"like:42"),
            (b"h?llo", b"hllo"),
            (b"h[^e]llo", b"hello"),
            (b"h[a-b]llo", b"hcllo"),
            (b"a\\*b", b"axb"),
            (b"a*b*c", b"axxbyy"),
            (b"", b"x"),
        ];
        for (p, t) in no {
            assert!(!matches(p, t, false), "{p:?} {t:?}");
        }
        assert!(matches(b"APPEND*", b"appendonly", true));
    }

    #[test]
    fn prefix_stops_at_the_first_special_byte() {
        assert_eq!(literal_prefix(b"weibo:*"), b"weibo:");
        assert_eq!(literal_prefix(b"w?ibo"), b"w");
        assert_eq!(literal_prefix(b"plain"), b"plain");
    }
}
