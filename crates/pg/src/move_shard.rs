//! Moving one logical shard to another server while the others keep serving, and the
//! shard itself keeps serving except for one brief write pause.
//!
//! The steps, on the shard's schema `shard_NNNN` of the source server:
//!
//! 1. **Change capture.** A log table `move_changes (seq, tbl, id)` and one AFTER
//!    INSERT/UPDATE/DELETE row trigger per shard table that records the `id` of every row
//!    written (the old and the new one when an update changes it). Installed in one
//!    committed transaction *before* the copy's snapshot: `CREATE TRIGGER` waits for the
//!    writers in flight, so every write is either visible to the snapshot or captured.
//!    A `TRUNCATE` of a shard table is refused while the capture is installed (the row
//!    triggers cannot see it).
//! 2. **Bulk copy** of every table from one `REPEATABLE READ` transaction, i.e. one
//!    consistent snapshot, while writes go on. Log entries already visible to that
//!    snapshot are consumed in it (the copy holds their effect).
//! 3. **Catch-up rounds** without any pause: each round takes the log entries with
//!    `DELETE ... RETURNING` and reads the current rows of those ids in one snapshot, then
//!    on the target deletes every row with a changed id and inserts the source's rows for
//!    them, in one target transaction. So after each round the target equals the source
//!    as of that round's snapshot: rows with an unchanged id were equal before, and a
//!    unique key that moved from one id to another (an alias re-pointed) cannot collide
//!    because all the deletes come before the inserts. The log is consumed rather than
//!    read past a `seq` watermark because sequence values can commit out of order. Rounds
//!    repeat while they see many changes, at most [`MAX_ROUNDS`] times.
//! 4. **The pause**, for this shard only: the shard's tables locked against writes
//!    (`EXCLUSIVE`: reads go on) and its `next_id()` lock taken, the last catch-up round
//!    (now small) applied, the id state carried over, the next map version written on
//!    every server, and the old copy dropped in the same transaction that held the pause,
//!    so a writer still routed by the old map gets an error (and re-reads the map) rather
//!    than writing to a copy nobody reads. Lock waits are bounded (`lock_timeout`) and
//!    retried, so a long transaction on the shard delays the pause rather than stalling
//!    every writer queued behind it, and a lock-order deadlock with a writer that touches
//!    several shard tables costs a retry, not the move.
//!
//! Triggers rather than logical replication: they need no `wal_level = logical`, no
//! replication slot or publication, no privileges beyond the shard's own, and they go
//! away with the schema.
//!
//! The source's commit is the switch. Until then no server holds the new map version, so
//! nobody reads the target's copy (the map rows on the target and the other servers are
//! inserted in transactions committed only after the source's); after it, every server
//! holds the new version or an older one, and clients take the newest they find. When
//! the move fails before the switch, the capture is removed from the source and the
//! target's partial schema dropped, so the shard serves on as before and a re-run starts
//! clean. A move whose process dies leaves the capture on the source (each write of the
//! shard then also writes a log row) until the next move of the shard replaces it; two
//! moves of one shard at once are refused (a session advisory lock on the source).
//!
//! The pause covers the lock waits, the last round, the id state and the map writes: its
//! length is what [`MoveReport::pause`] says. Reads of the shard go on during it, except
//! for the moment the old copy is dropped.
//!
//! Why one file of this size: the steps above are one protocol whose safety depends on
//! their order; they are kept in the order they run.

use crate::cluster::{read_meta, record_meta, Meta};
use crate::connect::{connect, error_text, query_error};
use crate::error::{redact_url, PgError};
use crate::schema::{shard_ddl, shard_schema, ADVISORY_CLASS};
use shardkit_ring::{Format, NodeSpec, ShardMap};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

/// Tables of a shard schema, copied in this order.
pub const SHARD_TABLES: &[&str] = &["links", "link_aliases", "link_urls"];

/// Catch-up rounds before the pause at most; the pause adds one more.
pub const MAX_ROUNDS: u32 = 8;

/// A catch-up round that applied at most this many changed ids is followed by the pause.
pub const PAUSE_AT_CHANGES: u64 = 1_000;

/// Rows (or ids) per copy batch.
const BATCH: usize = 5_000;

