//! `shardkit serve --print-config --all`: every key of the settings file with its value
//! in effect (the default when nothing set it) and, above it, the doc comment of the
//! field that holds it and the flag and environment variable that set it. The field
//! docs are read from the code (`documented`), so `docs/config.md`, which is this
//! output, cannot drift from what the server reads: a test compares them.

use crate::config::Settings;
use crate::http_settings::HttpSettings;
use crate::resp_settings::RespSettings;
use documented::DocumentedFields;
use serde::Serialize;
use toml::{Table, Value};

/// A key that a flag or an environment variable also sets (over the file).
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// The key, `section.key` (`data` for a top-level one).
    pub key: &'static str,
    /// The `serve` flag, if there is one.
    pub flag: Option<&'static str>,
    /// The environment variable.
    pub env: &'static str,
}

/// Every key a flag or an environment variable sets, as `Settings::read` applies them.
pub const SOURCES: &[Source] = &[
    source("data", Some("--data"), "SHARDKIT_DATA"),
    source("http.listen", Some("--http"), "SHARDKIT_HTTP"),
    source("resp.listen", Some("--resp"), "SHARDKIT_RESP"),
    source("api_key", None, "SHARDKIT_API_KEY"),
    source("log_format", Some("--log-format"), "SHARDKIT_LOG_FORMAT"),
    source("links.store", Some("--store"), "SHARDKIT_STORE"),
    source("links.servers", Some("--servers"), "SHARDKIT_PG_SERVERS"),
    source(
        "counters.log",
        Some("--counters-log"),
        "SHARDKIT_COUNTERS_LOG",
    ),
    source(
        "counters.store",
        Some("--counters-store"),
        "SHARDKIT_COUNTERS_STORE",
    ),
    source(
        "counters.role",
        Some("--counters-role"),
        "SHARDKIT_COUNTERS_ROLE",
    ),
    source(
        "counters.lease_ms",
        Some("--counters-lease-ms"),
        "SHARDKIT_COUNTERS_LEASE_MS",
    ),
    source(
        "counters.stream_replicas",
        Some("--counters-stream-replicas"),
        "SHARDKIT_COUNTERS_STREAM_REPLICAS",
    ),
    source(
        "counters.snapshots_kept",
        Some("--counters-snapshots-kept"),
        "SHARDKIT_COUNTERS_SNAPSHOTS_KEPT",
    ),
    source(
        "counters.announce",
        Some("--counters-announce"),
        "SHARDKIT_COUNTERS_ANNOUNCE",
    ),
    source("nats.url", Some("--nats-url"), "SHARDKIT_NATS_URL"),
    source("nats.creds", None, "SHARDKIT_NATS_CREDS"),
    source("nats.user", None, "SHARDKIT_NATS_USER"),
    source("nats.password", None, "SHARDKIT_NATS_PASSWORD"),
    source("nats.token", None, "SHARDKIT_NATS_TOKEN"),
];

const fn source(key: &'static str, flag: Option<&'static str>, env: &'static str) -> Source {
    Source { key, flag, env }
}

/// One table of the file: its name, its struct's field names and docs, and its values.
struct Section {
    name: &'static str,
    fields: &'static [&'static str],
    docs: &'static [&'static str],
    values: Table,
    /// Not in the file unless written (`[regions]`): shown commented out.
    optional: bool,
}

impl Section {
    fn of<T: DocumentedFields + Serialize>(name: &'static str, value: &T) -> Self {
        Self::with_values::<T>(name, table(value))
    }

    fn with_values<T: DocumentedFields>(name: &'static str, values: Table) -> Self {
        Self {
            name,
            fields: T::FIELD_NAMES,
            docs: T::FIELD_DOCS,
            values,
            optional: false,
        }
    }
}

/// `value` as a TOML table (empty if it is not one).
fn table<T: Serialize>(value: &T) -> Table {
    match Value::try_from(value) {
        Ok(Value::Table(t)) => t,
        _ => Table::new(),
    }
}

/// `[http]` in its table form, whichever form the file used.
fn http_table(http: &HttpSettings) -> Table {
    let mut t = Table::new();
    t.insert("listen".into(), Value::String(http.listen.to_string()));
    t.insert(
        "trusted_proxies".into(),
        Value::Array(
            http.trusted_proxies
                .iter()
                .map(|n| Value::String(n.to_string()))
                .collect(),
        ),
    );
    for (key, path) in [("tls_cert", &http.tls_cert), ("tls_key", &http.tls_key)] {
        if let Some(path) = path {
            t.insert(key.into(), Value::String(path.display().to_string()));
        }
    }
    t
}

