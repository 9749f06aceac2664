//! A PostgreSQL database of its own for one test (a stand-in for one server of a
//! cluster) on the machine's PostgreSQL (`SHARDKIT_PG_URL`), dropped at the end: the
//! helper of shardkit-pg's tests (one copy), with the sync queries these tests make.

#![allow(dead_code)]

#[path = "../../../pg/tests/common/postgres.rs"]
mod postgres;

pub use postgres::{block_on, PgDb};

/// One test database.
pub struct Db {
    /// Its name.
    pub name: String,
    /// A URL connecting to it.
    pub url: String,
    /// Dropped (with the database) when the test ends.
    _db: PgDb,
}

impl Db {
    /// Creates a database named after `tag`, this process and a counter.
    pub fn create(tag: &str) -> Self {
        let db = postgres::pg_db(tag);
        Self {
            name: db.name.clone(),
            url: db.url.clone(),
            _db: db,
        }
    }

    /// The one `bigint` that `sql` answers.
    pub fn query_i64(&self, sql: &str) -> i64 {
        let (url, sql) = (self.url.clone(), sql.to_string());
        block_on(async move {
            let client = shardkit_pg::connect::connect(&url).await.unwrap();
            client.query_one(&sql, &[]).await.unwrap().get(0)
        })
    }

    /// Links stored in every shard schema of this database whose code is `code`.
    pub fn links_with_code(&self, code: &str) -> i64 {
        block_on(async {
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
