//! The web page in a real browser: headless Chromium, driven over the DevTools
//! protocol (a WebSocket), fills in the form on `/`, gets a short link with its QR
//! code, follows it to a target page, and sees the click count on `/ui/links/{code}`
//! go up. Skipped, loudly, only when Chromium is missing and CI is not set;
//! `scripts/test` installs it.

mod common;

use common::browser::{chromium_or_skip, target_server, Browser};
use common::Server;
use serde_json::{json, Value};

#[test]
fn a_person_shortens_a_link_follows_it_and_sees_the_clicks() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let target = format!("http://127.0.0.1:{}/landing", target_server());
    let mut browser = Browser::start(&binary);

    browser.goto(&server.url("/"));
    browser.eval(&format!(
        "document.getElementById('url').value = {target:?}; document.getElementById('alias').value = 'from-the-form'; \
         document.getElementById('shorten').requestSubmit(); true"
    ));
    browser.wait_for(
        "document.getElementById('short').textContent.length > 0",
        "the short link",
    );
    let short = browser
        .eval("document.getElementById('short').href")
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(short, server.url("/from-the-form"));
    browser.wait_for(
        "document.getElementById('qr').complete && document.getElementById('qr').naturalWidth > 0",
        "the QR code image",
    );
    assert_eq!(
        browser.eval("document.getElementById('error').textContent"),
        json!("")
    );

    let stats = server.url("/ui/links/from-the-form");
    assert_eq!(browser.clicks_on(&stats), "0");
    for expected in ["1", "2"] {
        browser.goto(&short);
        browser.wait_for(
            "document.getElementById('arrived') !== null",
            "the target page",
        );
        assert_eq!(browser.eval("location.href"), json!(target));
        assert_eq!(browser.clicks_on(&stats), expected);
    }
    assert_eq!(
        browser.eval("document.querySelectorAll('svg.chart rect').length > 0"),
        json!(true)
    );

    // A taken alias shows the server's words on the form.
    browser.goto(&server.url("/"));
    browser.eval(&format!("document.getElementById('url').value = {target:?}; document.getElementById('alias').value = 'from-the-form'; document.getElementById('shorten').requestSubmit(); true"));
    browser.wait_for(
        "document.getElementById('error').textContent.includes('taken')",
        "the conflict message",
    );
}

#[test]
fn with_a_key_required_the_page_asks_for_it_and_then_creates_the_link() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = "page-key-0123456789abcdef";
    let server = Server::start(dir.path(), &[("SHARDKIT_API_KEY", key)]);
    let mut browser = Browser::start(&binary);
    browser.goto(&server.url("/"));
    // The page says up front that a key is needed.
    assert_eq!(
        browser.eval("document.getElementById('keyrow').hidden"),
        json!(false)
    );
    // Without the key: the page asks for it.
    browser.eval(
        "document.getElementById('url').value = 'https://example.com/keyed'; \
         document.getElementById('shorten').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('error').textContent.includes('API key')",
        "the request for a key",
    );
    // A wrong key is said to be wrong; the right one creates the link.
    browser.eval(
        "document.getElementById('key').value = 'wrong'; \
         document.getElementById('shorten').requestSubmit(); true",
    );
    browser.wait_for(
        "document.getElementById('error').textContent.includes('not accepted')",
        "the wrong-key message",
    );
    browser.eval(&format!(
        "document.getElementById('key').value = {key:?}; \
         document.getElementById('shorten').requestSubmit(); true"
    ));
    browser.wait_for(
        "document.getElementById('short').textContent.length > 0",
        "the short link",
    );
    assert_eq!(
        browser.eval("sessionStorage.getItem('shardkit-key')"),
        json!(key)
    );
}