/// How long one lock wait of the move may take before it backs off and retries.
const LOCK_TIMEOUT: &str = "200ms";

/// How often a lock of the move is tried before the move gives up.
const LOCK_ATTEMPTS: u32 = 50;

/// How long dropping the old copy may wait for readers of the shard (inside the pause).
const DROP_LOCK_TIMEOUT: &str = "5s";

/// What a move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveReport {
    /// The logical shard moved.
    pub shard: u32,
    /// Server it was on.
    pub from: String,
    /// Server it is on now.
    pub to: String,
    /// Rows written to the target: the bulk copy plus every catch-up round.
    pub rows: u64,
    /// Rows of the bulk copy (the source as of its snapshot).
    pub copied: u64,
    /// Changed row ids (per table) caught up after the snapshot, the pause's included.
    pub changed: u64,
    /// Catch-up rounds, the last one (under the pause) included.
    pub rounds: u32,
    /// Changed row ids the last round applied under the pause.
    pub changed_in_pause: u64,
    /// The map version now in force.
    pub map_version: u64,
    /// How long writes to this shard were paused.
    pub pause: Duration,
}

/// The change capture: log table, trigger function, one trigger per shard table.
fn capture_ddl(schema: &str) -> String {
    let mut ddl = format!(
        r#"
CREATE TABLE {schema}.move_changes (seq bigserial PRIMARY KEY, tbl text NOT NULL, id bigint NOT NULL);
CREATE FUNCTION {schema}.move_capture() RETURNS trigger
LANGUAGE plpgsql AS $capture$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'shardkit: {schema} is being moved; TRUNCATE is refused until the move ends'
            USING ERRCODE = '55000';
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO {schema}.move_changes (tbl, id) VALUES (TG_TABLE_NAME, OLD.id);
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {schema}.move_changes (tbl, id) VALUES (TG_TABLE_NAME, NEW.id);
    ELSIF TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id THEN
        INSERT INTO {schema}.move_changes (tbl, id) VALUES (TG_TABLE_NAME, NEW.id);
    END IF;
    RETURN NULL;
END
$capture$;
"#
    );
    for table in SHARD_TABLES {
        ddl.push_str(&format!(
            "CREATE TRIGGER move_capture AFTER INSERT OR UPDATE OR DELETE ON {schema}.{table} \
             FOR EACH ROW EXECUTE FUNCTION {schema}.move_capture();\n\
             CREATE TRIGGER move_capture_truncate BEFORE TRUNCATE ON {schema}.{table} \
             FOR EACH STATEMENT EXECUTE FUNCTION {schema}.move_capture();\n"
        ));
    }
    ddl
}

/// Removes the change capture (every part of it that exists).
fn uncapture_ddl(schema: &str) -> String {
    let mut ddl = String::new();
    for table in SHARD_TABLES {
        ddl.push_str(&format!(
            "DROP TRIGGER IF EXISTS move_capture ON {schema}.{table};\n\
             DROP TRIGGER IF EXISTS move_capture_truncate ON {schema}.{table};\n"
        ));
    }
    ddl.push_str(&format!("DROP FUNCTION IF EXISTS {schema}.move_capture();\nDROP TABLE IF EXISTS {schema}.move_changes;\n"));
    ddl
}

/// `LOCK TABLE` of every shard table in `mode`.
fn lock_tables(schema: &str, mode: &str) -> String {
    let tables: Vec<String> = SHARD_TABLES
        .iter()
        .map(|t| format!("{schema}.{t}"))
        .collect();
    format!("LOCK TABLE {} IN {mode} MODE", tables.join(", "))
}

/// Opens a transaction on `client` and runs `locks` in it with bounded lock waits; a wait
/// that times out (or a deadlock) rolls back and is retried after a short back-off. On
/// success the transaction stays open (the caller commits or rolls back).
async fn begin_locked(
    client: &Client,
    server: &str,
    what: &str,
    locks: &str,
) -> Result<(), PgError> {
    let mut attempt = 0;
    loop {
        let sql = format!("BEGIN; SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'; {locks}");
        match client.batch_execute(&sql).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK").await;
                let busy = matches!(e.code(), Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::T_R_DEADLOCK_DETECTED);
                attempt += 1;
                if !busy || attempt >= LOCK_ATTEMPTS {
                    return Err(query_error(server, what, &e));
                }
                tokio::time::sleep(Duration::from_millis(10 * u64::from(attempt.min(10)))).await;
            }
        }
    }
}

