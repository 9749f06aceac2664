//! Many clients creating links at once share durable commits (the link writer's group
//! commit). Killed with SIGKILL in the middle, the server must still have every link it
//! acknowledged, each at the URL it was given, and never hand one code to two links.

mod common;

use common::Server;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CLIENTS: usize = 50;
const CREATES_PER_CLIENT: usize = 2_000;

fn start(dir: &std::path::Path) -> Server {
    Server::start_with_config(dir, "[links]\ncreate_per_second = 0\n")
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A pause between 300 and 1,800 ms, different on every run.
fn random_pause() -> Duration {
    let mut bytes = [0u8; 2];
    getrandom::fill(&mut bytes).unwrap();
    Duration::from_millis(300 + u64::from(u16::from_le_bytes(bytes)) % 1_500)
}

#[test]
fn every_acknowledged_create_survives_sigkill_and_no_code_is_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let base = server.url("/api/links");
    // code -> url of every create the server acknowledged with 201.
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let killed = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let (base, acked, killed) = (base.clone(), Arc::clone(&acked), Arc::clone(&killed));
            std::thread::spawn(move || {
                let c = client();
                for i in 0..CREATES_PER_CLIENT {
                    let url = format!("https://example.org/client{n}/link{i}");
                    let Ok(response) = c.post(&base).json(&json!({ "url": url })).send() else {
                        assert!(
                            killed.load(Ordering::SeqCst),
                            "a request failed before the kill"
                        );
                        return;
                    };
                    let status = response.status().as_u16();
                    let Ok(body) = response.json::<Value>() else {
                        assert!(
                            killed.load(Ordering::SeqCst),
                            "a body was cut before the kill"
                        );
                        return;
                    };
                    assert_eq!(status, 201, "{body}");
                    let code = body["code"].as_str().unwrap().to_string();
                    acked.lock().unwrap().push((code, url));
                }
            })
        })
        .collect();
    std::thread::sleep(random_pause());
    killed.store(true, Ordering::SeqCst);
    server.child.kill().unwrap(); // SIGKILL
    let _ = server.child.wait();
    for c in clients {
        c.join().unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(
        acked.len() >= CLIENTS,
        "too few creates before the kill to test anything: {}",
        acked.len()
    );
    let codes: HashSet<&str> = acked.iter().map(|(code, _)| code.as_str()).collect();
    assert_eq!(codes.len(), acked.len(), "a code was given to two links");

    let server = start(dir.path());
    let c = client();
    let mut wrong: HashMap<String, String> = HashMap::new();
    for (code, url) in &acked {
        let response = c
            .get(server.url(&format!("/api/links/{code}")))
            .send()
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().unwrap();
        if status != 200 || body["url"] != url.as_str() {
            wrong.insert(code.clone(), format!("{status} {body}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} acknowledged links are missing or changed after SIGKILL, e.g. {:?}",
        wrong.len(),
        acked.len(),
        wrong.iter().next()
    );
    // Codes minted after the restart are new ones, never one handed out before.
    for i in 0..200 {
        let response = c
            .post(server.url("/api/links"))
            .json(&json!({ "url": format!("https://example.org/after/{i}") }))
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        let body: Value = response.json().unwrap();
        let code = body["code"].as_str().unwrap();
        assert!(
            !codes.contains(code),
            "{code} was handed out again after the restart"
        );
    }
    eprintln!("{} creates acknowledged before SIGKILL", acked.len());
}

#[test]
fn concurrent_creates_share_commits() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let base = server.url("/api/links");
    let clients: Vec<_> = (0..16)
        .map(|n| {
            let base = base.clone();
            std::thread::spawn(move || {
                let c = client();
                for i in 0..100 {
                    let response = c
                        .post(&base)
                        .json(&json!({ "url": format!("https://example.org/{n}/{i}") }))
                        .send()
                        .unwrap();
                    assert_eq!(response.status().as_u16(), 201);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let metrics = client()
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
            .trim()
            .parse()
            .unwrap()
    };
    let (commits, writes) = (
        value("shardkit_link_commits_total"),
        value("shardkit_link_writes_total"),
    );
    assert_eq!(writes, 1_600, "every create is one write");
    assert!(
        commits < writes,
        "{commits} commits for {writes} writes: none shared"
    );
    eprintln!("{writes} creates in {commits} commits");
}
