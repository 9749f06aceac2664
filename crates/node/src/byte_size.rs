//! Sizes written the way people write them in a settings file: `"2GiB"`, `"512MiB"`.
//!
//! Exists so memory settings (`[counters] max_memory`, `block_cache`) read like Redis's
//! `maxmemory 2gb` instead of a bare number whose unit one has to look up.

/// Parses `<whole number><unit>` with unit `B`, `KiB`, `MiB`, `GiB` or `TiB` (powers of
/// 1024; also `K`/`KB`, `M`/`MB`, `G`/`GB`, `T`/`TB`, taken as the same, as Redis does
/// for `gb`), case-insensitive, spaces allowed between. Returns the size in bytes, or
/// what is wrong in words.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(format!(
            "{text:?} is not a size: write a whole number and a unit, e.g. \"2GiB\" or \"512MiB\""
        ));
    }
    let n: u64 = t[..digits]
        .parse()
        .map_err(|_| format!("{text:?} is too large"))?;
    let unit = t[digits..].trim().to_ascii_lowercase();
    let shift = match unit.as_str() {
        "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "" => {
            return Err(format!(
                "{text:?} has no unit: write e.g. \"{n}MiB\" or \"{n}B\""
            ))
        }
        other => {
            return Err(format!(
                "{text:?} has unit {other:?}; use B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_the_usual_units_and_clear_refusals() {
        assert_eq!(parse_byte_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_byte_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_byte_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_byte_size("100B"), Ok(100));
        assert!(parse_byte_size("2").unwrap_err().contains("no unit"));
        assert!(parse_byte_size("GiB").unwrap_err().contains("not a size"));
        assert!(parse_byte_size("1.5GiB").unwrap_err().contains("unit"));
        assert!(parse_byte_size("2PiB").unwrap_err().contains("unit"));
        assert!(parse_byte_size("99999999999TiB")
            .unwrap_err()
            .contains("too large"));
    }
}