/// Installs the change capture on the source (removing any leftover of a killed move
/// first), committed before the bulk copy's snapshot is taken.
async fn install_capture(source: &Client, server: &str, schema: &str) -> Result<(), PgError> {
    remove_capture(source, server, schema).await?;
    // SHARE ROW EXCLUSIVE waits for the writers in flight and keeps new ones out until
    // the commit, while reads go on.
    begin_locked(
        source,
        server,
        "locking the shard to install change capture",
        &lock_tables(schema, "SHARE ROW EXCLUSIVE"),
    )
    .await?;
    if let Err(e) = source
        .batch_execute(&format!("{}COMMIT;", capture_ddl(schema)))
        .await
    {
        let _ = source.batch_execute("ROLLBACK").await;
        return Err(query_error(server, "installing change capture", &e));
    }
    Ok(())
}

/// Removes the change capture from the source, if any part of it is there. (A trigger
/// cannot outlive the function it calls, and the function is dropped before the table.)
async fn remove_capture(source: &Client, server: &str, schema: &str) -> Result<(), PgError> {
    let present: bool = source
        .query_one(
            "SELECT to_regprocedure($1) IS NOT NULL OR to_regclass($2) IS NOT NULL",
            &[
                &format!("{schema}.move_capture()"),
                &format!("{schema}.move_changes"),
            ],
        )
        .await
        .map_err(|e| query_error(server, "looking for change capture", &e))?
        .get(0);
    if !present {
        return Ok(());
    }
    // DROP TRIGGER takes ACCESS EXCLUSIVE anyway: take it up front, with bounded waits.
    begin_locked(
        source,
        server,
        "locking the shard to remove change capture",
        &lock_tables(schema, "ACCESS EXCLUSIVE"),
    )
    .await?;
    if let Err(e) = source
        .batch_execute(&format!("{}COMMIT;", uncapture_ddl(schema)))
        .await
    {
        let _ = source.batch_execute("ROLLBACK").await;
        return Err(query_error(server, "removing change capture", &e));
    }
    Ok(())
}

/// Inserts rows given as a JSON array into `schema.table` on the target.
async fn insert_json(
    target: &impl tokio_postgres::GenericClient,
    server: &str,
    schema: &str,
    table: &str,
    json: &str,
) -> Result<(), PgError> {
    target
        .execute(
            &format!("INSERT INTO {schema}.{table} SELECT * FROM json_populate_recordset(NULL::{schema}.{table}, $1::text::json)"),
            &[&json],
        )
        .await
        .map(|_| ())
        .map_err(|e| query_error(server, &format!("writing {schema}.{table}"), &e))
}

/// The bulk copy: every table from one `REPEATABLE READ` snapshot of the source; log
/// entries visible to the snapshot are consumed in it. Returns the rows copied.
async fn bulk_copy(
    source: &Client,
    target: &Client,
    schema: &str,
    names: (&str, &str),
) -> Result<u64, PgError> {
    let read = |e: tokio_postgres::Error, what: &str| query_error(names.0, what, &e);
    source
        .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .map_err(|e| read(e, "starting the copy"))?;
    // The snapshot is taken by this first statement.
    source
        .execute(&format!("DELETE FROM {schema}.move_changes"), &[])
        .await
        .map_err(|e| read(e, "reading the change log"))?;
    let mut rows = 0u64;
    for table in SHARD_TABLES {
        source
            .batch_execute(&format!("DECLARE move_copy NO SCROLL CURSOR FOR SELECT row_to_json(t)::text FROM {schema}.{table} t"))
            .await
            .map_err(|e| read(e, &format!("reading {schema}.{table}")))?;
        loop {
            let batch = source
                .query(&format!("FETCH FORWARD {BATCH} FROM move_copy"), &[])
                .await
                .map_err(|e| read(e, &format!("reading {schema}.{table}")))?;
            if batch.is_empty() {
                break;
            }
            let mut json = String::from("[");
            for (i, row) in batch.iter().enumerate() {
                if i > 0 {
                    json.push(',');
                }
                json.push_str(row.get::<_, &str>(0));
            }
            json.push(']');
            insert_json(target, names.1, schema, table, &json).await?;
            rows += batch.len() as u64;
        }
        source
            .batch_execute("CLOSE move_copy")
            .await
            .map_err(|e| read(e, &format!("reading {schema}.{table}")))?;
    }
    source
        .batch_execute("COMMIT")
        .await
        .map_err(|e| read(e, "ending the copy"))?;
    Ok(rows)
}

