//! A PostgreSQL database of its own for one test (a stand-in for one server of a
//! cluster) on the machine's PostgreSQL (`SHARDKIT_PG_URL`), dropped at the end.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The PostgreSQL URL tests start from.
pub fn pg_url() -> String {
    std::env::var("SHARDKIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// One test database.
pub struct Db {
    /// Its name.
    pub name: String,
    /// A URL connecting to it.
    pub url: String,
    /// Drives this helper's own connections.
    pub rt: tokio::runtime::Runtime,
}

impl Db {
    /// Creates a database named after `tag`, this process and a counter.
    pub fn create(tag: &str) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "sk_{tag}_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        rt.block_on(async {
            let admin = shardkit_pg::connect::connect(&pg_url()).await.unwrap();
            admin
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .await
                .unwrap();
        });
        let base = pg_url();
        let url = format!("{}/{name}", &base[..base.rfind('/').unwrap()]);
        Self { name, url, rt }
    }

    /// The one `bigint` that `sql` answers.
    pub fn query_i64(&self, sql: &str) -> i64 {
        self.rt.block_on(async {
            let client = shardkit_pg::connect::connect(&self.url).await.unwrap();
            client.query_one(sql, &[]).await.unwrap().get(0)
        })
    }

    /// Links stored in every shard schema of this database whose code is `code`.
    pub fn links_with_code(&self, code: &str) -> i64 {
        self.rt.block_on(async {
            let client = shardkit_pg::connect::connect(&self.url).await.unwrap();
            let mut n = 0;
            for s in shard_schemas(&client).await {
                let row = client
                    .query_one(
                        &format!("SELECT count(*) FROM {s}.links WHERE code = $1"),
                        &[&code],
                    )
                    .await
                    .unwrap();
                n += row.get::<_, i64>(0);
            }
            n
        })
    }
}

/// The `shard_NNNN` schemas of the database `client` is connected to, in order.
pub async fn shard_schemas(client: &shardkit_pg::tokio_postgres::Client) -> Vec<String> {
    let sql = r"SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'shard\_%' ORDER BY 1";
    client
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

impl Drop for Db {
    fn drop(&mut self) {
        let name = self.name.clone();
        self.rt.block_on(async {
            if let Ok(admin) = shardkit_pg::connect::connect(&pg_url()).await {
                let _ = admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await;
            }
        });
    }
}
