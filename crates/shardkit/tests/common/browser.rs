//! Headless Chromium driven over the DevTools protocol (a WebSocket), for the tests
//! that use the web pages as a person does; and a target page for short links to land
//! on. Skipped, loudly, only when Chromium is missing and CI is not set; `scripts/test`
//! installs it.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// The Chromium binary on the PATH, if any.
pub fn chromium() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(str::to_string)
}

/// The browser, or `None` (the test is skipped, loudly) when Chromium is missing and CI
/// is not set; in CI a missing Chromium fails the test.
pub fn chromium_or_skip() -> Option<String> {
    let found = chromium();
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI is set but Chromium is not installed: scripts/test installs it (apt-get install -y chromium)");
        eprintln!("\n\n*** SKIPPED the browser test: Chromium is not installed (apt-get install -y chromium) ***\n\n");
    }
    found
}

/// A page the short link points at: answers every request with a small HTML page.
pub fn target_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_target(stream));
        }
    });
    port
}

fn serve_target(mut stream: TcpStream) {
    let mut buf = [0u8; 4096];
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.read(&mut buf);
    let body = "<!doctype html><title>target</title><p id=\"arrived\">arrived</p>";
    let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
}

/// A headless Chromium and a DevTools connection to its first tab.
pub struct Browser {
    child: Child,
    tab: WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// Starts headless Chromium and connects to its first tab.
    pub fn start(binary: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "chromium exited before it listened"
            );
            if let Some(rest) = line
                .trim()
                .strip_prefix("DevTools listening on ws://127.0.0.1:")
            {
                break rest.split('/').next().unwrap().parse::<u16>().unwrap();
            }
        };
        std::thread::spawn(move || for _ in stderr.lines() {});
        let tabs: Value = reqwest::blocking::get(format!("http://127.0.0.1:{port}/json/list"))
            .unwrap()
            .json()
            .unwrap();
        let ws = tabs
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .unwrap()["webSocketDebuggerUrl"]
            .as_str()
            .unwrap()
            .to_string();
        let (tab, _) = tungstenite::connect(ws).expect("connect to the tab");
        Browser {
            child,
            tab,
            next_id: 0,
            _profile: profile,
        }
    }

    /// One DevTools call; its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.tab
            .send(Message::Text(
                json!({ "id": id, "method": method, "params": params })
                    .to_string()
                    .into(),
            ))
            .unwrap();
        loop {
            let message = self.tab.read().unwrap();
            let Ok(text) = message.into_text() else {
                continue;
            };
            let value: Value = serde_json::from_str(text.as_str()).unwrap();
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        result["result"]["value"].clone()
    }

    /// Navigates and waits for the page to load.
    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(&format!("location.href.startsWith({:?}) || document.readyState === 'complete' && location.href !== 'about:blank'", url.trim_end_matches('/')), "navigation");
        self.wait_for("document.readyState === 'complete'", "page load");
    }

    /// Polls `expression` until it is true (10 s at most).
    pub fn wait_for(&mut self, expression: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.eval(expression) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} ({expression}); page: {}",
                self.eval("document.documentElement.outerHTML")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The click count a link page shows.
    pub fn clicks_on(&mut self, page: &str) -> String {
        self.goto(page);
        self.eval("document.getElementById('clicks').textContent")
            .as_str()
            .unwrap()
            .to_string()
    }
}
