//! `shardkit links import --from yourls|bitly` against real exports: a YOURLS site
//! (its PHP source, `php -S`, its database on the MariaDB here, links made through its
//! own API, one clicked), imported from a `mysqldump` of its table and from its API; a
//! Bitly CSV export. Each link keeps its path, URL, title, creation time and clicks;
//! a path already taken here is reported by its place in the source with nothing
//! imported; `--dry-run` changes nothing. The YOURLS part is skipped, loudly, when PHP
//! or the YOURLS source (`SHARDKIT_TEST_YOURLS_SRC`: a checkout, or a git directory)
//! is missing.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn import(server: &Server, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardkit"))
        .args(["links", "import"])
        .args(args)
        .args(["--server", &server.url("")])
        .output()
        .unwrap()
}

fn get(server: &Server, path: &str) -> (u16, Value) {
    let r = Client::new().get(server.url(path)).send().unwrap();
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_bitly_export_imports_with_paths_titles_times_tags_and_clicks() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let csv = dir.path().join("bitly.csv");
    std::fs::write(
        &csv,
        "Title,Bitlink,Long URL,Date Created,Tags,Total Clicks\n\
         Spring launch,bit.ly/launch-day,https://example.com/launch,2024-03-01 10:20:30,\"spring, big news\",\"1,204\"\n\
         ,https://bit.ly/3xYzAbC,https://example.com/coded,2024-03-02T08:00:00+0000,,7\n",
    )
    .unwrap();
    let csv = csv.to_str().unwrap();
    let dry = import(&server, &["--from", "bitly", csv, "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert_eq!(
        get(&server, "/api/links/launch-day").0,
        404,
        "a dry run imports nothing"
    );
    let done = import(&server, &["--from", "bitly", csv]);
    assert!(done.status.success(), "{}", text(&done));
    let (_, launch) = get(&server, "/api/links/launch-day");
    assert_eq!(launch["url"], "https://example.com/launch");
    assert_eq!(launch["title"], "Spring launch");
    assert_eq!(launch["created_at"], "2024-03-01T10:20:30.000Z");
    assert_eq!(launch["tags"], serde_json::json!(["spring", "big-news"]));
    assert_eq!(launch["clicks"], 1204);
    let (_, coded) = get(&server, "/api/links/3xYzAbC");
    assert_eq!(
        coded["code"], "3xYzAbC",
        "a code-shaped back-half stays the path"
    );
    assert_eq!(coded["clicks"], 7);
    // Again: every path is taken now, each reported by its CSV line; nothing changes.
    let again = import(&server, &["--from", "bitly", csv]);
    assert!(!again.status.success());
    let said = text(&again);
    assert!(
        said.contains("CSV line 2")
            && said.contains("CSV line 3")
            && said.contains("nothing was imported"),
        "{said}"
    );
}

/// A YOURLS site on `php -S` over a fresh MariaDB database, installed through its
/// own installer.
struct Yourls {
    php: Child,
    base: String,
    db: String,
    _dir: tempfile::TempDir,
}

impl Drop for Yourls {
    fn drop(&mut self) {
        let _ = self.php.kill();
        let _ = self.php.wait();
        let _ = mysql(&format!("DROP DATABASE IF EXISTS {}", self.db));
    }
}

fn mysql(sql: &str) -> Output {
    Command::new("mysql")
        .args(["-h127.0.0.1", "-uroot", "-e", sql])
        .output()
        .unwrap()
}

/// The YOURLS source: `SHARDKIT_TEST_YOURLS_SRC` (a checkout, or a git directory),
/// else the copy this machine fetched; `None` when there is none, or no PHP.
fn yourls_source(into: &Path) -> Option<()> {
    let found = Command::new("php")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("\n\n*** SKIPPED the YOURLS import: php is not installed (apt-get install -y php-cli php-mysql) ***\n\n");
        return None;
    }
    let src = std::env::var_os("SHARDKIT_TEST_YOURLS_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/.mirror/YOURLS+YOURLS/repo"));
    if src.join("yourls-loader.php").exists() {
        let ok = Command::new("cp")
            .arg("-r")
            .arg(format!("{}/.", src.display()))
            .arg(into)
            .status()
            .unwrap();
        return ok.success().then_some(());
    }
    if src.join("HEAD").exists() {
        let archive = Command::new("git")
            .arg(format!("--git-dir={}", src.display()))
            // The GeoIP database is a large file a fetched copy may lack (git names it
            // an invalid object even when left out, hence the stderr dropped): YOURLS
            // runs without it, as it does without its own tests.
            .args([
                "archive",
                "--format=tar",
                "HEAD",
                "--",
                ".",
                ":(exclude)includes/geo",
                ":(exclude)tests",
            ])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let mut tar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(into)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        tar.stdin
            .take()
            .unwrap()
            .write_all(&archive.stdout)
            .unwrap();
        if tar.wait().unwrap().success() && into.join("yourls-loader.php").exists() {
            return Some(());
        }
    }
    eprintln!("\n\n*** SKIPPED the YOURLS import: no YOURLS source (set SHARDKIT_TEST_YOURLS_SRC to a checkout of github.com/YOURLS/YOURLS) ***\n\n");
    None
}

