//! `shardkit links import --from yourls|bitly|kutt` against real exports: a YOURLS site
//! (its PHP source, `php -S`, its database on the MariaDB here, links made through its
//! own API, one clicked), imported from a `mysqldump` of its table and from its API; a
//! Kutt site (its source with its npm packages, `node`, PostgreSQL here) through its
//! API; Shlink's API answers, served by the test (Shlink's PHP packages come from
//! Packagist, which this machine does not reach); a Bitly CSV export. Each link keeps its path, URL, title, creation time and clicks;
//! a path already taken here is reported by its place in the source with nothing
//! imported; `--dry-run` changes nothing. The YOURLS part is skipped, loudly, when PHP
//! or the YOURLS source (`SHARDKIT_TEST_YOURLS_SRC`: a checkout, or a git directory)
//! is missing; the Kutt part without `SHARDKIT_TEST_KUTT` (`scripts/kutt`).

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

/// A Kutt site (`SHARDKIT_TEST_KUTT`, prepared by `scripts/kutt`) on `node`, its
/// tables made by its own migrations in a fresh PostgreSQL database.
struct Kutt {
    node: Child,
    base: String,
    db: String,
    key: String,
}

impl Drop for Kutt {
    fn drop(&mut self) {
        let _ = self.node.kill();
        let _ = self.node.wait();
        let _ = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-q", "-c"])
            .arg(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db))
            .output();
    }
}

