//! The dashboard (`/ui/dashboard`) in a real browser, as a person uses it: asked for
//! the API key, they page through every link, search by URL and tag, sort by clicks,
//! edit a link (URL, tags, visit limit, a redirect rule) and delete one, and read the
//! whole site's top links, referrers and countries over the days they choose, every
//! label whole.

mod common;

use common::browser::{chromium_or_skip, Browser};
use common::visitors::{click, geo_config, Visitor, CHROME_WINDOWS, GERMANY, PHONE_JP};
use common::Server;
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const KEY: &str = "dashboard-key-0123456789abcdef";
const LONG_HOST: &str = "a-rather-long-subdomain-of-the-news-site.news.ycombinator.com";

fn api(server: &Server, method: reqwest::Method, path: &str) -> RequestBuilder {
    Client::new()
        .request(method, server.url(path))
        .bearer_auth(KEY)
}

fn rows(browser: &mut Browser) -> Value {
    browser.eval("[...document.querySelectorAll('#links tbody tr')].map(r => r.querySelector('a.short').textContent.split('/').pop() + '=' + r.querySelector('td.clicks').textContent)")
}

/// Clicks `button` (a CSS selector inside it) in the row whose short link ends `/{path}`.
fn press(browser: &mut Browser, path: &str, button: &str) {
    let pressed = browser.eval(&format!(
        "(() => {{ const row = [...document.querySelectorAll('#links tbody tr')] \
           .find(r => r.querySelector('a.short').textContent.endsWith('/{path}')); \
           if (!row) return false; row.querySelector({button:?}).click(); return true; }})()"
    ));
    assert_eq!(pressed, json!(true), "no row for /{path}");
}