/// One catch-up round: consumes the change log and makes the target's rows of the changed
/// ids equal to the source's, both read in one snapshot. Outside the pause the round runs
/// in a `REPEATABLE READ` transaction of its own; in the pause (`in_pause`) it runs in the
/// pause's transaction, where no write can happen. Returns (changed ids, rows written).
async fn catch_up(
    source: &Client,
    target: &mut Client,
    schema: &str,
    names: (&str, &str),
    in_pause: bool,
) -> Result<(u64, u64), PgError> {
    let read = |e: tokio_postgres::Error, what: &str| query_error(names.0, what, &e);
    if !in_pause {
        source
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .await
            .map_err(|e| read(e, "starting a catch-up round"))?;
    }
    let consumed = source
        .query(
            &format!(
                "WITH d AS (DELETE FROM {schema}.move_changes RETURNING tbl, id) SELECT tbl, array_agg(DISTINCT id) FROM d GROUP BY tbl"
            ),
            &[],
        )
        .await
        .map_err(|e| read(e, "reading the change log"))?;
    let mut changed: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in &consumed {
        let table: String = row.get(0);
        // Only the capture trigger writes the log; anything else is not a shard table.
        if SHARD_TABLES.contains(&table.as_str()) {
            changed.insert(table, row.get(1));
        }
    }
    let count = changed.values().map(|ids| ids.len() as u64).sum::<u64>();
    let mut rows = 0u64;
    if count > 0 {
        let write = |e: tokio_postgres::Error, what: &str| query_error(names.1, what, &e);
        let tx = target
            .transaction()
            .await
            .map_err(|e| write(e, "starting a catch-up round"))?;
        // Every delete before any insert: a unique key that moved between ids is free again.
        for (table, ids) in &changed {
            for chunk in ids.chunks(BATCH) {
                tx.execute(
                    &format!("DELETE FROM {schema}.{table} WHERE id = ANY($1)"),
                    &[&chunk],
                )
                .await
                .map_err(|e| write(e, &format!("catching up {schema}.{table}")))?;
            }
        }
        for (table, ids) in &changed {
            for chunk in ids.chunks(BATCH) {
                let current = source
                    .query_one(
                        &format!("SELECT coalesce(json_agg(t)::text, '[]'), count(*) FROM {schema}.{table} t WHERE id = ANY($1)"),
                        &[&chunk],
                    )
                    .await
                    .map_err(|e| read(e, &format!("reading {schema}.{table}")))?;
                let (json, n): (String, i64) = (current.get(0), current.get(1));
                if n > 0 {
                    insert_json(&tx, names.1, schema, table, &json).await?;
                    rows += n as u64;
                }
            }
        }
        tx.commit()
            .await
            .map_err(|e| write(e, "ending a catch-up round"))?;
    }
    if !in_pause {
        source
            .batch_execute("COMMIT")
            .await
            .map_err(|e| read(e, "ending a catch-up round"))?;
    }
    Ok((count, rows))
}

/// The advisory lock (key pair) that keeps two moves of one shard apart: the second key
/// is `-2 - shard`, apart from `next_id()`'s (the shard) and `init`'s (-1).
fn move_lock(shard: u32) -> (i32, i32) {
    (ADVISORY_CLASS, (-2i32).wrapping_sub(shard as i32))
}

/// The connections of a move in progress.
struct Move {
    shard: u32,
    schema: String,
    from: String,
    source: Client,
    to: String,
    target: Client,
    /// The other servers of the map (they get the next map version).
    others: Vec<(String, Client)>,
}

