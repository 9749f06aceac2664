//! PostgreSQL test databases: each test makes its own uniquely named databases on the
//! machine's PostgreSQL (standing in for separate servers) and drops them after, so
//! concurrent test runs never collide. The one copy: shardkit-pg's tests and the
//! server's tests (`crates/shardkit/tests/common/pg_db.rs`) both use it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The PostgreSQL URL tests start from (`SHARDKIT_PG_URL`).
pub fn pg_url() -> String {
    std::env::var("SHARDKIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// `url` with its database replaced by `db`.
pub fn with_db(url: &str, db: &str) -> String {
    let base = url.split('?').next().unwrap_or(url);
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    match base[scheme_end..].find('/') {
        Some(slash) => format!("{}/{db}", &base[..scheme_end + slash]),
        None => format!("{base}/{db}"),
    }
}

/// A fresh database name unique to this process and call.
pub fn unique_name(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "sk_{tag}_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos % 100_000
    )
}

/// A PostgreSQL database that exists for one test.
pub struct PgDb {
    /// Its name.
    pub name: String,
    /// A URL connecting to it.
    pub url: String,
}

impl PgDb {
    /// Creates a fresh database.
    pub async fn create(tag: &str) -> Self {
        let name = unique_name(tag);
        let admin = shardkit_pg::connect::connect(&pg_url())
            .await
            .expect("PostgreSQL at SHARDKIT_PG_URL");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create database");
        Self {
            url: with_db(&pg_url(), &name),
            name,
        }
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs inside the test's runtime: do the async work on a thread of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(admin) = shardkit_pg::connect::connect(&pg_url()).await {
                    let _ = admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// Runs a future to completion on a throwaway runtime (for sync tests).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// `PgDb::create` for sync tests.
pub fn pg_db(tag: &str) -> PgDb {
    let tag = tag.to_string();
    std::thread::spawn(move || block_on(PgDb::create(&tag)))
        .join()
        .expect("create database")
}
