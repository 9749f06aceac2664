//! Short links in two regions, each its own shardkit node with its own
//! storage: `us` (code groups `0-U`, the default region and the region of record of
//! aliases) and `cn` (groups `V-z`, hosts `*.cn`), 80 ms apart (round trip).
//!
//! Twice: as network namespaces made by the test (a veth pair between the regions
//! whose ends delay each packet 40 ms with `tc netem`, and `netem loss 100%` to cut a
//! region off), and on loopback with a delaying TCP proxy between the nodes (which
//! runs wherever the namespaces cannot be made; the namespace part then says why and
//! is skipped). Crossings are counted by the nodes' own metrics
//! (`shardkit_link_region_fetches_total` on the asking side,
//! `shardkit_link_region_served_total` on the answering side); the only timing used is
//! a structural one: a local (or cached) redirect does not pay the 80 ms round trip,
//! a first remote read does.

mod common;

use common::delay_proxy::DelayProxy;
use common::{link_client, netns, Server};
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Delay each way between the regions; the round trip is twice this.
const ONE_WAY_MS: u32 = 40;
const ROUND_TRIP: Duration = Duration::from_millis(2 * ONE_WAY_MS as u64);
/// `[regions] remote_ttl_ms` of the test nodes.
const TTL_MS: u64 = 2_000;
const PEER_KEY: &str = "peer-secret-0123456789";
const ADMIN_KEY: &str = "admin-secret-0123456789";

/// One region's node as the test reaches it.
struct Node {
    server: Server,
    base: String,
    key: Option<&'static str>,
}