/// A server of the current map, connected.
struct Server {
    /// Its URL without the password (how the map names it).
    name: String,
    /// Its URL as given.
    url: String,
    client: Client,
}

/// Moves logical shard `shard` to the server at `to` (which may be new to the cluster).
/// `servers` are the URLs of every server in the current map.
///
/// Errors name the server involved. A move that fails before the switch leaves the shard
/// where it was, serving, without change capture, and the target without the shard's
/// schema, so it can be run again.
pub async fn move_shard(servers: &[String], shard: u32, to: &str) -> Result<MoveReport, PgError> {
    let (meta, mut connected) = connect_every_server(servers).await?;
    let to_name = redact_url(to.trim());
    let from = current_server(&meta.map, shard, &to_name)?;
    check_every_server_given(&meta.map, &connected)?;
    let next = map_with_shard_on(&meta.map, shard, &to_name)?;
    let next_json = next.render(Format::Json)?;

    let source = take_server(&mut connected, &from)?;
    take_move_lock(&source.client, &from, shard).await?;
    let mut target = match connected.iter().position(|s| s.name == to_name) {
        Some(i) => connected.remove(i).client,
        None => connect(to.trim()).await?,
    };
    create_empty_shard_on_target(&mut target, &to_name, &meta, shard).await?;

    let mut mv = Move {
        shard,
        schema: shard_schema(shard),
        from,
        source: source.client,
        to: to_name,
        target,
        others: connected.into_iter().map(|s| (s.name, s.client)).collect(),
    };
    match mv.run(&next, &next_json).await {
        Ok(report) => mv.finish(report).await,
        Err(e) => Err(mv.undo(&source.url, to.trim(), e).await),
    }
}

/// Connects to every server given and reads the newest map any of them holds (all must
/// answer: all get the new version).
async fn connect_every_server(servers: &[String]) -> Result<(Meta, Vec<Server>), PgError> {
    let Some(first) = servers.first() else {
        return Err(PgError::NoServers);
    };
    let mut connected = Vec::new();
    let mut newest: Option<Meta> = None;
    for url in servers {
        let name = redact_url(url.trim());
        let client = connect(url.trim()).await?;
        if let Some(m) = read_meta(&client, &name).await? {
            if newest
                .as_ref()
                .is_none_or(|seen| m.map.version() > seen.map.version())
            {
                newest = Some(m);
            }
        }
        connected.push(Server {
            name,
            url: url.trim().to_string(),
            client,
        });
    }
    let meta = newest.ok_or_else(|| PgError::NoCluster {
        server: redact_url(first.trim()),
    })?;
    Ok((meta, connected))
}

/// The server `shard` is on now, refused if the shard does not exist or is on `to` already.
fn current_server(map: &ShardMap, shard: u32, to: &str) -> Result<String, PgError> {
    let from = map.owner(shard).ok_or(PgError::NoSuchShard {
        shard: u64::from(shard),
        logical_shards: map.shard_count(),
    })?;
    if from == to {
        return Err(PgError::AlreadyThere {
            shard,
            server: to.to_string(),
        });
    }
    Ok(from.to_string())
}

/// Refuses a move unless every server of the map was given (each gets the new map).
fn check_every_server_given(map: &ShardMap, connected: &[Server]) -> Result<(), PgError> {
    match map
        .nodes()
        .iter()
        .find(|node| !connected.iter().any(|s| s.name == node.name))
    {
        Some(node) => Err(PgError::MissingServer {
            server: node.name.clone(),
        }),
        None => Ok(()),
    }
}

/// The next map version: `map` with `shard`'s table entry pointing at server `to`
/// (added as a node if it is new to the cluster).
fn map_with_shard_on(map: &ShardMap, shard: u32, to: &str) -> Result<ShardMap, PgError> {
    let mut nodes = map.nodes().to_vec();
    let target_index = match nodes.iter().position(|n| n.name == to) {
        Some(i) => i,
        None => {
            nodes.push(NodeSpec::new(to.to_string()));
            nodes.len() - 1
        }
    };
    let mut table = map.table().to_vec();
    table[shard as usize] = target_index as u32;
    Ok(ShardMap::from_parts(
        map.version() + 1,
        map.shard_count(),
        nodes,
        table,
    )?)
}

