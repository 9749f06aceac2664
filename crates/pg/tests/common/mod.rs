//! Test databases: each test makes its own uniquely named databases on the machine's
//! PostgreSQL (standing in for separate servers, `postgres.rs`) and MariaDB, and drops
//! them after, so concurrent test runs never collide.
#![allow(dead_code)]

mod postgres;

pub use postgres::*;

/// The MariaDB URL tests start from (`SHARDKIT_MYSQL_URL`).
pub fn mysql_url() -> String {
    std::env::var("SHARDKIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
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
