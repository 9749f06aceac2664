//! Test databases: each test makes its own uniquely named databases on the machine's
//! PostgreSQL (standing in for separate servers) and MariaDB, and drops them after, so
//! concurrent test runs never collide.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The PostgreSQL URL tests start from (`SHARDKIT_PG_URL`).
pub fn pg_url() -> String {
    std::env::var("SHARDKIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The MariaDB URL tests start from (`SHARDKIT_MYSQL_URL`).
pub fn mysql_url() -> String {
    std::env::var("SHARDKIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
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

/// Runs one admin statement on MariaDB at `url` (a fresh connection each time).
pub async fn mysql_exec(url: &str, sql: &str) {
    use mysql_async::prelude::Queryable;
    let mut conn = mysql_async::Conn::from_url(url)
        .await
        .expect("MariaDB at SHARDKIT_MYSQL_URL");
    conn.query_drop(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.disconnect().await;
}

/// Reads one column of u64 from MariaDB at `url`.
pub async fn mysql_column(url: &str, sql: &str) -> Vec<u64> {
    use mysql_async::prelude::Queryable;
    let mut conn = mysql_async::Conn::from_url(url).await.expect("MariaDB");
    let rows: Vec<u64> = conn
        .query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.disconnect().await;
    rows
}

/// A MariaDB database that exists for one test (a stand-in for one ticket server).
pub struct MyDb {
    /// Its name.
    pub name: String,
    /// A URL connecting to it.
    pub url: String,
}

impl MyDb {
    /// Creates a fresh database.
    pub fn create(tag: &str) -> Self {
        let name = unique_name(tag);
        block_on(mysql_exec(&mysql_url(), &format!("CREATE DATABASE {name}")));
        Self {
            url: with_db(&mysql_url(), &name),
            name,
        }
    }
}

impl Drop for MyDb {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {}", self.name);
        let _ = std::thread::spawn(move || block_on(mysql_exec(&mysql_url(), &sql))).join();
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