/// Takes the server named `name` out of `connected`.
fn take_server(connected: &mut Vec<Server>, name: &str) -> Result<Server, PgError> {
    let index = connected
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| PgError::MissingServer {
            server: name.to_string(),
        })?;
    Ok(connected.remove(index))
}

/// Takes the session lock that keeps two moves of `shard` apart, on its current server;
/// refused if another move holds it. Held until the source's connection closes.
async fn take_move_lock(source: &Client, from: &str, shard: u32) -> Result<(), PgError> {
    let (class, key) = move_lock(shard);
    let locked: bool = source
        .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&class, &key])
        .await
        .map_err(|e| query_error(from, "taking the move lock", &e))?
        .get(0);
    if !locked {
        return Err(PgError::MoveRunning {
            shard,
            server: from.to_string(),
        });
    }
    Ok(())
}

/// Records the cluster's facts and current map on the target and creates the shard's
/// schema there, empty; refused if the target has that schema already.
async fn create_empty_shard_on_target(
    target: &mut Client,
    to: &str,
    meta: &Meta,
    shard: u32,
) -> Result<(), PgError> {
    let map = &meta.map;
    record_meta(
        target,
        to,
        meta.logical_shards,
        meta.epoch_unix_ms,
        map,
        &map.render(Format::Json)?,
    )
    .await?;
    let schema = shard_schema(shard);
    let exists: bool = target
        .query_one("SELECT to_regnamespace($1) IS NOT NULL", &[&schema])
        .await
        .map_err(|e| query_error(to, "checking the target", &e))?
        .get(0);
    if exists {
        return Err(PgError::TargetHasShard {
            server: to.to_string(),
            schema,
        });
    }
    // One implicit transaction: on error nothing of it exists.
    target
        .batch_execute(&shard_ddl(shard, meta.epoch_unix_ms))
        .await
        .map_err(|e| query_error(to, "creating the shard", &e))?;
    Ok(())
}

impl Move {
    /// Everything up to and including the switch (the source's commit).
    async fn run(&mut self, next: &ShardMap, next_json: &str) -> Result<MoveReport, PgError> {
        let (schema, from, to) = (self.schema.as_str(), self.from.as_str(), self.to.as_str());
        let names = (from, to);

        // 1-2. Capture, then the bulk copy from one snapshot while writes go on.
        install_capture(&self.source, from, schema).await?;
        let copied = bulk_copy(&self.source, &self.target, schema, names).await?;

        // 3. Catch up without a pause while rounds stay large.
        let mut rows = copied;
        let mut changed = 0;
        let mut rounds = 0;
        while rounds < MAX_ROUNDS {
            let (n, written) =
                catch_up(&self.source, &mut self.target, schema, names, false).await?;
            rounds += 1;
            changed += n;
            rows += written;
            if n <= PAUSE_AT_CHANGES {
                break;
            }
        }

        // 4. The pause: writes to this shard wait on the locks. Tables first, then the id
        // lock: an insert in flight holds its table lock and may wait for the id lock.
        let paused = Instant::now();
        let locks = format!(
            "{}; SELECT pg_advisory_xact_lock({ADVISORY_CLASS}, {}); SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'",
            lock_tables(schema, "EXCLUSIVE"),
            self.shard
        );
        begin_locked(&self.source, from, "pausing writes", &locks).await?;
        let (in_pause, written) =
            catch_up(&self.source, &mut self.target, schema, names, true).await?;
        rounds += 1;
        changed += in_pause;
        rows += written;
        let state: i64 = self
            .source
            .query_one(&format!("SELECT last_value FROM {schema}.id_state"), &[])
            .await
            .map_err(|e| query_error(from, "reading the id state", &e))?
            .get(0);
        self.target
            .execute(
                "SELECT setval($1::text::regclass, greatest($2::bigint, 1))",
                &[&format!("{schema}.id_state"), &state],
            )
            .await
            .map_err(|e| query_error(to, "carrying the id state over", &e))?;

        // The next map version: on the target and the other servers in transactions left
        // open until the switch, on the source in the pause's transaction with the drop.
        let version = next.version() as i64;
        let insert_map =
            "INSERT INTO shardkit_meta.shard_maps (version, map) VALUES ($1, $2::text::jsonb) ON CONFLICT (version) DO NOTHING";
        let mut waiting = vec![(to, &self.target)];
        waiting.extend(
            self.others
                .iter()
                .map(|(name, client)| (name.as_str(), client)),
        );
        for (name, client) in waiting {
            client
                .batch_execute("BEGIN")
                .await
                .map_err(|e| query_error(name, "recording the map", &e))?;
            client
                .execute(insert_map, &[&version, &next_json])
                .await
                .map_err(|e| query_error(name, "recording the map", &e))?;
        }
        self.source
            .execute(insert_map, &[&version, &next_json])
            .await
            .map_err(|e| query_error(from, "recording the map", &e))?;
        self.source
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .map_err(|e| query_error(from, "dropping the old copy", &e))?;
        self.source
            .batch_execute("COMMIT")
            .await
            .map_err(|e| query_error(from, "ending the pause", &e))?;
        let pause = paused.elapsed();
        Ok(MoveReport {
            shard: self.shard,
            from: from.to_string(),
            to: to.to_string(),
            rows,
            copied,
            changed,
            rounds,
            changed_in_pause: in_pause,
            map_version: next.version(),
            pause,
        })
    }

