//! Config file errors that name where the mistake is: the line and the setting
//! (`[links] create_per_second`), taken from the span the TOML parser gives, instead
//! of the bare "invalid type: string \"lots\", expected u32".

use std::path::Path;

/// The setting written on the line that holds byte `at` of `text`: `table.key` from the
/// nearest `[table]` header above and the text before `=`, or `None` when that line
/// sets nothing (a header, a value spread over lines).
fn setting_at(text: &str, at: usize) -> Option<String> {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = text[start..].lines().next().unwrap_or("");
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('[') || key.starts_with('#') {
        return None;
    }
    let table = text[..start].lines().rev().find_map(|l| {
        let l = l.trim();
        (l.starts_with('[') && !l.starts_with("[[")).then(|| l.trim_matches(['[', ']']).trim())
    });
    Some(match table {
        Some(table) if !table.is_empty() => format!("{table}.{key}"),
        _ => key.to_string(),
    })
}

/// `config file PATH, line N (setting KEY): what is wrong`, from a parse error of `text`.
pub fn describe(path: &Path, text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    let Some(span) = error.span().filter(|s| s.start <= text.len()) else {
        return format!("config file {}: {message}", path.display());
    };
    let line = text[..span.start].matches('\n').count() + 1;
    match setting_at(text, span.start) {
        Some(key) => format!(
            "config file {}, line {line} (setting {key}): {message}",
            path.display()
        ),
        None => format!("config file {}, line {line}: {message}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_table_key_and_line() {
        let text = "data = \"x\"\n\n[links]\n# rate\ncreate_per_second = \"lots\"\n";
        let at = text.find("\"lots\"").unwrap();
        assert_eq!(
            setting_at(text, at).as_deref(),
            Some("links.create_per_second")
        );
        assert_eq!(setting_at(text, 0).as_deref(), Some("data"));
        assert_eq!(setting_at(text, text.find("[links]").unwrap()), None);
    }
}