impl Node {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn with_key(&self, request: RequestBuilder) -> RequestBuilder {
        match self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// A counter of its `/metrics` (0 when it has not been counted yet).
    fn metric(&self, c: &Client, series: &str) -> f64 {
        let text = self
            .with_key(c.get(self.url("/metrics")))
            .send()
            .unwrap()
            .text()
            .unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    fn create(&self, c: &Client, body: Value) -> Value {
        let r = self
            .with_key(c.post(self.url("/api/links")))
            .json(&body)
            .send()
            .unwrap();
        let status = r.status();
        let text = r.text().unwrap();
        assert_eq!(status, 201, "{body} answered {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// `GET /{code}`: status, Location, and how long it took.
    fn follow(&self, c: &Client, code: &str) -> (u16, Option<String>, Duration) {
        let start = Instant::now();
        let r = c.get(self.url(&format!("/{code}"))).send().unwrap();
        let took = start.elapsed();
        let location = r
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_string());
        (r.status().as_u16(), location, took)
    }

    fn link(&self, c: &Client, code: &str) -> (u16, Value) {
        let r = self
            .with_key(c.get(self.url(&format!("/api/links/{code}"))))
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }
}

/// The settings of region `this` (`us` or `cn`), its peer at `peer_url`.
fn config(this: &str, http: &str, peer_url: &str, key: Option<&str>) -> String {
    let peer = if this == "us" { "cn" } else { "us" };
    let key = key
        .map(|k| format!("api_key = \"{k}\"\n"))
        .unwrap_or_default();
    format!(
        "http = \"{http}\"\nresp = \"127.0.0.1:0\"\n{key}\
         [links]\ncreate_per_second = 0\n\
         [regions]\nthis = \"{this}\"\ndefault = \"us\"\npeer_key = \"{PEER_KEY}\"\n\
         remote_ttl_ms = {TTL_MS}\npeer_timeout_ms = 500\n\
         [regions.peers]\n{peer} = \"{peer_url}\"\n\
         [regions.hosts]\n\".cn\" = \"cn\"\n\
         [regions.groups]\nus = \"0-U\"\ncn = \"V-z\"\n"
    )
}

fn start(wrapper: &[&str], dir: &Path, name: &str, config_text: &str) -> Server {
    let data = dir.join(name);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, config_text).unwrap();
    Server::try_start_in(wrapper, &data, &["--config", file.to_str().unwrap()], &[])
        .unwrap_or_else(|e| panic!("region {name} did not start: {e}"))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Whether `code` is in one of `region`'s groups.
fn in_groups(code: &str, region: &str) -> bool {
    let first = code.as_bytes()[0];
    let rank = shardkit_ids::base62::ALPHABET
        .iter()
        .position(|&c| c == first)
        .unwrap();
    let u = shardkit_ids::base62::ALPHABET
        .iter()
        .position(|&c| c == b'U')
        .unwrap();
    (rank <= u) == (region == "us")
}

/// The checks both variants run; `cut(true)` cuts `cn` off, `cut(false)` mends it.
fn scenario(us: &Node, cn: &Node, cut: &dyn Fn(bool)) {
    let c = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let _ = link_client;

    // Creates: homed by host, forwarded to the home, overridden per link; aliases in `us`.
    let l_us = us.create(&c, json!({"url": "https://shop.example.com/a"}));
    assert_eq!(l_us["region"], "us");
    let l_cn = us.create(&c, json!({"url": "https://www.example.cn/b"}));
    assert_eq!(l_cn["region"], "cn", "{l_cn}");
    let l_cn_b = cn.create(&c, json!({"url": "https://news.example.cn/c"}));
    let l_from_cn = cn.create(&c, json!({"url": "https://example.org/d"}));
    assert_eq!(
        l_from_cn["region"], "us",
        "a .org link made in cn lives in us"
    );
    let aliased = cn.create(
        &c,
        json!({"url": "https://www.example.cn/e", "alias": "cn-promo"}),
    );
    assert_eq!(
        aliased["region"], "us",
        "aliases live in the region of record"
    );
    let chosen = us.create(&c, json!({"url": "https://example.com/f", "region": "cn"}));
    assert_eq!(chosen["region"], "cn");
    let limited = cn.create(
        &c,
        json!({"url": "https://www.example.cn/max", "max_visits": 2}),
    );
    let uncached = cn.create(
        &c,
        json!({"url": "https://www.example.cn/never-read-in-us"}),
    );
    for (link, region) in [
        (&l_us, "us"),
        (&l_cn, "cn"),
        (&l_cn_b, "cn"),
        (&l_from_cn, "us"),
        (&aliased, "us"),
        (&chosen, "cn"),
    ] {
        let code = link["code"].as_str().unwrap();
        assert_eq!(code.len(), 7, "{link}");
        assert!(
            in_groups(code, region),
            "{code} is not in {region}'s groups"
        );
    }
    let code = |l: &Value| l["code"].as_str().unwrap().to_string();
    let (l_us, l_cn, l_cn_b, limited, uncached) = (
        code(&l_us),
        code(&l_cn),
        code(&l_cn_b),
        code(&limited),
        code(&uncached),
    );
    // An unknown region, or an alias outside the region of record, is refused before
    // anything crosses.
    let r = us
        .with_key(c.post(us.url("/api/links")))
        .json(&json!({"url": "https://a.example.com/", "region": "eu"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 421);
    assert_eq!(r.json::<Value>().unwrap()["region"], "eu");
    let r = us
        .with_key(c.post(us.url("/api/links")))
        .json(&json!({"url": "https://a.example.com/", "alias": "x-y", "region": "cn"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);

    // A local redirect never crosses regions, and does not pay the round trip.
    let fetches = "shardkit_link_region_fetches_total{region=\"cn\"}";
    let served = "shardkit_link_region_served_total{route=\"link\"}";
    let (fetched_before, served_before) = (us.metric(&c, fetches), cn.metric(&c, served));
    let mut local = Vec::new();
    for _ in 0..9 {
        let (status, location, took) = us.follow(&c, &l_us);
        assert_eq!(status, 302);
        assert_eq!(location.as_deref(), Some("https://shop.example.com/a"));
        local.push(took);
    }
    assert_eq!(us.metric(&c, fetches), fetched_before);
    assert_eq!(
        cn.metric(&c, served),
        served_before,
        "a local redirect asked cn"
    );
    let local = median(local);
    assert!(
        local < ROUND_TRIP,
        "a local redirect took {local:?}, as long as the {ROUND_TRIP:?} between regions"
    );

    // A remote link crosses once, then is served here.
    let (status, location, first) = us.follow(&c, &l_cn);
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://www.example.cn/b"))
    );
    assert!(
        first >= ROUND_TRIP,
        "the first read of a cn link took {first:?}: it did not cross"
    );
    let mut cached = Vec::new();
    for _ in 0..9 {
        let (status, _, took) = us.follow(&c, &l_cn);
        assert_eq!(status, 302);
        cached.push(took);
    }
    assert_eq!(
        us.metric(&c, fetches),
        fetched_before + 1.0,
        "one fetch for ten redirects"
    );
    assert_eq!(cn.metric(&c, served), served_before + 1.0);
    let cached = median(cached);
    assert!(
        cached < ROUND_TRIP,
        "a cached remote redirect took {cached:?}"
    );
    println!("local {local:?}, remote first {first:?}, remote cached {cached:?}");

    // Clicks are counted where the redirect happened and summed on read, from either side.
    for _ in 0..3 {
        assert_eq!(cn.follow(&c, &l_cn).0, 302);
    }
    for node in [us, cn] {
        let (status, view) = node.link(&c, &l_cn);
        assert_eq!(status, 200, "{view}");
        assert_eq!(view["clicks"], 13, "{view}");
        assert_eq!(
            view["clicks_by_region"],
            json!({"us": 10, "cn": 3}),
            "{view}"
        );
        assert_eq!(view["region"], "cn");
        let today: u64 = view["daily"].as_array().unwrap().last().unwrap()["clicks"]
            .as_u64()
            .unwrap();
        assert_eq!(today, 13, "{view}");
        assert!(view.get("clicks_partial").is_none(), "{view}");
    }

    // A remote link's analytics are its home's, asked from either region (after the
    // home's click flush, so both answers read the same figures).
    std::thread::sleep(Duration::from_millis(500));
    let stats = |node: &Node| -> Value {
        let r = node
            .with_key(c.get(node.url(&format!("/api/links/{l_cn}/stats?by=day"))))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json().unwrap()
    };
    assert_eq!(stats(us)["code"], json!(l_cn));
    assert_eq!(stats(us), stats(cn));

    // A path that is neither a code nor an alias never goes into another region's URL.
    let from_us = "shardkit_link_region_fetches_total{region=\"us\"}";
    let asked = cn.metric(&c, from_us);
    assert_eq!(cn.follow(&c, "cn-promo%3Fx").0, 404);
    assert_eq!(cn.metric(&c, from_us), asked);

    // A visit limit holds across regions (counted at home).
    assert_eq!(us.follow(&c, &limited).0, 302);
    assert_eq!(cn.follow(&c, &limited).0, 302);
    assert_eq!(us.follow(&c, &limited).0, 410);
    assert_eq!(cn.follow(&c, &limited).0, 410);
    // An alias is read from its region of record.
    let (status, location, _) = cn.follow(&c, "cn-promo");
    assert_eq!(
        (status, location.as_deref()),
        (302, Some("https://www.example.cn/e"))
    );

    // cn cut off: local links redirect, cached cn links within the bound, others 503.
    assert_eq!(us.follow(&c, &l_cn_b).0, 302, "warming the cache");
    cut(true);
    assert_eq!(
        us.follow(&c, &l_cn_b).0,
        302,
        "a cached remote link while cn is cut off"
    );
    assert_eq!(us.follow(&c, &l_us).0, 302);
    let r = c.get(us.url(&format!("/{uncached}"))).send().unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["x-shardkit-region"], "cn");
    assert!(r.text().unwrap().contains("region cn"));
    let (status, view) = us.link(&c, &l_us);
    assert_eq!(status, 200);
    assert_eq!(view["clicks_partial"], true, "{view}");
    assert_eq!(view["regions_unreachable"], json!(["cn"]), "{view}");
    let r = us
        .with_key(c.post(us.url("/api/links")))
        .json(&json!({"url": "https://www.example.cn/while-cut"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.json::<Value>().unwrap()["region"], "cn");
    std::thread::sleep(Duration::from_millis(TTL_MS + 100));
    assert_eq!(
        us.follow(&c, &l_cn_b).0,
        503,
        "a remote link is never served past remote_ttl_ms"
    );
    cut(false);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(us.follow(&c, &l_cn_b).0, 302, "back once cn is reachable");

    // A delete in the home region reaches the other regions within the bound.
    let r = cn
        .with_key(c.delete(cn.url(&format!("/api/links/{l_cn_b}"))))
        .send()
        .unwrap();
    assert_eq!(r.status(), 204);
    std::thread::sleep(Duration::from_millis(TTL_MS + 100));
    assert_eq!(
        us.follow(&c, &l_cn_b).0,
        404,
        "a deleted link past the bound"
    );
    // A change made through a region (forwarded home) is seen there at once.
    let r = us
        .with_key(c.patch(us.url(&format!("/api/links/{l_cn}"))))
        .json(&json!({"url": "https://www.example.cn/moved"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let (_, location, _) = us.follow(&c, &l_cn);
    assert_eq!(location.as_deref(), Some("https://www.example.cn/moved"));
}

#[test]
fn regions_as_network_namespaces() {
    if let Some(why) = netns::unavailable() {
        eprintln!("skipping the namespace part: {why}; the loopback variant still runs");
        return;
    }
    let mut regions = match netns::Regions::make(2) {
        Ok(regions) => regions,
        Err(why) => {
            eprintln!(
                "skipping the namespace part: network namespaces cannot be made here ({why})"
            );
            return;
        }
    };
    // Between the regions: a veth pair with netem on both ends; where the kernel has no
    // netem, a delaying proxy in the root namespace (each region reaches it over its
    // own link), which a cut leaves unanswered as a link losing every packet would.
    let delay = Duration::from_millis(u64::from(ONE_WAY_MS));
    let (proxies, peer_urls) = match regions.join_with_netem(ONE_WAY_MS) {
        Ok(()) => {
            let urls = [
                format!("http://{}:8080", regions.address_of(1, 0)),
                format!("http://{}:8080", regions.address_of(0, 1)),
            ];
            (None, urls)
        }
        Err(why) => {
            eprintln!(
                "tc netem is not available here ({why}): the {ONE_WAY_MS} ms each way between the \
                 namespaces comes from a delaying proxy in the root namespace"
            );
            let to_cn = DelayProxy::start_on(&regions.regions[0].test_side, delay);
            let to_us = DelayProxy::start_on(&regions.regions[1].test_side, delay);
            to_cn.set_target(
                format!("{}:8080", regions.regions[1].from_test)
                    .parse()
                    .unwrap(),
            );
            to_us.set_target(
                format!("{}:8080", regions.regions[0].from_test)
                    .parse()
                    .unwrap(),
            );
            let urls = [
                format!("http://{}:{}", regions.regions[0].test_side, to_cn.port()),
                format!("http://{}:{}", regions.regions[1].test_side, to_us.port()),
            ];
            (Some((to_us, to_cn)), urls)
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let us = start(
        &regions.exec(0),
        dir.path(),
        "us",
        &config("us", "0.0.0.0:8080", &peer_urls[0], Some(ADMIN_KEY)),
    );
    let cn = start(
        &regions.exec(1),
        dir.path(),
        "cn",
        &config("cn", "0.0.0.0:8080", &peer_urls[1], Some(ADMIN_KEY)),
    );
    let us = Node {
        server: us,
        base: format!("http://{}:8080", regions.regions[0].from_test),
        key: Some(ADMIN_KEY),
    };
    let cn = Node {
        server: cn,
        base: format!("http://{}:8080", regions.regions[1].from_test),
        key: Some(ADMIN_KEY),
    };
    // The peer routes take the peer key only.
    let c = Client::new();
    let peer_route = us.url("/api/regions/clicks/1?first_day=1&last_day=2");
    let r = c.get(&peer_route).bearer_auth(ADMIN_KEY).send().unwrap();
    assert_eq!(r.status(), 401);
    let r = c.get(&peer_route).bearer_auth(PEER_KEY).send().unwrap();
    assert_eq!(r.status(), 200);
    let cut = |cut: bool| match &proxies {
        Some((_, to_cn)) => to_cn.set_cut(cut),
        None => regions.cut_off(1, cut, ONE_WAY_MS).unwrap(),
    };
    scenario(&us, &cn, &cut);
    drop((us.server, cn.server));
}

#[test]
fn regions_on_loopback_through_a_delaying_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(u64::from(ONE_WAY_MS));
    let (to_us, to_cn) = (DelayProxy::start(delay), DelayProxy::start(delay));
    let us = start(
        &[],
        dir.path(),
        "us",
        &config(
            "us",
            "127.0.0.1:0",
            &format!("http://127.0.0.1:{}", to_cn.port()),
            None,
        ),
    );
    let cn = start(
        &[],
        dir.path(),
        "cn",
        &config(
            "cn",
            "127.0.0.1:0",
            &format!("http://127.0.0.1:{}", to_us.port()),
            None,
        ),
    );
    to_us.set_target(us.http);
    to_cn.set_target(cn.http);
    let us = Node {
        base: format!("http://{}", us.http),
        server: us,
        key: None,
    };
    let cn = Node {
        base: format!("http://{}", cn.http),
        server: cn,
        key: None,
    };
    scenario(&us, &cn, &|cut| to_cn.set_cut(cut));
}

#[test]
fn a_store_holding_links_in_groups_given_away_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // One region first: codes land in every group.
    let plain = Server::start(&data, &[]);
    let c = link_client();
    let mut first_chars = std::collections::BTreeSet::new();
    for i in 0..40 {
        let link = common::create_link(
            &c,
            &plain,
            json!({"url": format!("https://example.com/{i}")}),
        );
        first_chars.insert(link["code"].as_str().unwrap().as_bytes()[0]);
    }
    drop(plain);
    assert!(first_chars.iter().any(|&b| b > b'U'), "{first_chars:?}");
    let file = dir.path().join("us.toml");
    std::fs::write(
        &file,
        config("us", "127.0.0.1:0", "http://127.0.0.1:9", None),
    )
    .unwrap();
    let err = Server::try_start(&data, &["--config", file.to_str().unwrap()], &[])
        .err()
        .expect("a store with cn's groups must not start as us");
    assert!(err.contains("refusing to start as region \"us\""), "{err}");
    assert!(err.contains("now given to cn"), "{err}");
    // The refusal changed nothing: the store starts again as one region, whole.
    let again = Server::start(&data, &[]);
    let r = c.get(again.url("/api/links?limit=1000")).send().unwrap();
    let links: Value = r.json().unwrap();
    assert_eq!(
        links["links"].as_array().unwrap().len(),
        40,
        "nothing was lost"
    );
}
