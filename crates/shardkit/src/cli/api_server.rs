//! Which running server `shardkit links` talks to, and with which API key: the flags
//! (or their environment variables), else what a node's settings file says, read as
//! `serve` reads it.

use anyhow::Context;
use shardkit_node::config::{Overrides, Settings};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// Which server to talk to.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Base URL of the running server [default: `[links] base_url` of the --config
    /// file, else `http://` (`https://` with `[http] tls_cert`) and its `http`
    /// address, SHARDKIT_HTTP over it (0.0.0.0 and :: reached as 127.0.0.1 and ::1:
    /// the command runs on the server's host), else http://127.0.0.1:8080].
    #[arg(long, env = "SHARDKIT_SERVER", value_name = "URL")]
    server: Option<String>,
    /// API key, sent as `Authorization: Bearer KEY` [default: `api_key` of the
    /// --config file].
    #[arg(long, env = "SHARDKIT_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// A node's settings file, read as `serve` reads it: the server's URL and API key
    /// when --server and --api-key (and their environment variables) are not given.
    #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
}

/// A resolved server: where it is, where that came from (for errors), and the key.
#[derive(Debug, Clone)]
pub struct ApiServer {
    base: String,
    from: String,
    api_key: Option<String>,
}

impl ServerArgs {
    /// The server and key: each flag (or its environment variable) over the settings
    /// of the `--config` file (or the defaults).
    pub fn resolve(&self) -> anyhow::Result<ApiServer> {
        let overrides = Overrides {
            http: super::serve_env::http()?,
            ..Overrides::default()
        };
        let settings = super::config_file::read(self.config.as_deref(), overrides)?;
        let (base, from) = match &self.server {
            Some(url) => (url.clone(), "--server".to_string()),
            None => base_of(&settings, self.config.as_deref())?,
        };
        Ok(ApiServer {
            base: base.trim_end_matches('/').to_string(),
            from,
            api_key: self
                .api_key
                .clone()
                .filter(|k| !k.is_empty())
                .or(settings.api_key),
        })
    }
}

/// The URL a node's settings say it is reached at, and which setting said so.
fn base_of(
    settings: &Settings,
    file: Option<&std::path::Path>,
) -> anyhow::Result<(String, String)> {
    let in_file = |key: &str| match file {
        Some(path) => format!("{key} of --config {}", path.display()),
        None => key.to_string(),
    };
    if let Some(base) = &settings.links.base_url {
        let from = in_file("links.base_url");
        url::Url::parse(base).map_err(|e| anyhow::anyhow!("{from}: {base:?}: {e}"))?;
        return Ok((base.clone(), from));
    }
    let listen = settings.http.listen;
    let from = in_file("http");
    if listen.port() == 0 {
        anyhow::bail!(
            "{from}: port 0 is picked when the server starts, so it cannot be known here: \
             pass --server URL"
        );
    }
    // A node serving HTTPS itself (`[http] tls_cert`) is reached over https; its
    // certificate must then name the address, or --server gives the name it has.
    let scheme = if settings.http.tls() { "https" } else { "http" };
    Ok((format!("{scheme}://{}", reachable(listen)), from))
}

/// `listen` as a client on the same host reaches it: an unspecified address (every
/// interface) through loopback of the same family.
fn reachable(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

impl ApiServer {
    /// The base URL and the setting it came from, for "cannot reach" errors.
    pub fn describe(&self) -> String {
        format!("{} (from {})", self.base, self.from)
    }

    /// An HTTP client that sends the key on every request.
    pub fn client(&self) -> anyhow::Result<reqwest::blocking::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {key}")
                    .parse()
                    .context("the API key is not a valid header value")?,
            );
        }
        Ok(reqwest::blocking::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs(600))
            .build()?)
    }

    /// The URL of `path` on the server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(listen: &str, base_url: Option<&str>) -> anyhow::Result<String> {
        let mut settings = Settings::default();
        settings.http.listen = listen.parse().unwrap();
        settings.links.base_url = base_url.map(str::to_string);
        base_of(&settings, None).map(|(base, _)| base)
    }

    #[test]
    fn the_base_url_wins_over_the_listen_address() {
        let base_url = Some("https://sho.rt");
        assert_eq!(base("127.0.0.1:9000", base_url).unwrap(), "https://sho.rt");
        assert_eq!(base("10.1.2.3:9000", None).unwrap(), "http://10.1.2.3:9000");
        let default = Settings::default();
        assert_eq!(base_of(&default, None).unwrap().0, "http://127.0.0.1:8080");
    }

    #[test]
    fn every_interface_is_reached_through_loopback() {
        assert_eq!(base("0.0.0.0:9000", None).unwrap(), "http://127.0.0.1:9000");
        assert_eq!(base("[::]:9000", None).unwrap(), "http://[::1]:9000");
    }

    #[test]
    fn an_unknowable_port_or_a_bad_base_url_names_the_setting() {
        let err = base("127.0.0.1:0", None).unwrap_err().to_string();
        assert!(err.starts_with("http: port 0"), "{err}");
        let err = base("127.0.0.1:8080", Some("sho.rt"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("links.base_url: "), "{err}");
    }
}
