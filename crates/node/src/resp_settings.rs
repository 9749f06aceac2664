//! `resp`: where the Redis protocol listens, in plain text, over TLS, or both. Written
//! as the address alone (`resp = "127.0.0.1:6380"`) or as a table (`[resp]` with
//! `listen`, `tls`, `tls_cert`, `tls_key`, `tls_ca`), so a file that names only the
//! address reads as it always did. As Redis's `port` and `tls-port`: a table with `tls`
//! and no `listen` serves TLS only.

use crate::tls_settings::{check_file, check_pair};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// `[resp]`.
#[derive(Debug, Clone, PartialEq, documented::DocumentedFields)]
pub struct RespSettings {
    /// The plain-text listen address; absent when only TLS is served.
    pub listen: Option<SocketAddr>,
    /// The TLS listen address (Redis's `tls-port`), with `tls_cert` and `tls_key`.
    pub tls: Option<SocketAddr>,
    /// The server's certificate chain (PEM), reloaded on SIGHUP.
    pub tls_cert: Option<PathBuf>,
    /// The key of `tls_cert` (PEM).
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM): when set, a TLS client must show a certificate one of
    /// them signed (Redis's `tls-auth-clients yes` with `tls-ca-cert-file`).
    pub tls_ca: Option<PathBuf>,
}

impl Default for RespSettings {
    fn default() -> Self {
        Self {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 6380))),
            tls: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
        }
    }
}

impl RespSettings {
    /// The address a node reports as its own (INFO, ROLE, what a leader announces when
    /// no `announce` is set): the plain port when there is one, else the TLS port.
    pub fn addr(&self) -> SocketAddr {
        self.listen
            .or(self.tls)
            .unwrap_or_else(|| Self::default().listen.expect("the default has a port"))
    }

    /// Every address this section listens on, named as the settings name them.
    pub fn listening(&self) -> Vec<(&'static str, SocketAddr)> {
        let mut out = Vec::new();
        if let Some(a) = self.listen {
            out.push(("resp", a));
        }
        if let Some(a) = self.tls {
            out.push(("resp.tls", a));
        }
        out
    }

    /// Refuses a TLS port without its certificate, files that are not there, and a
    /// certificate with no port to serve it on.
    pub fn check(&self) -> anyhow::Result<()> {
        check_pair("resp", &self.tls_cert, &self.tls_key)?;
        match (self.tls, &self.tls_cert) {
            (Some(_), None) => anyhow::bail!(
                "resp.tls is set without resp.tls_cert and resp.tls_key: a TLS port needs \
                 the server's certificate and key (PEM files)"
            ),
            (None, Some(_)) => anyhow::bail!(
                "resp.tls_cert is set without resp.tls: name the address to serve TLS on \
                 (resp.tls = \"0.0.0.0:6390\", say)"
            ),
            _ => {}
        }
        if self.tls_ca.is_some() && self.tls.is_none() {
            anyhow::bail!("resp.tls_ca is set without resp.tls: client certificates need TLS");
        }
        if let (Some(plain), Some(tls)) = (self.listen, self.tls) {
            if plain == tls && plain.port() != 0 {
                anyhow::bail!("resp.listen and resp.tls are the same address ({plain})");
            }
        }
        for (name, path) in [
            ("resp.tls_cert", &self.tls_cert),
            ("resp.tls_key", &self.tls_key),
            ("resp.tls_ca", &self.tls_ca),
        ] {
            check_file(name, path)?;
        }
        Ok(())
    }

    fn is_plain_only(&self) -> bool {
        self.tls.is_none()
            && self.tls_cert.is_none()
            && self.tls_key.is_none()
            && self.tls_ca.is_none()
    }
}

/// `--print-config` writes the address alone while it is all there is, as a file
/// written before the table existed says it, and the table otherwise.
impl Serialize for RespSettings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        if let (true, Some(listen)) = (self.is_plain_only(), self.listen) {
            return serializer.collect_str(&listen);
        }
        let mut table = serializer.serialize_struct("RespSettings", 5)?;
        if let Some(listen) = self.listen {
            table.serialize_field("listen", &listen)?;
        }
        if let Some(tls) = self.tls {
            table.serialize_field("tls", &tls)?;
        }
        for (name, path) in [
            ("tls_cert", &self.tls_cert),
            ("tls_key", &self.tls_key),
            ("tls_ca", &self.tls_ca),
        ] {
            if let Some(path) = path {
                table.serialize_field(name, path)?;
            }
        }
        table.end()
    }
}

