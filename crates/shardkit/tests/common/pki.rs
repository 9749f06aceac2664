//! A test CA and certificates it signs, as PEM files, for the TLS tests: a server
//! certificate for 127.0.0.1 and localhost, a client certificate, and on request an
//! expired server certificate.

use std::path::{Path, PathBuf};

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files.
pub struct Pki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Pki {
    /// Writes a fresh CA and its certificates into `dir`.
    pub fn make(dir: &Path) -> Pki {
        Self::make_with(dir, &["127.0.0.1", "localhost"], false)
    }

    /// As [`Pki::make`], the server certificate naming `names` (addresses, hosts).
    pub fn make_for(dir: &Path, names: &[&str]) -> Pki {
        Self::make_with(dir, names, false)
    }

    /// As [`Pki::make`], with a server certificate that expired in 2020.
    pub fn make_expired(dir: &Path) -> Pki {
        Self::make_with(dir, &["127.0.0.1", "localhost"], true)
    }

    fn make_with(dir: &Path, server_names: &[&str], expired: bool) -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Names of their own: with the default name on both, OpenSSL (curl,
        // redis-cli) takes the leaf for a self-signed certificate.
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "shardkit test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issue = |names: Vec<String>, expired: bool| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names.clone()).unwrap();
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(DnType::CommonName, names[0].clone());
            if expired {
                params.not_before = rcgen::date_time_ymd(2019, 1, 1);
                params.not_after = rcgen::date_time_ymd(2020, 1, 1);
            }
            let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = issue(
            server_names.iter().map(|n| n.to_string()).collect(),
            expired,
        );
        let (client_cert, client_key) = issue(vec!["client.shardkit.test".into()], false);
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        Pki {
            ca: write("ca.pem", &ca.pem()),
            server_cert: write("server.pem", &server_cert),
            server_key: write("server-key.pem", &server_key),
            client_cert: write("client.pem", &client_cert),
            client_key: write("client-key.pem", &client_key),
        }
    }
}