impl Yourls {
    fn start() -> Option<Yourls> {
        let dir = tempfile::tempdir().unwrap();
        yourls_source(dir.path())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let db = format!("sk_yourls_{}", std::process::id());
        let made = mysql(&format!(
            "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}"
        ));
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let base = format!("http://127.0.0.1:{port}");
        std::fs::write(
            dir.path().join("user/config.php"),
            format!(
                "<?php\ndefine('YOURLS_DB_USER', 'root');\ndefine('YOURLS_DB_PASS', '');\ndefine('YOURLS_DB_NAME', '{db}');\n\
                 define('YOURLS_DB_HOST', '127.0.0.1');\ndefine('YOURLS_DB_PREFIX', 'yourls_');\ndefine('YOURLS_SITE', '{base}');\n\
                 define('YOURLS_LANG', '');\ndefine('YOURLS_UNIQUE_URLS', false);\ndefine('YOURLS_PRIVATE', true);\n\
                 define('YOURLS_COOKIEKEY', 'a-test-cookie-key-0123456789');\n$yourls_user_passwords = ['admin' => 'secret-password'];\n\
                 define('YOURLS_URL_CONVERT', 62);\ndefine('YOURLS_DEBUG', false);\n$yourls_reserved_URL = [];\n"
            ),
        )
        .unwrap();
        // `php -S` has no rewrites: files as they are, every other path to YOURLS's loader.
        std::fs::write(
            dir.path().join("router.php"),
            "<?php\n$p = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);\n\
             if ($p !== '/' && is_file(__DIR__ . $p)) return false;\n\
             if (is_dir(__DIR__ . $p) && is_file(__DIR__ . rtrim($p, '/') . '/index.php')) { require __DIR__ . rtrim($p, '/') . '/index.php'; return true; }\n\
             require __DIR__ . '/yourls-loader.php';\n",
        )
        .unwrap();
        let php = Command::new("php")
            .args(["-S", &format!("127.0.0.1:{port}"), "router.php"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let site = Yourls {
            php,
            base,
            db,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = Client::new()
                .get(format!("{}/admin/install.php?install=1", site.base))
                .send()
            {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "YOURLS never answered its installer"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(site)
    }

    /// A link made through YOURLS's own API; answers the keyword it got.
    fn shorten(&self, url: &str, keyword: Option<&str>, title: &str) -> String {
        let mut query = vec![
            ("username", "admin"),
            ("password", "secret-password"),
            ("action", "shorturl"),
            ("format", "json"),
            ("url", url),
            ("title", title),
        ];
        if let Some(k) = keyword {
            query.push(("keyword", k));
        }
        let answer: Value = Client::new()
            .get(format!("{}/yourls-api.php", self.base))
            .query(&query)
            .send()
            .unwrap()
            .json()
            .unwrap();
        answer["url"]["keyword"]
            .as_str()
            .unwrap_or_else(|| panic!("YOURLS refused {url}: {answer}"))
            .to_string()
    }

    fn dump(&self, to: &Path) {
        let out = Command::new("mysqldump")
            .args(["-h127.0.0.1", "-uroot", &self.db, "yourls_url"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(to, out.stdout).unwrap();
    }
}

#[test]
fn a_yourls_site_imports_from_its_dump_and_from_its_api() {
    let Some(yourls) = Yourls::start() else {
        return;
    };
    let launch = yourls.shorten(
        "https://example.com/launch",
        Some("launch"),
        "Spring launch",
    );
    let coded = yourls.shorten(
        "https://example.com/coded",
        Some("AbCdEfG"),
        "Seven letters",
    );
    let auto = yourls.shorten("https://example.com/auto", None, "Auto keyword");
    let follow = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for _ in 0..3 {
        let r = follow
            .get(format!("{}/{launch}", yourls.base))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 301);
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("yourls_url.sql");
    yourls.dump(&dump);
    let dump = dump.to_str().unwrap();

    // A path taken here already: reported by its row, nothing imported.
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let server =
        Server::start_with_config(&dir.path().join("a"), "[links]\ncreate_per_second = 0\n");
    let taken: Value = Client::new()
        .post(server.url("/api/links"))
        .json(&serde_json::json!({"url": "https://example.com/mine", "alias": "launch"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let refused = import(&server, &["--from", "yourls", dump]);
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("`launch`")
            && said.contains(taken["code"].as_str().unwrap())
            && said.contains("nothing was imported"),
        "{said}"
    );
    assert_eq!(
        get(&server, "/api/links?q=").1["total"],
        1,
        "nothing half-imported"
    );
    let dry = import(&server, &["--from", "yourls", dump, "--dry-run"]);
    assert!(
        !dry.status.success(),
        "the dry run reports the same conflict"
    );

    // Into a server where every path is free: from the dump, then from the API.
    for (name, args) in [
        ("dump", vec!["--from", "yourls", dump]),
        (
            "api",
            vec![
                "--from",
                "yourls",
                &yourls.base,
                "--source-user",
                "admin",
                "--source-password",
                "secret-password",
            ],
        ),
    ] {
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        let server =
            Server::start_with_config(&dir.path().join(name), "[links]\ncreate_per_second = 0\n");
        let done = import(&server, &args);
        assert!(done.status.success(), "{name}: {}", text(&done));
        let (_, l) = get(&server, &format!("/api/links/{launch}"));
        assert_eq!(l["url"], "https://example.com/launch", "{name}: {l}");
        assert_eq!(l["title"], "Spring launch", "{name}");
        assert_eq!(l["clicks"], 3, "{name}");
        assert!(
            l["created_at"].as_str().unwrap().starts_with("20"),
            "{name}: {l}"
        );
        let (_, c) = get(&server, &format!("/api/links/{coded}"));
        assert_eq!(
            c["code"],
            coded.as_str(),
            "{name}: a code-shaped keyword stays the path"
        );
        let (_, a) = get(&server, &format!("/api/links/{auto}"));
        assert_eq!(a["title"], "Auto keyword", "{name}: {a}");
        let r = follow
            .get(server.url(&format!("/{launch}")))
            .send()
            .unwrap();
        assert_eq!(
            r.headers()["location"],
            "https://example.com/launch",
            "{name}"
        );
    }
}