/// The table form as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    listen: Option<SocketAddr>,
    tls: Option<SocketAddr>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    tls_ca: Option<PathBuf>,
}

impl<'de> Deserialize<'de> for RespSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = RespSettings;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an address (\"127.0.0.1:6380\") or a table with listen, tls, tls_cert, \
                     tls_key and tls_ca",
                )
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<RespSettings, E> {
                let listen = text.parse().map_err(|_| {
                    E::custom(format!(
                        "{text:?} is not an address: write ip:port, e.g. \"127.0.0.1:6380\""
                    ))
                })?;
                Ok(RespSettings {
                    listen: Some(listen),
                    ..RespSettings::default()
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RespSettings, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                // Without `listen`, the plain port stays at its default unless TLS is
                // served: then, as Redis with `port 0`, only TLS.
                let listen = match (t.listen, t.tls) {
                    (Some(a), _) => Some(a),
                    (None, Some(_)) => None,
                    (None, None) => RespSettings::default().listen,
                };
                Ok(RespSettings {
                    listen,
                    tls: t.tls,
                    tls_cert: t.tls_cert,
                    tls_key: t.tls_key,
                    tls_ca: t.tls_ca,
                })
            }
        }
        deserializer.deserialize_any(Either)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Top {
        resp: RespSettings,
    }

    fn read(text: &str) -> Result<RespSettings, String> {
        toml::from_str::<Top>(text)
            .map(|t| t.resp)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_address_alone_and_the_table_both_read() {
        let s = read("resp = \"0.0.0.0:7000\"").unwrap();
        assert_eq!(s.listen, Some("0.0.0.0:7000".parse().unwrap()));
        assert_eq!(s.tls, None);
        let s = read("[resp]\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\n")
            .unwrap();
        assert_eq!(s.listen, None, "tls without listen serves TLS only");
        assert_eq!(s.addr(), "127.0.0.1:6390".parse().unwrap());
        let s = read(
            "[resp]\nlisten = \"127.0.0.1:6380\"\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\n",
        )
        .unwrap();
        assert_eq!(s.addr(), "127.0.0.1:6380".parse().unwrap());
        assert_eq!(s.listening().len(), 2);
        let s = read("[resp]\n").unwrap();
        assert_eq!(s, RespSettings::default());
    }

    #[test]
    fn bad_tables_are_named() {
        let err = read("[resp]\ntls_port = 1\n").unwrap_err();
        assert!(err.contains("tls_port"), "{err}");
        let err = read("resp = \"localhost\"").unwrap_err();
        assert!(err.contains("not an address"), "{err}");
        let check = |text: &str| read(text).unwrap().check().unwrap_err().to_string();
        assert!(check("[resp]\ntls = \"127.0.0.1:6390\"\n").contains("resp.tls_cert"));
        assert!(
            check("[resp]\ntls_cert = \"/etc/hostname\"\ntls_key = \"/etc/hostname\"\n")
                .contains("without resp.tls")
        );
        assert!(
            check("[resp]\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/etc/hostname\"\n")
                .contains("resp.tls_key")
        );
        let missing = check(
            "[resp]\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/nonexistent/c.pem\"\ntls_key = \"/etc/hostname\"\n",
        );
        assert!(
            missing.contains("resp.tls_cert") && missing.contains("/nonexistent/c.pem"),
            "{missing}"
        );
    }

    #[test]
    fn print_config_writes_what_reads_back() {
        for text in [
            "resp = \"127.0.0.1:7002\"",
            "[resp]\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\ntls_ca = \"/ca\"\n",
            "[resp]\nlisten = \"127.0.0.1:6380\"\ntls = \"127.0.0.1:6390\"\ntls_cert = \"/c\"\ntls_key = \"/k\"\n",
        ] {
            let s = read(text).unwrap();
            let written = toml::to_string(&Top { resp: s.clone() }).unwrap();
            assert_eq!(read(&written).unwrap(), s, "{written}");
        }
        let written = toml::to_string(&Top {
            resp: read("resp = \"127.0.0.1:7002\"").unwrap(),
        })
        .unwrap();
        assert_eq!(written.trim(), "resp = \"127.0.0.1:7002\"");
    }
}