#[test]
fn the_link_page_charts_show_the_visitors_on_a_phone_sized_screen() {
    use common::visitors::{
        click, geo_config, wait_for_stats, BOT, DESKTOP_DE, FIREFOX_NOWHERE, PHONE_JP,
    };
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = geo_config(dir.path(), 50);
    let server = Server::start(
        &dir.path().join("data"),
        &[("SHARDKIT_CONFIG", config.to_str().unwrap())],
    );
    let link: Value = reqwest::blocking::Client::new()
        .post(server.url("/api/links"))
        .json(&json!({ "url": "https://example.com/charted" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let code = link["code"].as_str().unwrap();
    click(&server, code, DESKTOP_DE, 3);
    click(&server, code, PHONE_JP, 2);
    click(&server, code, FIREFOX_NOWHERE, 1);
    click(&server, code, BOT, 4);
    wait_for_stats(&server, code, 6, 4);

    let mut browser = Browser::start(&binary);
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true }),
    );
    browser.goto(&server.url(&format!("/ui/links/{code}")));
    // What a reader sees: each bar's label and count as drawn text.
    let bars = |browser: &mut Browser, chart: &str| {
        browser.eval(&format!(
            "[...document.querySelectorAll('#{chart} g.bar')].map(g => \
             g.querySelector('text.label').textContent + '=' + g.querySelector('text.count').textContent)"
        ))
    };
    assert_eq!(
        bars(&mut browser, "chart-referrer"),
        json!(["news.example.com=3", "direct=2", "blog.example.org=1"])
    );
    assert_eq!(
        bars(&mut browser, "chart-country"),
        json!(["DE=3", "JP=2", "unknown=1"])
    );
    assert_eq!(
        bars(&mut browser, "chart-browser"),
        json!(["Chrome=3", "Safari=2", "Firefox=1"])
    );
    assert_eq!(
        bars(&mut browser, "chart-device"),
        json!(["desktop=4", "phone=2"])
    );
    assert_eq!(
        browser.eval("[document.getElementById('people').textContent, document.getElementById('bots').textContent]"),
        json!(["6", "4"])
    );
    // Every label drawn whole: its text is the value, and it lies inside its chart.
    assert_eq!(
        browser.eval(
            "[...document.querySelectorAll('svg.bars g.bar')].filter(g => { \
               const label = g.querySelector('text.label'); const box = label.getBBox(); \
               const room = label.ownerSVGElement.viewBox.baseVal.width; \
               return label.textContent !== g.dataset.value || box.x < -1 || box.x + box.width > room + 1; \
             }).map(g => g.dataset.value)"
        ),
        json!([]),
        "labels cut or clipped"
    );
    // Longer bars for more clicks, and nothing wider than the phone's screen.
    assert_eq!(
        browser.eval(
            "(() => { const w = [...document.querySelectorAll('#chart-referrer g.bar rect')].map(r => r.getBoundingClientRect().width); \
             return w[0] > w[1] && w[1] > w[2] && w[2] > 0; })()"
        ),
        json!(true)
    );
    assert_eq!(
        browser.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        json!(true),
        "the page scrolls sideways on a phone"
    );
}

