//! `COUNTER.CREATE`, `COUNTER.ADDCOL` and `COUNTER.INFO` on a cluster node. The first
//! two change the cluster's counter schema (`cluster/schema.rs`, KV key `schema`,
//! compare-and-set) and apply it to the groups this node leads before answering; every
//! other node applies it to its groups within a map poll (200 ms). `COUNTER.INFO`
//! answers for this node, as `DBSIZE` does: the counter's rows and bytes summed over the
//! groups it leads, its columns as the schema has them.

use crate::resp::counter_admin::{column_options, no_such_counter, reply_info};
use crate::resp::table::Call;
use crate::resp::values::engine_error;
use shardkit_counters::{ColumnSpec, CounterStats, Error};
use shardkit_node::cluster::live::Live;
use shardkit_node::cluster::schema::{ChangeError, Schema};
use shardkit_resp::reply;

/// The text argument at `index`, or an error written to `out`.
fn text_arg<'a>(call: &mut Call<'a, '_>, index: usize, what: &str) -> Option<&'a str> {
    let text = call
        .cmd
        .arg(index)
        .and_then(|raw| std::str::from_utf8(raw).ok());
    if text.is_none() {
        reply::error(call.out, &format!("ERR {what} must be UTF-8 text"));
    }
    text
}

/// Stores the schema `change` makes, applies it here, and answers `+OK` (or why not).
fn change_schema(
    call: &mut Call<'_, '_>,
    live: &Live,
    change: &(dyn Fn(&Schema) -> Result<Schema, Error> + Sync),
) {
    let Some(writer) = live.schema_writer() else {
        return reply::error(
            call.out,
            "CLUSTERDOWN this node has not joined the cluster yet; retry shortly",
        );
    };
    let changed = shardkit_node::resp_runtime::block_here(|| {
        let (revision, schema) = writer.change(change)?;
        live.set_schema(revision, schema);
        let failed = live.apply_schema();
        if !failed.is_empty() {
            tracing::warn!(
                ?failed,
                "the counter schema is stored but not yet applied to some groups"
            );
        }
        Ok::<(), ChangeError>(())
    });
    match changed {
        Ok(()) => reply::simple(call.out, "OK"),
        Err(ChangeError::Refused(e)) => engine_error(call.out, &e),
        Err(ChangeError::Unavailable(why)) => reply::error(
            call.out,
            &format!("CLUSTERDOWN the counter schema could not be stored: {why}"),
        ),
    }
}

/// `COUNTER.CREATE name` on a cluster node.
pub fn create(call: &mut Call<'_, '_>, live: &Live) {
    let Some(name) = text_arg(call, 1, "counter names") else {
        return;
    };
    change_schema(call, live, &|schema| schema.with_counter(name));
}

/// `COUNTER.ADDCOL name column [BITS n] [MAX 32|64] [DEFAULT n]` on a cluster node.
pub fn addcol(call: &mut Call<'_, '_>, live: &Live) {
    let Some(name) = text_arg(call, 1, "counter names") else {
        return;
    };
    let Some(column) = text_arg(call, 2, "column names") else {
        return;
    };
    let options = match column_options(call.cmd) {
        Ok(options) => options,
        Err(e) => return reply::error(call.out, e),
    };
    change_schema(call, live, &|schema| {
        schema.with_column(name, column, options)
    });
}

/// `COUNTER.INFO name` on a cluster node: this node's part of the counter.
pub fn info(call: &mut Call<'_, '_>, live: &Live) {
    let Some(name) = text_arg(call, 1, "counter names") else {
        return;
    };
    let merged = live.counter_stats().into_iter().find(|c| c.name == name);
    let mut found = merged.is_some();
    let mut total = merged.unwrap_or_else(|| CounterStats {
        name: name.to_string(),
        ..Default::default()
    });
    let mut columns: Vec<ColumnSpec> = Vec::new();
    if found {
        // The widths a group holds (the schema's below, when it has the counter).
        for store in live.led() {
            if let Ok(cols) = store.counters.engine.columns(name) {
                columns = cols;
                break;
            }
        }
    }
    // The columns as the schema has them, when it has the counter (a group that made
    // it on a write before the schema arrived may hold other widths). A counter this
    // node has not heard of may have been made a moment ago elsewhere: read the
    // schema again first.
    if !found && !live.schema().1.counters.contains_key(name) {
        if let Some(writer) = live.schema_writer() {
            if let Ok((revision, schema)) = writer.load() {
                live.set_schema(revision, schema);
            }
        }
    }
    let schema = live.schema();
    if let Some(cols) = schema.1.counters.get(name) {
        found = true;
        columns = cols
            .iter()
            .map(|c| ColumnSpec {
                name: c.name.clone(),
                bits: c.bits,
                max_bits: c.max_bits,
                default: c.default,
            })
            .collect();
    }
    if !found {
        return reply::error(call.out, &no_such_counter(name));
    }
    total.columns = columns.len();
    reply_info(call.out, call.session.resp3, name, &total, &columns);
}
