//! A database server's name as maps, errors and logs show it: its URL without the
//! password. Here, in a crate every other one depends on, so the server (whose
//! PostgreSQL support is an optional feature) and `shardkit-pg` share one copy.

/// Removes the password from a connection URL (`postgres://u:pw@h/db` ->
/// `postgres://u@h/db`), so that errors, printed settings and the shard map can name a
/// server without leaking its secret. A URL without a user part comes back unchanged.
pub fn redact_url(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        if let Some(at) = rest.rfind('@') {
            let userinfo = &rest[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            return format!("{}://{}@{}", &url[..scheme_end], user, &rest[at + 1..]);
        }
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn password_is_removed() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5432/db"),
            "postgres://u@h:5432/db"
        );
        assert_eq!(
            redact_url("postgres://u:p@ss@h/db"),
            "postgres://u@h/db",
            "an @ in the password"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            redact_url("mysql://root@127.0.0.1/test"),
            "mysql://root@127.0.0.1/test"
        );
    }
}