    /// After the switch: commits the map version on the target and the other servers.
    /// The shard has moved whatever happens here; a server that fails is named.
    async fn finish(&self, report: MoveReport) -> Result<MoveReport, PgError> {
        let mut waiting = vec![(self.to.as_str(), &self.target)];
        waiting.extend(
            self.others
                .iter()
                .map(|(name, client)| (name.as_str(), client)),
        );
        for (name, client) in waiting {
            client.batch_execute("COMMIT").await.map_err(|e| PgError::Query {
                server: name.to_string(),
                what: format!(
                    "recording map version {} (the shard has moved and its old server holds that version: \
                     copy the row of shardkit_meta.shard_maps from there)",
                    report.map_version
                ),
                reason: error_text(&e),
            })?;
        }
        Ok(report)
    }

    /// After a failure before the switch: rolls back what is open, removes the change
    /// capture from the source and the shard's schema from the target. Returns the error
    /// to report: `failure`, or a clean-up error that quotes it.
    async fn undo(&self, source_url: &str, target_url: &str, failure: PgError) -> PgError {
        for (_, client) in &self.others {
            let _ = client.batch_execute("ROLLBACK").await;
        }
        let fresh_source = match reopened(&self.source, source_url).await {
            Ok(fresh) => fresh,
            Err(e) => {
                return cleanup_failed(
                    failure,
                    &self.from,
                    "removing change capture",
                    &e.to_string(),
                )
            }
        };
        let source = fresh_source.as_ref().unwrap_or(&self.source);
        if let Err(e) = remove_capture(source, &self.from, &self.schema).await {
            return cleanup_failed(
                failure,
                &self.from,
                "removing change capture",
                &e.to_string(),
            );
        }
        let fresh_target = match reopened(&self.target, target_url).await {
            Ok(fresh) => fresh,
            Err(e) => {
                return cleanup_failed(
                    failure,
                    &self.to,
                    "dropping the partial copy",
                    &e.to_string(),
                )
            }
        };
        let target = fresh_target.as_ref().unwrap_or(&self.target);
        if let Err(e) = target
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .await
        {
            return cleanup_failed(
                failure,
                &self.to,
                "dropping the partial copy",
                &error_text(&e),
            );
        }
        failure
    }
}

/// The error of a clean-up that failed after `failure`: names both.
/// For clean-up after a failure: a fresh connection to `url` if `client` is closed,
/// else `None` with `client`'s open transaction (if any) rolled back.
async fn reopened(client: &Client, url: &str) -> Result<Option<Client>, PgError> {
    if client.is_closed() {
        return connect(url).await.map(Some);
    }
    let _ = client.batch_execute("ROLLBACK").await;
    Ok(None)
}

fn cleanup_failed(failure: PgError, server: &str, what: &str, reason: &str) -> PgError {
    PgError::Query {
        server: server.to_string(),
        what: format!("{what} after a failed move ({failure})"),
        reason: reason.to_string(),
    }
}
