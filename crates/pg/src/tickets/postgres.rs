//! A ticket store on PostgreSQL: each sequence is a PostgreSQL sequence
//! `shardkit_tickets."<name>"` with `INCREMENT BY` and `START WITH` set from the
//! server's increment and offset (odd and even tickets on two servers, as Flickr's),
//! and one `nextval` per block of [`BlockSize`] positions.
//!
//! Unlike the MariaDB store, the block size is not recorded in the database yet: keep
//! it fixed per sequence (a different one for an existing sequence would make blocks
//! overlap).

use super::{store_error, BlockSize};
use crate::blocking::Bridge;
use crate::connect::{error_text, pool};
use crate::error::redact_url;
use parking_lot::Mutex;
use shardkit_ids::tickets::{validate_name, SequenceSpec, TicketStore};
use shardkit_ids::TicketError;
use std::collections::HashSet;
use std::sync::Arc;

/// One PostgreSQL ticket server handing out every `increment`-th ticket from `offset`.
#[derive(Debug)]
pub struct PgTicketStore {
    name: String,
    pool: deadpool_postgres::Pool,
    increment: u64,
    offset: u64,
    block: BlockSize,
    ready: Arc<Mutex<HashSet<String>>>,
    bridge: Bridge,
}

impl PgTicketStore {
    /// A store on server `url` with tickets `offset, offset + increment, ...`
    /// (`1 <= offset <= increment`); nothing is connected until the first reservation.
    pub fn new(
        url: &str,
        increment: u64,
        offset: u64,
        block: BlockSize,
    ) -> Result<Self, TicketError> {
        SequenceSpec::new(increment, offset)?;
        let name = redact_url(url);
        let bridge = Bridge::new("shardkit-tickets-pg")
            .map_err(|e| store_error(&name, format!("starting the runtime: {e}")))?;
        let pool = {
            let handle = bridge.handle();
            let _guard = handle.enter();
            pool(url, 4).map_err(|e| store_error(&name, e.to_string()))?
        };
        Ok(Self {
            name,
            pool,
            increment,
            offset,
            block,
            ready: Arc::new(Mutex::new(HashSet::new())),
            bridge,
        })
    }
}

impl TicketStore for PgTicketStore {
    /// One `nextval` per block; the sequence is created on first use.
    fn reserve(&self, name: &str, _spec: SequenceSpec, count: u64) -> Result<u64, TicketError> {
        validate_name(name)?;
        self.block.check_count(count)?;
        let pool = self.pool.clone();
        let ready = Arc::clone(&self.ready);
        let (seq_name, increment, offset) =
            (name.to_string(), self.increment as i64, self.offset as i64);
        let result = self.bridge.run(async move {
            let client = pool.get().await.map_err(|e| format!("cannot connect: {e}"))?;
            let seq = format!("shardkit_tickets.\"{seq_name}\"");
            if !ready.lock().contains(&seq_name) {
                let ddl = format!(
                    "CREATE SCHEMA IF NOT EXISTS shardkit_tickets; \
                     CREATE SEQUENCE IF NOT EXISTS {seq} AS bigint INCREMENT BY {increment} MINVALUE 1 START WITH {offset} NO CYCLE"
                );
                // Two first uses racing on CREATE ... IF NOT EXISTS: the loser sees a unique
                // violation, of the schema or of the sequence, or "relation already exists"
                // (42P07; "schema already exists", 42P06), whichever catalog check the
                // winner's commit reached first (seen in CI: two servers on one cluster).
                // It tries again: the schema (or the sequence) made by the winner is
                // committed by then, and the `IF NOT EXISTS` skips it; a loser of the schema
                // race still has its sequence to make.
                use tokio_postgres::error::SqlState;
                let lost_race = |code: Option<&SqlState>| {
                    [
                        SqlState::UNIQUE_VIOLATION,
                        SqlState::DUPLICATE_TABLE,
                        SqlState::DUPLICATE_SCHEMA,
                    ]
                    .iter()
                    .any(|c| Some(c) == code)
                };
                let mut attempts = 0;
                while let Err(e) = client.batch_execute(&ddl).await {
                    attempts += 1;
                    if !lost_race(e.code()) || attempts == 3 {
                        return Err(format!("creating {seq}: {}", error_text(&e)));
                    }
                }
                ready.lock().insert(seq_name.clone());
            }
            let row = client
                .query_one("SELECT nextval($1::text::regclass)", &[&seq])
                .await
                .map_err(|e| format!("nextval {seq}: {}", error_text(&e)))?;
            Ok::<i64, String>(row.get(0))
        });
        match result {
            Some(Ok(ticket)) => self.block.first_position(name, ticket as u64),
            Some(Err(message)) => Err(store_error(&self.name, message)),
            None => Err(store_error(&self.name, "the store's runtime stopped")),
        }
    }
}
