//! `[nats]`: how a node reaches NATS as operators run it — several servers to try, who
//! it is to them (a `.creds` file, an nkey seed, a user and password, or a token) and
//! the TLS it expects. Checked when the settings load, before anything is written, so a
//! wrong path or two ways of logging in is an error naming the setting.

use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};

/// What `--print-config` shows for a secret that is set.
pub const SECRET_SHOWN: &str = "<set>";

/// `[nats]`: the servers and the credentials the counters' JetStream log, the cluster's
/// buckets and the CLI's `cluster` commands connect with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, documented::DocumentedFields)]
#[serde(default, deny_unknown_fields)]
pub struct NatsSettings {
    /// Servers to try, as a TOML array or one comma-separated string
    /// (`SHARDKIT_NATS_URL`); the client moves to another when one is lost.
    #[serde(deserialize_with = "urls_from_string_or_list")]
    pub url: Vec<String>,
    /// A `.creds` file (user JWT and nkey seed), as `nsc` writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creds: Option<PathBuf>,
    /// A file holding an nkey seed (`SU…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nkey: Option<PathBuf>,
    /// User name, with `password` or `password_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The user's password (`SHARDKIT_NATS_PASSWORD`); never printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// A file holding the user's password (its first line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    /// A token (`SHARDKIT_NATS_TOKEN`); never printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A file holding the token (its first line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// PEM certificates of the CA that signed the servers' certificates; setting it
    /// requires TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<PathBuf>,
    /// This node's certificate (PEM) for servers that verify clients, with `tls_key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    /// The key of `tls_cert` (PEM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
}

impl Default for NatsSettings {
    fn default() -> Self {
        Self {
            url: vec!["nats://127.0.0.1:4222".into()],
            creds: None,
            nkey: None,
            user: None,
            password: None,
            password_file: None,
            token: None,
            token_file: None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
        }
    }
}

/// How the node proves who it is, resolved from the settings (files read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NatsAuth {
    /// No credentials: an open NATS.
    None,
    /// A `.creds` file.
    Creds(PathBuf),
    /// An nkey seed.
    Nkey(String),
    /// User and password.
    UserPassword(String, String),
    /// A token.
    Token(String),
}

/// Reads a list of server URLs from one comma-separated string, dropping blanks.
pub fn urls_from_text(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

fn urls_from_string_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(text) => urls_from_text(&text),
        OneOrMany::Many(list) => list.iter().flat_map(|u| urls_from_text(u)).collect(),
    })
}

impl NatsSettings {
    /// The servers for a `--nats` flag or an env var: comma-separated, nothing else set.
    pub fn servers(text: &str) -> Self {
        Self {
            url: urls_from_text(text),
            ..Self::default()
        }
    }

    /// The servers as one line for messages and logs.
    pub fn urls_text(&self) -> String {
        self.url.join(",")
    }

    /// Refuses what cannot work, naming the setting: no server, a URL that is not a
    /// NATS URL, two ways of logging in, half of a pair, a file that cannot be read.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.url.is_empty() {
            anyhow::bail!(
                "nats.url is empty: set it to the NATS server(s), e.g. nats://127.0.0.1:4222"
            );
        }
        for url in &self.url {
            check_url(url)?;
        }
        let ways: Vec<&str> = [
            ("nats.creds", self.creds.is_some()),
            ("nats.nkey", self.nkey.is_some()),
            ("nats.user", self.user.is_some()),
            (
                "nats.token",
                self.token.is_some() || self.token_file.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if ways.len() > 1 {
            anyhow::bail!(
                "{} are set: NATS takes one way of logging in, choose one",
                ways.join(" and ")
            );
        }
        let has_password = self.password.is_some() || self.password_file.is_some();
        if self.password.is_some() && self.password_file.is_some() {
            anyhow::bail!("nats.password and nats.password_file are both set: give one");
        }
        if self.token.is_some() && self.token_file.is_some() {
            anyhow::bail!("nats.token and nats.token_file are both set: give one");
        }
        if self.user.is_some() != has_password {
            anyhow::bail!(
                "nats.user and nats.password (or nats.password_file) go together: one is set without the other"
            );
        }
        crate::tls_settings::check_pair("nats", &self.tls_cert, &self.tls_key)?;
        for (name, path) in [
            ("nats.creds", &self.creds),
            ("nats.nkey", &self.nkey),
            ("nats.password_file", &self.password_file),
            ("nats.token_file", &self.token_file),
            ("nats.tls_ca", &self.tls_ca),
            ("nats.tls_cert", &self.tls_cert),
            ("nats.tls_key", &self.tls_key),
        ] {
            crate::tls_settings::check_file(name, path)?;
        }
        self.auth().map(|_| ())
    }

    /// The credentials, with the files holding them read.
    pub fn auth(&self) -> anyhow::Result<NatsAuth> {
        if let Some(path) = &self.creds {
            return Ok(NatsAuth::Creds(path.clone()));
        }
        if let Some(path) = &self.nkey {
            let seed = first_line("nats.nkey", path)?;
            if !seed.starts_with("SU") {
                anyhow::bail!(
                    "nats.nkey: {} does not hold a user nkey seed (one starting with SU)",
                    path.display()
                );
            }
            return Ok(NatsAuth::Nkey(seed));
        }
        if let Some(user) = &self.user {
            let password = match (&self.password, &self.password_file) {
                (Some(p), _) => p.clone(),
                (None, Some(path)) => first_line("nats.password_file", path)?,
                (None, None) => anyhow::bail!("nats.user is set without nats.password"),
            };
            return Ok(NatsAuth::UserPassword(user.clone(), password));
        }
        match (&self.token, &self.token_file) {
            (Some(token), _) => Ok(NatsAuth::Token(token.clone())),
            (None, Some(path)) => Ok(NatsAuth::Token(first_line("nats.token_file", path)?)),
            (None, None) => Ok(NatsAuth::None),
        }
    }

    /// The same settings with secrets shown as [`SECRET_SHOWN`], for `--print-config`.
    pub fn redacted(&self) -> Self {
        let hide = |s: &Option<String>| s.as_ref().map(|_| SECRET_SHOWN.to_string());
        Self {
            password: hide(&self.password),
            token: hide(&self.token),
            ..self.clone()
        }
    }
}