/// A person adds two redirect rules on the form (one made and removed again, as a
/// slip is), gets the link, and a browser that speaks German lands on the German page
/// while one that does not lands on the link's URL.
#[test]
fn a_person_adds_redirect_rules_on_the_form_and_each_browser_lands_where_its_rule_says() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let target = format!("http://127.0.0.1:{}", target_server());
    let mut browser = Browser::start(&binary);
    browser.goto(&server.url("/"));
    // Fills a rule row the way a person does: pick the kind, type the value and URL.
    let fill = |kind: &str, value: &str, url: &str| {
        format!(
            "(() => {{ document.getElementById('add-rule').click(); \
               const row = [...document.querySelectorAll('#rules .rule')].pop(); \
               const kind = row.querySelector('.rule-kind'); kind.value = {kind:?}; \
               kind.dispatchEvent(new Event('change')); \
               row.querySelector('.rule-value').value = {value:?}; \
               row.querySelector('.rule-url').value = {url:?}; return true; }})()"
        )
    };
    browser.eval(&format!(
        "document.getElementById('url').value = '{target}/default'; \
         document.getElementById('alias').value = 'by-language'; true"
    ));
    browser.eval(&fill("query", "ref=news&debug", &format!("{target}/news")));
    assert_eq!(
        browser.eval("document.querySelector('#rules .rule-value').placeholder"),
        json!("ref=news&debug")
    );
    browser.eval(&fill("device", "tv", &format!("{target}/tv")));
    browser.eval("[...document.querySelectorAll('#rules .rule')].pop().querySelector('.rule-remove').click(); true");
    browser.eval(&fill("language", "de", &format!("{target}/de")));
    assert_eq!(
        browser.eval("document.querySelectorAll('#rules .rule').length"),
        json!(2)
    );
    browser.eval("document.getElementById('shorten').requestSubmit(); true");
    browser.wait_for(
        "document.getElementById('short').textContent.length > 0",
        "the short link",
    );
    let link: Value = reqwest::blocking::get(server.url("/api/links/by-language"))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        link["rules"],
        json!([
            {"query": {"debug": true, "ref": "news"}, "url": format!("{target}/news")},
            {"language": "de", "url": format!("{target}/de")},
        ]),
        "{link}"
    );

    let short = server.url("/by-language");
    for (language, lands) in [("de-DE,de;q=0.9", "/de"), ("fr-FR,fr;q=0.9", "/default")] {
        browser.call(
            "Emulation.setUserAgentOverride",
            json!({"userAgent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36", "acceptLanguage": language}),
        );
        browser.goto(&short);
        browser.wait_for(
            "document.getElementById('arrived') !== null",
            "the target page",
        );
        assert_eq!(
            browser.eval("location.href"),
            json!(format!("{target}{lands}")),
            "{language}"
        );
    }
    browser.goto(&format!("{short}?ref=news&debug"));
    browser.wait_for(
        "document.getElementById('arrived') !== null",
        "the target page",
    );
    assert_eq!(
        browser.eval("location.href"),
        json!(format!("{target}/news"))
    );

    // A bad rule shows the server's words on the form, naming it.
    browser.goto(&server.url("/"));
    browser.eval(&format!(
        "document.getElementById('url').value = '{target}/x'; true"
    ));
    browser.eval(&fill("country", "Germany", &format!("{target}/de")));
    browser.eval("document.getElementById('shorten').requestSubmit(); true");
    browser.wait_for(
        "document.getElementById('error').textContent.includes('country')",
        "the message naming the bad rule",
    );
}

/// With two domains, a person picks the second on the form: the link answers there
/// (`localhost`) and not at the default (`127.0.0.1`), and its page names its domain.
#[test]
fn a_person_picks_a_domain_on_the_form_and_the_link_answers_only_there() {
    let Some(binary) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_config(
        dir.path(),
        "[links]\ndomains = [\"127.0.0.1\", \"localhost\"]\n",
    );
    let port = server.url("").rsplit(':').next().unwrap().to_string();
    let target = format!("http://127.0.0.1:{}", target_server());
    let mut browser = Browser::start(&binary);
    browser.goto(&server.url("/"));
    assert_eq!(
        browser.eval("[...document.querySelectorAll('#domain option')].map(o => o.value)"),
        json!(["127.0.0.1", "localhost"])
    );
    browser.eval(&format!(
        "document.getElementById('url').value = '{target}/there'; \
         document.getElementById('alias').value = 'on-localhost'; \
         document.getElementById('domain').value = 'localhost'; \
         document.getElementById('shorten').requestSubmit(); true"
    ));
    browser.wait_for(
        "document.getElementById('short').textContent.length > 0",
        "the short link",
    );
    assert_eq!(
        browser.eval("document.getElementById('short').textContent"),
        json!("http://localhost/on-localhost")
    );
    let stats = browser.eval("document.getElementById('stats').href");
    assert!(
        stats
            .as_str()
            .unwrap()
            .ends_with("/ui/links/on-localhost?domain=localhost"),
        "{stats}"
    );
    browser.goto(&format!("http://localhost:{port}/on-localhost"));
    browser.wait_for(
        "document.getElementById('arrived') !== null",
        "the target page",
    );
    assert_eq!(
        browser.eval("location.href"),
        json!(format!("{target}/there"))
    );
    browser.goto(&server.url("/on-localhost"));
    browser.wait_for(
        "document.title.length > 0",
        "the page at the default domain",
    );
    assert!(
        browser
            .eval("document.body.textContent")
            .as_str()
            .unwrap()
            .contains("on-localhost"),
        "the 404 page names the path"
    );
    assert_eq!(
        browser.eval("location.href"),
        json!(server.url("/on-localhost"))
    );
    browser.goto(stats.as_str().unwrap());
    browser.wait_for(
        "document.getElementById('domain') !== null",
        "the link page",
    );
    assert_eq!(
        browser.eval("document.getElementById('domain').textContent"),
        json!("localhost")
    );
}
