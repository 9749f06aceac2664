//! Counts in words for people (`1 link`, `2 links`, `1 visit`): the CLI's summaries
//! and the web pages say them, and "1 links" reads as a bug.

/// `n` followed by `noun`, with an `s` unless `n` is 1 (every noun shardkit counts
/// takes a plain `s`).
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(super::plural(1, "link"), "1 link");
        assert_eq!(super::plural(0, "click"), "0 clicks");
        assert_eq!(super::plural(2, "visit"), "2 visits");
    }
}
