//! `http`: where the HTTP API listens, the proxies whose forwarding headers it
//! believes, and the certificate that makes it HTTPS. Written as the address alone
//! (`http = "127.0.0.1:8080"`) or as a table (`[http]` with `listen`,
//! `trusted_proxies`, `tls_cert` and `tls_key`), so a file that names only the address
//! reads as it always did.

use ipnet::IpNet;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// `[http]`.
#[derive(Debug, Clone, PartialEq, documented::DocumentedFields)]
pub struct HttpSettings {
    /// Listen address.
    pub listen: SocketAddr,
    /// Proxies (addresses or CIDR ranges, `"10.0.0.0/8"`, `"127.0.0.1"`) in front of
    /// the server. Only from these peers are `Forwarded` / `X-Forwarded-For` (the
    /// client's address) and `X-Forwarded-Proto` (its scheme) believed; every
    /// per-client decision then uses that address. Empty (the default): the peer is
    /// the client and the headers are ignored.
    pub trusted_proxies: Vec<IpNet>,
    /// The server's certificate chain (PEM): with `tls_key`, `listen` serves HTTPS
    /// (HTTP/1.1) only. Reloaded on SIGHUP, so a renewed certificate needs no restart.
    pub tls_cert: Option<PathBuf>,
    /// The key of `tls_cert` (PEM).
    pub tls_key: Option<PathBuf>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            trusted_proxies: Vec::new(),
            tls_cert: None,
            tls_key: None,
        }
    }
}

impl HttpSettings {
    /// Whether `listen` serves HTTPS.
    pub fn tls(&self) -> bool {
        self.tls_cert.is_some()
    }

    /// The certificate and its key come together and can be read.
    pub fn check(&self) -> anyhow::Result<()> {
        crate::tls_settings::check_pair("http", &self.tls_cert, &self.tls_key)?;
        crate::tls_settings::check_file("http.tls_cert", &self.tls_cert)?;
        crate::tls_settings::check_file("http.tls_key", &self.tls_key)
    }
}

/// One entry of `trusted_proxies`: a range, or an address taken as a range of one.
fn parse_net(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<IpNet>() {
        return Ok(net.trunc());
    }
    text.parse::<IpAddr>().map(IpNet::from).map_err(|_| {
        format!(
            "http.trusted_proxies: {text:?} is neither an address nor a CIDR range \
             (write e.g. \"10.0.0.0/8\" or \"192.0.2.7\")"
        )
    })
}

/// `--print-config` writes the address alone while it is all there is, as a file
/// written before the table existed says it, and the table otherwise.
impl Serialize for HttpSettings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        if self.trusted_proxies.is_empty() && !self.tls() && self.tls_key.is_none() {
            return serializer.collect_str(&self.listen);
        }
        let mut table = serializer.serialize_struct("HttpSettings", 4)?;
        table.serialize_field("listen", &self.listen)?;
        table.serialize_field("trusted_proxies", &self.trusted_proxies)?;
        if let Some(path) = &self.tls_cert {
            table.serialize_field("tls_cert", path)?;
        }
        if let Some(path) = &self.tls_key {
            table.serialize_field("tls_key", path)?;
        }
        table.end()
    }
}

/// The table form as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    listen: Option<SocketAddr>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
}

impl<'de> Deserialize<'de> for HttpSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = HttpSettings;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an address (\"127.0.0.1:8080\") or a table with listen, trusted_proxies, \
                     tls_cert and tls_key",
                )
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<HttpSettings, E> {
                let listen = text.parse().map_err(|_| {
                    E::custom(format!(
                        "{text:?} is not an address: write ip:port, e.g. \"127.0.0.1:8080\""
                    ))
                })?;
                Ok(HttpSettings {
                    listen,
                    ..HttpSettings::default()
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HttpSettings, A::Error> {
                let table = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let trusted_proxies = table
                    .trusted_proxies
                    .iter()
                    .map(|t| parse_net(t).map_err(de::Error::custom))
                    .collect::<Result<_, _>>()?;
                Ok(HttpSettings {
                    listen: table.listen.unwrap_or(HttpSettings::default().listen),
                    trusted_proxies,
                    tls_cert: table.tls_cert,
                    tls_key: table.tls_key,
                })
            }
        }
        deserializer.deserialize_any(Either)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Top {
        http: HttpSettings,
    }

    fn read(text: &str) -> Result<HttpSettings, String> {
        toml::from_str::<Top>(text)
            .map(|t| t.http)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_address_alone_and_the_table_both_read() {
        let s = read("http = \"0.0.0.0:9000\"").unwrap();
        assert_eq!(s.listen, "0.0.0.0:9000".parse().unwrap());
        assert!(s.trusted_proxies.is_empty());
        let s = read("[http]\nlisten = \"127.0.0.1:9001\"\ntrusted_proxies = [\"10.0.0.0/8\", \"192.0.2.7\", \"2001:db8::/32\", \"10.1.2.3/16\"]\n").unwrap();
        assert_eq!(s.listen, "127.0.0.1:9001".parse().unwrap());
        let shown: Vec<String> = s.trusted_proxies.iter().map(|n| n.to_string()).collect();
        assert_eq!(
            shown,
            ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "10.1.0.0/16"]
        );
        // The table without listen keeps the default address.
        let s = read("[http]\ntrusted_proxies = [\"::1\"]\n").unwrap();
        assert_eq!(s.listen, HttpSettings::default().listen);
    }

    #[test]
    fn bad_entries_are_named() {
        let err = read("[http]\ntrusted_proxies = [\"10.0.0.0/33\"]\n").unwrap_err();
        assert!(
            err.contains("http.trusted_proxies") && err.contains("10.0.0.0/33"),
            "{err}"
        );
        let err = read("[http]\ntrusted_proxie = []\n").unwrap_err();
        assert!(err.contains("trusted_proxie"), "{err}");
        let err = read("http = \"localhost\"").unwrap_err();
        assert!(err.contains("not an address"), "{err}");
    }

    #[test]
    fn print_config_writes_what_reads_back() {
        let s = read("[http]\nlisten = \"127.0.0.1:9001\"\ntrusted_proxies = [\"10.0.0.0/8\"]\n")
            .unwrap();
        #[derive(Serialize)]
        struct Out<'a> {
            http: &'a HttpSettings,
        }
        let text = toml::to_string(&Out { http: &s }).unwrap();
        assert_eq!(read(&text).unwrap(), s, "{text}");
        let tls =
            read("[http]\nlisten = \"0.0.0.0:443\"\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n")
                .unwrap();
        assert!(tls.tls());
        let text = toml::to_string(&Out { http: &tls }).unwrap();
        assert_eq!(read(&text).unwrap(), tls, "{text}");
        let alone = read("http = \"127.0.0.1:9002\"").unwrap();
        let text = toml::to_string(&Out { http: &alone }).unwrap();
        assert_eq!(text.trim(), "http = \"127.0.0.1:9002\"");
    }
}