/// `[resp]` in its table form, whichever form the file used.
fn resp_table(resp: &RespSettings) -> Table {
    let mut t = Table::new();
    for (key, addr) in [("listen", resp.listen), ("tls", resp.tls)] {
        if let Some(addr) = addr {
            t.insert(key.into(), Value::String(addr.to_string()));
        }
    }
    for (key, path) in [
        ("tls_cert", &resp.tls_cert),
        ("tls_key", &resp.tls_key),
        ("tls_ca", &resp.tls_ca),
    ] {
        if let Some(path) = path {
            t.insert(key.into(), Value::String(path.display().to_string()));
        }
    }
    t
}

/// The annotated TOML of `settings` (secrets shown as `<set>`).
pub fn annotated(settings: &Settings) -> anyhow::Result<String> {
    let shown: Settings =
        toml::from_str(&settings.to_toml_redacted()?).unwrap_or_else(|_| settings.clone());
    let regions = shown.regions.clone();
    let mut sections = vec![
        Section::of("", &shown),
        Section::with_values::<HttpSettings>("http", http_table(&shown.http)),
        Section::with_values::<RespSettings>("resp", resp_table(&shown.resp)),
        Section::of("ids", &shown.ids),
        Section::of("tickets", &shown.tickets),
        Section::of("resp_limits", &shown.resp_limits),
        Section::of("counters", &shown.counters),
        Section::of("links", &shown.links),
        Section::of("nats", &shown.nats),
        Section::of("access", &shown.access),
        Section::of("cluster", &shown.cluster),
    ];
    let mut region_section = Section::of("regions", &regions.clone().unwrap_or_default());
    region_section.optional = regions.is_none();
    sections.push(region_section);
    let tables: Vec<&str> = sections.iter().map(|s| s.name).collect();
    let mut out = String::from(
        "# Every key of the settings file (`shardkit serve --config FILE`), with the value in\n\
         # effect: the default where nothing set it. Printed by `shardkit serve\n\
         # --print-config --all`. A key shown as `# key = …` is unset. A flag beats its\n\
         # environment variable, which beats the file, which beats the default.\n",
    );
    for section in &sections {
        write_section(&mut out, section, &tables);
    }
    Ok(out)
}

fn write_section(out: &mut String, section: &Section, tables: &[&str]) {
    let off = if section.optional { "# " } else { "" };
    if !section.name.is_empty() {
        out.push('\n');
        if section.optional {
            out.push_str(&format!(
                "# [{}] is absent unless written; with it, these are its keys.\n",
                section.name
            ));
        }
        out.push_str(&format!("{off}[{}]\n", section.name));
    }
    for (field, doc) in section.fields.iter().zip(section.docs) {
        // The top level's tables are sections of their own.
        if section.name.is_empty() && tables.contains(field) {
            continue;
        }
        out.push('\n');
        for line in doc.lines() {
            out.push_str(format!("# {line}").trim_end());
            out.push('\n');
        }
        let key = if section.name.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", section.name)
        };
        if let Some(source) = SOURCES.iter().find(|s| s.key == key) {
            let flag = source.flag.map(|f| format!("{f}, ")).unwrap_or_default();
            out.push_str(&format!("# Also: {flag}{}.\n", source.env));
        }
        match section.values.get(*field) {
            Some(value) => out.push_str(&format!("{off}{field} = {}\n", inline(value))),
            None => out.push_str(&format!("# {field} = …\n")),
        }
    }
}

/// A value on one line, as TOML writes it inline.
fn inline(value: &Value) -> String {
    match value {
        Value::Table(t) => {
            let parts: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted_key(k), inline(v)))
                .collect();
            if parts.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", parts.join(", "))
            }
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(inline).collect::<Vec<_>>().join(", ")
            )
        }
        other => other.to_string(),
    }
}

/// A table key, quoted when it is not a bare TOML key.
fn quoted_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_read_back_and_every_key_is_there() {
        let text = annotated(&Settings::default()).unwrap();
        let read: Settings = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(read, Settings::default(), "{text}");
        for key in [
            "data = ",
            "listen = ",
            "fsync = ",
            "# tls_cert = …",
            "# [regions]",
        ] {
            assert!(text.contains(key), "{key} missing:\n{text}");
        }
        assert!(text.contains("# Also: --counters-log, SHARDKIT_COUNTERS_LOG."));
    }

    #[test]
    fn every_source_names_a_key_that_exists() {
        let text = annotated(&Settings::default()).unwrap();
        for source in SOURCES {
            assert!(
                text.contains(&format!(
                    "# Also: {}",
                    source
                        .flag
                        .map_or(source.env.to_string(), |f| format!("{f}, {}", source.env))
                )),
                "{} is shown under no key",
                source.key
            );
        }
    }

    #[test]
    fn secrets_are_shown_as_set() {
        let settings = Settings {
            api_key: Some("a-very-secret-key-0123".into()),
            ..Settings::default()
        };
        let text = annotated(&settings).unwrap();
        assert!(!text.contains("a-very-secret-key-0123"), "{text}");
    }
}
