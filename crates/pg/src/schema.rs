//! The SQL that makes a logical shard: a schema `shard_NNNN` with the id state
//! sequence, `next_id()` (Instagram's layout, the shard number baked in) and the link
//! tables, plus the `shardkit_meta` schema recording the cluster and its shard maps.
//!
//! Kept apart from the code that runs it so that the text a DBA reviews is in one place.
//!
//! ## Why `next_id()` differs from Instagram's published function
//!
//! The published function takes `nextval(seq) % 1024` as the sequence field and the
//! wall clock as the time field. Past 1024 calls in one millisecond on one shard the
//! sequence field wraps while the time field stays the same: duplicate ids, silently.
//! The clock also cannot be ordered against the sequence without a lock: a session
//! preempted between `nextval` and `clock_timestamp()` can pair an old sequence value
//! with a later millisecond, so no stateless check is airtight.
//!
//! Here the sequence `id_state` holds the whole packed state `ms << 10 | seq` of the
//! last id (ms since the epoch). Each call, under a per-shard advisory lock held for a
//! few microseconds (session level, released before returning, and on error by the
//! exception handler, so a long transaction never holds it):
//! - `nextval` gives `last + 1`: the next sequence value in the same millisecond, or,
//!   when the 10 bits are used up, the carry into the time field: the id *borrows the
//!   next millisecond*, exactly what shardkit's in-process generator does;
//! - when the clock is ahead of that, the state jumps to `now << 10` (`setval`).
//!
//! So ids of one shard strictly increase and never repeat, at any rate and with the
//! clock stepping back. We borrow rather than wait because a burst never blocks: the
//! time field runs at most a few milliseconds ahead and falls back to the clock as soon
//! as the rate drops below 1,024 per ms. A lead past [`MAX_LEAD_MS`] (a sustained
//! overload, or the clock stepped back) is paid for by sleeping; past one second of
//! lead the function refuses with an error rather than issue ids far in the future.

/// Advisory-lock class of `next_id()` locks (the second key is the shard number):
/// "sk" in ASCII, so shardkit's locks are recognisable in `pg_locks`.
pub const ADVISORY_CLASS: i32 = 0x736b;

/// How far (ms) the time field of `next_id()` may run ahead of the clock before a call sleeps.
pub const MAX_LEAD_MS: i64 = 50;

/// How far (ms) the time field may be ahead of the clock before `next_id()` refuses.
pub const REFUSE_LEAD_MS: i64 = 1000;

/// The schema name of logical shard `shard`: `shard_0000` .. `shard_8191`.
pub fn shard_schema(shard: u32) -> String {
    format!("shard_{shard:04}")
}

/// The `shardkit_meta` schema: the cluster's fixed facts and every shard map version.
pub const META_DDL: &str = r#"
CREATE SCHEMA IF NOT EXISTS shardkit_meta;
CREATE TABLE IF NOT EXISTS shardkit_meta.cluster (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    logical_shards integer NOT NULL,
    epoch_unix_ms bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS shardkit_meta.shard_maps (
    version bigint PRIMARY KEY,
    map jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
"#;

/// The DDL of one logical shard: schema, id state, `next_id()`, link tables.
///
/// The link tables (used by [`crate::links::PgLinkStore`]): `links` holds the links
/// whose code routes here (`alias_name` the custom alias, `tags` for listing);
/// `link_aliases` is the alias index of aliases that hash to this shard's group, and
/// `link_urls` the index of reusable links (no alias, expiry or visit limit) whose
/// normalized URL hashes here, which `"reuse": true` reads. In both, `id` is the link id
/// (so `move_shard` tracks and copies their rows by id, like `links`).
/// Every statement is idempotent (`IF NOT EXISTS`, `OR REPLACE` with the same text).
pub fn shard_ddl(shard: u32, epoch_unix_ms: u64) -> String {
    let s = shard_schema(shard);
    format!(
        r#"
CREATE SCHEMA IF NOT EXISTS {s};
CREATE SEQUENCE IF NOT EXISTS {s}.id_state AS bigint MINVALUE 0 START WITH 0 NO CYCLE;
CREATE OR REPLACE FUNCTION {s}.next_id() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $next_id$
DECLARE
    epoch_ms constant bigint := {epoch_unix_ms};
    shard constant bigint := {shard};
    now_ms bigint;
    state bigint;
    lead bigint;
BEGIN
    PERFORM pg_advisory_lock({class}, {shard});
    BEGIN
        now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - epoch_ms;
        state := nextval('{s}.id_state');
        lead := (state >> 10) - now_ms;
        IF lead < 0 THEN
            state := now_ms << 10;
            PERFORM setval('{s}.id_state', state);
        ELSIF lead > {refuse} THEN
            RAISE EXCEPTION 'shardkit {s}.next_id(): the last id is % ms ahead of the clock (clock stepped back?); refusing to issue ids', lead
                USING ERRCODE = '55000';
        ELSIF lead > {max_lead} THEN
            PERFORM pg_sleep((lead - {max_lead}) / 1000.0);
        END IF;
    EXCEPTION WHEN OTHERS THEN
        PERFORM pg_advisory_unlock({class}, {shard});
        RAISE;
    END;
    PERFORM pg_advisory_unlock({class}, {shard});
    RETURN ((state >> 10) << 23) | (shard << 10) | (state & 1023);
END
$next_id$;
CREATE TABLE IF NOT EXISTS {s}.links (
    id bigint PRIMARY KEY DEFAULT {s}.next_id(),
    code text NOT NULL UNIQUE,
    alias boolean NOT NULL DEFAULT false,
    url text NOT NULL,
    url_hash bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    max_visits bigint,
    redirect smallint NOT NULL DEFAULT 302 CHECK (redirect IN (301, 302, 307, 308)),
    tags text[] NOT NULL DEFAULT '{{}}'
);
CREATE INDEX IF NOT EXISTS links_url_hash ON {s}.links (url_hash);
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS alias_name text;
CREATE INDEX IF NOT EXISTS links_tags ON {s}.links USING gin (tags);
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS password_hash text;
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS author text;
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS rules jsonb;
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS domain text;
ALTER TABLE {s}.links ADD COLUMN IF NOT EXISTS title text;
CREATE TABLE IF NOT EXISTS {s}.link_aliases (
    alias text PRIMARY KEY,
    id bigint NOT NULL,
    code text NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.link_urls (
    id bigint PRIMARY KEY,
    url_hash bigint NOT NULL,
    url text NOT NULL,
    code text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS link_urls_hash ON {s}.link_urls (url_hash, created_at, id);
ALTER TABLE {s}.link_urls ADD COLUMN IF NOT EXISTS domain text;
"#,
        class = ADVISORY_CLASS,
        refuse = REFUSE_LEAD_MS,
        max_lead = MAX_LEAD_MS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_zero_padded() {
        assert_eq!(shard_schema(0), "shard_0000");
        assert_eq!(shard_schema(8191), "shard_8191");
    }

    #[test]
    fn ddl_bakes_in_shard_and_epoch() {
        let ddl = shard_ddl(5, 1_704_067_200_000);
        assert!(ddl.contains("shard constant bigint := 5;"));
        assert!(ddl.contains("epoch_ms constant bigint := 1704067200000;"));
        assert!(ddl.contains("shard_0005.links"));
        assert!(ddl.contains("DEFAULT '{}'"));
    }
}
