//! The click flusher alone, in process: `ROUNDS` flushes of `CLICKS` clicks
//! each (a browser User-Agent and a Referer on every click), written to a fresh engine
//! with no fsync; `new`: every click is a new link's first of the day (what a uniform
//! draw over many links gives), `again`: the first round's links clicked again. Each
//! click is also counted in the click book ([`ClickBook::hit`], written with the
//! analytics, as the server's flusher does), so the figure is what the flusher spends
//! on a click whole. Prints the time per click. For a figure that this VM's noise does not move, run it under
//! `valgrind --tool=callgrind` and compare two builds' instructions in
//! `store::write` (`callgrind_annotate --inclusive=yes`): bench/notes/runs.md.
//!
//! ```sh
//! cargo run --release -p shardkit-link-service --example analytics_flush -- 50000 4 new
//! ```

use shardkit_link_service::analytics::clicks::{self, ClickBook};
use shardkit_link_service::analytics::{Analytics, RawClick};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                      (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let clicks: u64 = args.next().map_or(Ok(50_000), |a| a.parse())?;
    let rounds: u64 = args.next().map_or(Ok(4), |a| a.parse())?;
    let again = match args.next().as_deref() {
        None | Some("new") => false,
        Some("again") => true,
        Some(other) => return Err(format!("expected new or again, not {other}").into()),
    };
    if clicks > shardkit_link_service::analytics::QUEUE as u64 {
        return Err(format!(
            "at most {} clicks a round",
            shardkit_link_service::analytics::QUEUE
        )
        .into());
    }
    let dir = tempfile::tempdir()?;
    let options = shardkit_counters::Options {
        fsync: shardkit_counters::FsyncPolicy::No,
        snapshot_log_bytes: None,
        ..shardkit_counters::Options::default()
    };
    let engine = shardkit_counters::Engine::open(dir.path(), options)?;
    clicks::ensure_counters(&engine)?;
    let book = ClickBook::default();
    let analytics = Analytics::open(&engine, None)?;
    let mut spent = std::time::Duration::ZERO;
    for round in 0..rounds {
        let first = if again { 0 } else { round * clicks };
        for i in first..first + clicks {
            let id = 7_300_000_000_000_000_000 + i * 7919;
            book.hit(&engine, id, 20_418, None);
            analytics.record(RawClick {
                id,
                day: 20_418,
                referrer: Some(format!("https://news{}.example.com/a", i % 40).into()),
                agent: Some(CHROME.into()),
                ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            });
        }
        let start = Instant::now();
        let written = analytics.flush(&engine, &book)?;
        spent += start.elapsed();
        assert_eq!(written as u64, clicks, "every click classified and written");
        let counted = book.total(&engine, 7_300_000_000_000_000_000 + first * 7919);
        assert_eq!(
            counted,
            if again { round + 1 } else { 1 },
            "the clicks written"
        );
    }
    println!(
        "{} clicks in {rounds} flushes: {:.2} µs a click",
        clicks * rounds,
        spent.as_secs_f64() * 1e6 / (clicks * rounds) as f64
    );
    Ok(())
}