impl Kutt {
    fn start() -> Option<Kutt> {
        let Some(dir) = std::env::var_os("SHARDKIT_TEST_KUTT").filter(|d| !d.is_empty()) else {
            eprintln!("\n\n*** SKIPPED the Kutt import: SHARDKIT_TEST_KUTT is not set (bash scripts/kutt prepares Kutt and prints it) ***\n\n");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let db = format!("sk_kutt_{}", std::process::id());
        let made = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-q"])
            .args([
                "-c",
                &format!("DROP DATABASE IF EXISTS {db}"),
                "-c",
                &format!("CREATE DATABASE {db}"),
            ])
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let env = [
            ("PORT", port.to_string()),
            ("DEFAULT_DOMAIN", format!("127.0.0.1:{port}")),
            ("DB_CLIENT", "pg".into()),
            ("DB_HOST", "127.0.0.1".into()),
            ("DB_PORT", "5432".into()),
            ("DB_NAME", db.clone()),
            ("DB_USER", "postgres".into()),
            ("DB_PASSWORD", String::new()),
            ("JWT_SECRET", "a-test-jwt-secret-0123456789".into()),
            ("NODE_ENV", "production".into()),
        ];
        let migrated = Command::new("node")
            .args(["node_modules/knex/bin/cli.js", "migrate:latest"])
            .current_dir(&dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(
            migrated.status.success(),
            "Kutt's migrations: {}",
            String::from_utf8_lossy(&migrated.stderr)
        );
        let node = Command::new("node")
            .args(["server/server.js", "--production"])
            .current_dir(&dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let mut site = Kutt {
            node,
            base,
            db,
            key: String::new(),
        };
        let c = Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let admin =
            serde_json::json!({"email": "admin@example.com", "password": "secret-password-1"});
        loop {
            let made = c
                .post(format!("{}/api/auth/create-admin", site.base))
                .json(&admin)
                .send();
            if made.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(Instant::now() < deadline, "Kutt never answered");
            std::thread::sleep(Duration::from_millis(200));
        }
        // The API key is made from a session: a login's token, as its cookie.
        let login: Value = c
            .post(format!("{}/api/auth/login", site.base))
            .json(&admin)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let token = login["token"]
            .as_str()
            .unwrap_or_else(|| panic!("no login: {login}"));
        let key: Value = c
            .post(format!("{}/api/auth/apikey", site.base))
            .header("Cookie", format!("token={token}"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        site.key = key["apikey"]
            .as_str()
            .unwrap_or_else(|| panic!("no API key: {key}"))
            .to_string();
        Some(site)
    }

    fn shorten(&self, body: Value) -> Value {
        let made: Value = Client::new()
            .post(format!("{}/api/v2/links", self.base))
            .header("X-API-KEY", &self.key)
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert!(made["address"].is_string(), "Kutt refused {body}: {made}");
        made
    }
}

#[test]
fn a_kutt_site_imports_from_its_api() {
    let Some(kutt) = Kutt::start() else {
        return;
    };
    kutt.shorten(serde_json::json!({"target": "https://example.com/launch", "customurl": "launch-day", "description": "Spring launch"}));
    let auto = kutt.shorten(serde_json::json!({"target": "https://example.com/auto"}))["address"]
        .as_str()
        .unwrap()
        .to_string();
    // A person's browser (Kutt counts no bots).
    let browser = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36")
        .build()
        .unwrap();
    for _ in 0..2 {
        let r = browser
            .get(format!("{}/launch-day", kutt.base))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 302);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed: Value = Client::new()
            .get(format!("{}/api/v2/links?limit=50", kutt.base))
            .header("X-API-KEY", &kutt.key)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let counted = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["address"] == "launch-day" && l["visit_count"] == 2);
        if counted {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Kutt never counted the visits: {listed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let base = kutt.base.clone();
    let args = [
        "--from",
        "kutt",
        base.as_str(),
        "--source-key",
        kutt.key.as_str(),
    ];
    let done = import(&server, &args);
    assert!(done.status.success(), "{}", text(&done));
    let (_, l) = get(&server, "/api/links/launch-day");
    assert_eq!(l["url"], "https://example.com/launch", "{l}");
    assert_eq!(l["title"], "Spring launch");
    assert_eq!(l["clicks"], 2);
    assert_eq!(
        get(&server, &format!("/api/links/{auto}")).1["url"],
        "https://example.com/auto"
    );
    // A link with a password cannot come along: named, and nothing imported.
    kutt.shorten(serde_json::json!({"target": "https://example.com/locked", "customurl": "locked-one", "password": "pw-12345"}));
    let dir = tempfile::tempdir().unwrap();
    let other = Server::start_with_config(dir.path(), "[links]\ncreate_per_second = 0\n");
    let refused = import(&other, &args);
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("locked-one")
            && said.contains("password")
            && said.contains("nothing was imported"),
        "{said}"
    );
    assert_eq!(get(&other, "/api/links?q=").1["total"], 0);
}

/// Shlink's short-URL list as its API answers it (the shapes of its own JavaScript
/// SDK's types): two pages. Shlink itself cannot run here (its PHP packages come from
/// Packagist, which this machine does not reach), so these are its answers, served.
fn shlink_page(page: u64) -> Value {
    let short = |code: &str, url: &str, domain: Value, visits: u64| {
        serde_json::json!({
            "shortCode": code, "shortUrl": format!("https://s.test/{code}"), "longUrl": url,
            "dateCreated": "2019-09-25T23:12:47+02:00",
            "visitsSummary": {"total": visits, "nonBots": visits, "bots": 0},
            "meta": {"validSince": null, "validUntil": null, "maxVisits": null},
            "tags": ["imported"], "domain": domain, "title": format!("Title of {code}"),
            "crawlable": false, "forwardQuery": true
        })
    };
    let data = match page {
        1 => vec![
            short("launch-day", "https://example.com/launch", Value::Null, 12),
            short("Ab3dE9x", "https://example.com/coded", Value::Null, 0),
        ],
        _ => vec![short(
            "away",
            "https://example.com/away",
            serde_json::json!("go.example"),
            3,
        )],
    };
    serde_json::json!({"shortUrls": {"data": data,
        "pagination": {"currentPage": page, "pagesCount": 2, "itemsPerPage": 2, "itemsInCurrentPage": data.len(), "totalItems": 3}}})
}

/// Serves [`shlink_page`] on a free port to requests with `X-Api-Key: shlink-key`.
fn shlink_api() -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let mut keyed = false;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                keyed |= header.to_ascii_lowercase().trim() == "x-api-key: shlink-key";
            }
            let page = first
                .split(['?', '&', ' '])
                .find_map(|p| p.strip_prefix("page="))
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            let (status, body) = if keyed && first.starts_with("GET /rest/v3/short-urls") {
                ("200 OK", shlink_page(page).to_string())
            } else {
                ("401 Unauthorized", r#"{"title":"Invalid API key","detail":"Provided API key does not exist or is invalid.","status":401}"#.to_string())
            };
            let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    base
}

#[test]
fn shlinks_short_urls_import_through_its_api_with_their_domains() {
    let api = shlink_api();
    let dir = tempfile::tempdir().unwrap();
    // Without go.example among our domains, the third short URL cannot come: named,
    // nothing imported.
    std::fs::create_dir_all(dir.path().join("one")).unwrap();
    let one =
        Server::start_with_config(&dir.path().join("one"), "[links]\ncreate_per_second = 0\n");
    let refused = import(
        &one,
        &["--from", "shlink", &api, "--source-key", "shlink-key"],
    );
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("`away`")
            && said.contains("go.example")
            && said.contains("nothing was imported"),
        "{said}"
    );
    assert_eq!(get(&one, "/api/links?q=").1["total"], 0);
    let wrong = import(&one, &["--from", "shlink", &api, "--source-key", "wrong"]);
    assert!(text(&wrong).contains("Invalid API key"), "{}", text(&wrong));
    // With it: every short URL, on its domain.
    std::fs::create_dir_all(dir.path().join("two")).unwrap();
    let two = Server::start_with_config(
        &dir.path().join("two"),
        "[links]\ncreate_per_second = 0\ndomains = [\"sho.rt\", \"go.example\"]\n",
    );
    let done = import(
        &two,
        &["--from", "shlink", &api, "--source-key", "shlink-key"],
    );
    assert!(done.status.success(), "{}", text(&done));
    let (_, l) = get(&two, "/api/links/launch-day");
    assert_eq!(l["url"], "https://example.com/launch");
    assert_eq!(l["title"], "Title of launch-day");
    assert_eq!(l["clicks"], 12);
    assert_eq!(l["created_at"], "2019-09-25T21:12:47.000Z");
    assert_eq!(l["tags"], serde_json::json!(["imported"]));
    assert_eq!(get(&two, "/api/links/Ab3dE9x").1["code"], "Ab3dE9x");
    assert_eq!(
        get(&two, "/api/links/away?domain=go.example").1["url"],
        "https://example.com/away"
    );
}