/// A NATS URL: `nats://`, `tls://`, `ws://` or `wss://` (or none: `host:port`), a
/// host, and a port that is a number.
fn check_url(url: &str) -> anyhow::Result<()> {
    let full = if url.contains("://") {
        url.to_string()
    } else {
        format!("nats://{url}")
    };
    let parsed = url::Url::parse(&full)
        .map_err(|e| anyhow::anyhow!("nats.url {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "nats" | "tls" | "ws" | "wss") {
        anyhow::bail!(
            "nats.url {url:?} has scheme {:?}: use nats://, tls://, ws:// or wss://",
            parsed.scheme()
        );
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        anyhow::bail!("nats.url {url:?} has no host");
    }
    Ok(())
}

fn first_line(name: &str, path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{name}: cannot read {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default().trim().to_string();
    if line.is_empty() {
        anyhow::bail!("{name}: {} is empty", path.display());
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> NatsSettings {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn urls_come_as_a_list_or_one_comma_separated_string() {
        let list = parse(r#"url = ["nats://a:4222", "nats://b:4222"]"#);
        let text = parse(r#"url = "nats://a:4222, nats://b:4222""#);
        assert_eq!(list.url, vec!["nats://a:4222", "nats://b:4222"]);
        assert_eq!(list, text);
        list.check().unwrap();
        assert_eq!(NatsSettings::servers("a:4222,b:4222").url.len(), 2);
        NatsSettings::servers("a:4222,tls://b:4222")
            .check()
            .unwrap();
    }

    #[test]
    fn bad_settings_name_what_is_wrong() {
        let err = |s: NatsSettings| s.check().unwrap_err().to_string();
        assert!(err(NatsSettings::servers("")).contains("nats.url is empty"));
        assert!(err(NatsSettings::servers("http://a:4222")).contains("scheme \"http\""));
        assert!(err(NatsSettings::servers("nats://a:42x")).contains("nats.url \"nats://a:42x\""));
        let two = NatsSettings {
            user: Some("u".into()),
            password: Some("p".into()),
            token: Some("t".into()),
            ..NatsSettings::default()
        };
        assert!(err(two).contains("nats.user and nats.token are set"));
        let half = NatsSettings {
            user: Some("u".into()),
            ..NatsSettings::default()
        };
        assert!(err(half).contains("go together"));
        let cert_only = NatsSettings {
            tls_cert: Some("/etc/hostname".into()),
            ..NatsSettings::default()
        };
        assert!(err(cert_only).contains("nats.tls_cert and nats.tls_key"));
        let missing = NatsSettings {
            creds: Some("/nonexistent/node.creds".into()),
            ..NatsSettings::default()
        };
        assert!(err(missing).contains("nats.creds: cannot read /nonexistent/node.creds"));
    }

    #[test]
    fn secrets_come_from_files_and_are_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        let settings = NatsSettings {
            user: Some("node".into()),
            password_file: Some(file),
            ..NatsSettings::default()
        };
        settings.check().unwrap();
        assert_eq!(
            settings.auth().unwrap(),
            NatsAuth::UserPassword("node".into(), "s3cret".into())
        );
        let inline = NatsSettings {
            token: Some("t0k3n".into()),
            ..NatsSettings::default()
        };
        let shown = toml::to_string(&inline.redacted()).unwrap();
        assert!(
            shown.contains(SECRET_SHOWN) && !shown.contains("t0k3n"),
            "{shown}"
        );
    }
}