#[test]
fn a_person_pages_searches_sorts_edits_and_deletes_links_and_reads_the_site_stats() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = geo_config(dir.path(), 50);
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("SHARDKIT_CONFIG", config.to_str().unwrap()),
            ("SHARDKIT_API_KEY", KEY),
        ],
    );
    // 20 plain links, then 5 aliased news links: 25, newest last.
    let mut codes = Vec::new();
    for i in 0..25 {
        let body = if i < 20 {
            json!({"url": format!("https://example.com/page-{i}"), "tags": ["batch"]})
        } else {
            json!({"url": format!("https://news.example.net/story-{i}"), "alias": format!("news-{}", i - 20), "tags": ["news"]})
        };
        let made: Value = api(&server, reqwest::Method::POST, "/api/links")
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        codes.push(made["code"].as_str().unwrap().to_string());
    }
    let from_long_referrer = Visitor {
        ip: GERMANY,
        agent: CHROME_WINDOWS,
        referrer: Some(
            "https://a-rather-long-subdomain-of-the-news-site.news.ycombinator.com/item?id=1",
        ),
    };
    click(&server, "news-3", from_long_referrer, 4);
    click(&server, &codes[7], PHONE_JP, 2);
    // The analytics are written by the flusher: wait until the site's top has them.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let top: Value = api(&server, reqwest::Method::GET, "/api/stats/top?by=country")
            .send()
            .unwrap()
            .json()
            .unwrap();
        if top["values"].as_array().is_some_and(|v| v.len() == 2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the site's top never had the clicks: {top}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut browser = Browser::start(&binary);
    browser.goto(&server.url("/ui/dashboard"));
    // No key yet: the page asks for one, then lists the links newest first.
    browser.wait_for(
        "document.getElementById('keyform').hidden === false",
        "the request for a key",
    );
    browser.eval(&format!(
        "document.getElementById('key').value = {KEY:?}; \
         document.getElementById('keyform').requestSubmit(); true"
    ));
    browser.wait_for(
        "document.querySelectorAll('#links tbody tr').length === 20",
        "the first page",
    );
    assert_eq!(
        browser.eval("document.getElementById('summary').textContent"),
        json!("Links 1 to 20 of 25")
    );
    assert_eq!(rows(&mut browser)[0], json!("news-4=0"));
    browser.eval("document.getElementById('next').click(); true");
    browser.wait_for(
        "document.querySelectorAll('#links tbody tr').length === 5",
        "the second page",
    );
    assert_eq!(
        browser.eval("document.getElementById('summary').textContent"),
        json!("Links 21 to 25 of 25")
    );
    assert_eq!(
        browser.eval("document.getElementById('next').disabled"),
        json!(true)
    );
    browser.eval("document.getElementById('prev').click(); true");
    browser.wait_for(
        "document.querySelectorAll('#links tbody tr').length === 20",
        "the first page again",
    );

    // Search by URL, then by tag.
    browser.eval(
        "document.getElementById('q').value = 'NEWS.example'; \
         document.getElementById('search').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('summary').textContent === 'Links 1 to 5 of 5'",
        "the search by URL",
    );
    browser.eval(
        "document.getElementById('q').value = ''; document.getElementById('tag').value = 'batch'; \
         document.getElementById('search').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('summary').textContent === 'Links 1 to 20 of 20'",
        "the search by tag",
    );
    browser.eval("document.getElementById('tag').value = ''; true");

    // Most clicks first.
    browser.eval(
        "const sort = document.getElementById('sort'); sort.value = 'clicks:desc'; \
         sort.dispatchEvent(new Event('change')); true",
    );
    browser.wait_for(
        "(document.querySelector('#links tbody tr td.clicks') || {}).textContent === '4'",
        "the most clicked first",
    );
    let sorted = rows(&mut browser);
    assert_eq!(sorted[0], json!("news-3=4"));
    assert_eq!(sorted[1], json!(format!("{}=2", codes[7])));

    // Edit a link: URL, tags, a visit limit and a rule.
    press(&mut browser, "news-3", "button.edit");
    browser.wait_for("document.getElementById('editor').open", "the editor");
    assert_eq!(
        browser.eval("document.getElementById('edit-url').value"),
        json!("https://news.example.net/story-23")
    );
    browser.eval(
        "document.getElementById('edit-url').value = 'https://news.example.net/moved'; \
         document.getElementById('edit-tags').value = 'news, top'; \
         document.getElementById('edit-max').value = '100'; \
         document.getElementById('edit-add-rule').click(); \
         const row = document.querySelector('#edit-rules .rule'); \
         row.querySelector('.rule-value').value = 'ios'; \
         row.querySelector('.rule-url').value = 'https://apps.example.net/'; \
         document.getElementById('edit-form').requestSubmit(); true",
    );
    browser.wait_for(
        "!document.getElementById('editor').open",
        "the editor to close",
    );
    let edited: Value = api(&server, reqwest::Method::GET, "/api/links/news-3")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(edited["url"], "https://news.example.net/moved", "{edited}");
    assert_eq!(edited["tags"], json!(["news", "top"]));
    assert_eq!(edited["max_visits"], 100);
    assert_eq!(
        edited["rules"],
        json!([{"device": "ios", "url": "https://apps.example.net/"}])
    );
    browser.wait_for(
        "document.body.textContent.includes('https://news.example.net/moved')",
        "the edited row",
    );
    // A bad edit shows the server's words in the editor and changes nothing.
    press(&mut browser, "news-3", "button.edit");
    browser.wait_for("document.getElementById('editor').open", "the editor");
    browser.eval(
        "document.querySelector('#edit-rules .rule .rule-value').value = 'tv'; \
         document.getElementById('edit-form').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('edit-error').textContent.includes('device')",
        "the message naming the bad rule",
    );
    browser.eval("document.getElementById('edit-cancel').click(); true");

    // Delete, in two clicks.
    let gone = codes[19].clone();
    press(&mut browser, &gone, "button.delete");
    assert_eq!(
        browser.eval("document.querySelector('button.delete.danger').textContent"),
        json!("Really delete?")
    );
    press(&mut browser, &gone, "button.delete");
    browser.wait_for(
        "document.getElementById('summary').textContent.endsWith('of 24')",
        "the list without the deleted link",
    );
    let status = api(&server, reqwest::Method::GET, &format!("/api/links/{gone}"))
        .send()
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 404);

    // The whole site over the chosen days; every label whole.
    browser.wait_for(
        "document.querySelectorAll('#top-referrers li .label').length > 0",
        "the site's referrers",
    );
    let labels = |browser: &mut Browser, list: &str| {
        browser.eval(&format!(
            "[...document.querySelectorAll('#{list} li .label')].map(l => l.textContent)"
        ))
    };
    assert_eq!(
        labels(&mut browser, "top-referrers"),
        json!([format!("{LONG_HOST} · 4"), "direct · 2"])
    );
    assert_eq!(
        labels(&mut browser, "top-countries"),
        json!(["DE · 4", "JP · 2"])
    );
    let top_links = labels(&mut browser, "top-links");
    assert!(
        top_links[0].as_str().unwrap().contains("/news-3 · 4"),
        "{top_links}"
    );
    assert_eq!(
        browser.eval(
            "[...document.querySelectorAll('ol.top .label')].filter(l => { \
               const box = l.getBoundingClientRect(), list = l.closest('ol').getBoundingClientRect(); \
               return l.scrollWidth > l.clientWidth + 1 || box.right > list.right + 1; \
             }).map(l => l.textContent)"
        ),
        json!([]),
        "labels cut or spilling out"
    );
    browser.eval(
        "document.getElementById('from').value = '2020-01-01'; \
         document.getElementById('to').value = '2020-01-31'; \
         document.getElementById('range').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('top-referrers').textContent.includes('No clicks')",
        "an empty range",
    );
}
