//! `shardkit cluster status|rebalance|add-node|remove-node`: read the cluster's nodes and
//! slot map from NATS, plan the placement with the fewest group moves, and store the new
//! map by compare-and-set. JSON on standard output, errors on standard error.
//!
//! A thin shell: the placement is `cluster::planner`, the records and the map are
//! `cluster::nats`.

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;
use shardkit_node::cluster::map::{NodeInfo, SlotMap};
use shardkit_node::cluster::nats::map_store::MapStore;
use shardkit_node::cluster::nats::registry::{NodeRecord, Registry};
use shardkit_node::cluster::planner::{self, Rebalance};
use shardkit_node::config::Overrides;
use std::io::Write;
use std::path::PathBuf;

/// Subcommands of `shardkit cluster`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The nodes (live or not), which groups each owns and follows, and whether every
    /// slot is served.
    Status(Where),
    /// Spread the groups over every live node with the fewest moves (the first run
    /// places them all); groups of nodes that are not live move too.
    Rebalance(PlanArgs),
    /// Give a live node that the map does not name its share of the groups.
    AddNode(NodeArgs),
    /// Move every group of a node to the others and drop it from the map.
    RemoveNode(NodeArgs),
}

/// Which cluster: a node's settings file, as `serve` reads it, and the flags over it.
#[derive(Debug, Args)]
pub struct Where {
    /// A node's settings file: `[nats]` (servers, credentials, TLS) and `[cluster]`
    /// (`name`, `groups`) come from it, and the NATS credentials from the same
    /// environment variables as `serve`'s.
    #[arg(long, env = "SHARDKIT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// The NATS server(s), comma-separated, over the file's `[nats] url` [default:
    /// nats://127.0.0.1:4222].
    #[arg(long, env = "SHARDKIT_NATS_URL", value_name = "URL[,URL…]")]
    nats: Option<String>,
    /// The cluster's name, over the file's `[cluster] name` [default: shardkit].
    #[arg(long)]
    cluster: Option<String>,
}

/// A cluster resolved from [`Where`].
struct Target {
    nats: shardkit_node::nats_settings::NatsSettings,
    cluster: String,
    groups: u16,
}

impl Where {
    /// The file (if any), then the environment, then the flags; only `[nats]` and
    /// `[cluster]` are checked, so a node's file works from any host.
    fn target(&self) -> anyhow::Result<Target> {
        let overrides = Overrides {
            nats_url: self.nats.clone(),
            ..Overrides::default()
        }
        .with_nats_env();
        let settings = super::config_file::read(self.config.as_deref(), overrides)?;
        settings.nats.check()?;
        let mut cluster = settings.cluster;
        if let Some(name) = &self.cluster {
            cluster.name = name.clone();
        }
        cluster.check()?;
        Ok(Target {
            nats: settings.nats,
            cluster: cluster.name,
            groups: cluster.groups,
        })
    }
}

/// How to plan.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    at: Where,
    /// Slot groups of a new map (fixed once the map exists) [default: the file's
    /// `[cluster] groups`, else 64].
    #[arg(long)]
    groups: Option<u16>,
    /// Replicas per group (followers that take over when the owner dies).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Print the plan, store nothing.
    #[arg(long)]
    dry_run: bool,
    /// How long a move waits for the new owners to follow their groups (their node
    /// records say so) before it hands the groups over anyway, ms.
    #[arg(long, default_value_t = 30_000)]
    follow_wait_ms: u64,
}

/// A node, and how to plan.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The node: its 40-character id, or its announced `host:port`.
    node: String,
    #[command(flatten)]
    plan: PlanArgs,
}

/// Runs one `shardkit cluster` command.
pub fn run(cmd: ClusterCommand, out: &mut impl Write) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    let value = runtime.block_on(async {
        match cmd {
            ClusterCommand::Status(at) => status(&at).await,
            ClusterCommand::Rebalance(args) => rebalance(&args, Pick::Live).await,
            ClusterCommand::AddNode(args) => rebalance(&args.plan, Pick::Add(&args.node)).await,
            ClusterCommand::RemoveNode(args) => {
                rebalance(&args.plan, Pick::Remove(&args.node)).await
            }
        }
    })?;
    serde_json::to_writer_pretty(&mut *out, &value)?;
    writeln!(out)?;
    Ok(())
}

/// The node records and the map bucket of a cluster, and the JetStream they are on.
async fn open(at: &Target) -> anyhow::Result<(Registry, MapStore, async_nats::jetstream::Context)> {
    let js = shardkit_node::cluster::nats::connect(&at.nats, "shardkit cluster").await?;
    let registry = Registry::open(&js, &at.cluster, 1).await?;
    let maps = MapStore::open(&js, &at.cluster, 1).await?;
    Ok((registry, maps, js))
}

async fn status(at: &Where) -> anyhow::Result<serde_json::Value> {
    let at = &at.target()?;
    let (registry, maps, js) = open(at).await?;
    let live = registry.live().await?;
    let map = maps.load().await?;
    let mut value = describe(&at.cluster, map.as_ref(), &live);
    if let Some(map) = &map {
        value["streams"] = group_streams(&js, &at.cluster, map.groups).await.into();
    }
    Ok(value)
}

/// Each group's stream as NATS keeps it: how many copies, which NATS server leads it,
/// how many of its copies are current. A group whose stream is missing shows null.
/// The groups are asked at once, so a JetStream slow to answer (elections under load)
/// costs one request timeout, not one per group.
async fn group_streams(
    js: &async_nats::jetstream::Context,
    cluster: &str,
    groups: u16,
) -> Vec<serde_json::Value> {
    let mut asked = tokio::task::JoinSet::new();
    for g in 0..groups {
        let store = shardkit_node::cluster::nats::names::group_store_name(cluster, g);
        let name = shardkit_node::replication::jetstream::names::Names::new(&store).stream;
        let js = js.clone();
        asked.spawn(async move {
            let info = match js.get_stream(&name).await {
                Ok(mut stream) => stream.info().await.ok().cloned(),
                Err(_) => None,
            };
            (g, stream_status(g, name, info))
        });
    }
    let mut out: Vec<(u16, serde_json::Value)> = asked.join_all().await;
    out.sort_by_key(|(g, _)| *g);
    out.into_iter().map(|(_, v)| v).collect()
}

/// One group's line of [`group_streams`].
fn stream_status(
    g: u16,
    name: String,
    info: Option<async_nats::jetstream::stream::Info>,
) -> serde_json::Value {
    match info {
        None => json!({ "group": g, "stream": name, "replicas": null }),
        Some(info) => {
            let cluster_info = info.cluster.as_ref();
            json!({
                "group": g,
                "stream": name,
                "replicas": info.config.num_replicas,
                "leader": cluster_info.and_then(|c| c.leader.clone()),
                "current_copies": 1 + cluster_info.map_or(0, |c| c.replicas.iter().filter(|r| r.current).count()),
            })
        }
    }
}

/// The status document: every node the map names or that is live.
fn describe(cluster: &str, map: Option<&SlotMap>, live: &[NodeRecord]) -> serde_json::Value {
    let is_live = |id: &str| live.iter().any(|r| r.id == id);
    let mut ids: Vec<String> = live.iter().map(|r| r.id.clone()).collect();
    if let Some(map) = map {
        ids.extend(map.nodes.keys().cloned());
    }
    ids.sort();
    ids.dedup();
    let nodes: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| {
            let announce = live
                .iter()
                .find(|r| &r.id == id)
                .map(|r| r.announce.clone())
                .or_else(|| {
                    map.and_then(|m| m.nodes.get(id))
                        .map(|n| format!("{}:{}", n.host, n.port))
                });
            let owns = map.map_or(0, |m| {
                m.owner.iter().filter(|o| o.as_deref() == Some(id)).count()
            });
            let follows = map.map_or(0, |m| m.replicas.iter().filter(|r| r.contains(id)).count());
            json!({
                "id": id,
                "announce": announce,
                "live": is_live(id),
                "in_map": map.is_some_and(|m| m.nodes.contains_key(id)),
                "owns_groups": owns,
                "follows_groups": follows,
            })
        })
        .collect();
    let unserved: Vec<u16> = map.map_or_else(Vec::new, |m| {
        (0..m.groups)
            .filter(|&g| {
                m.owner[usize::from(g)]
                    .as_deref()
                    .is_none_or(|id| !is_live(id))
            })
            .collect()
    });
    json!({
        "cluster": cluster,
        "version": map.map_or(0, |m| m.version),
        "groups": map.map(|m| m.groups),
        "state": if map.is_some() && unserved.is_empty() { "ok" } else { "fail" },
        "groups_without_live_owner": unserved,
        "nodes": nodes,
    })
}

/// Which nodes the new map names.
enum Pick<'a> {
    /// Every live node.
    Live,
    /// The map's nodes and this live one.
    Add(&'a str),
    /// The map's nodes but this one.
    Remove(&'a str),
}

async fn rebalance(args: &PlanArgs, pick: Pick<'_>) -> anyhow::Result<serde_json::Value> {
    let at = &args.at.target()?;
    let (registry, maps, _) = open(at).await?;
    let live = registry.live().await?;
    let map = maps.load().await?;
    let live_infos = live
        .iter()
        .map(NodeRecord::info)
        .collect::<anyhow::Result<Vec<NodeInfo>>>()?;
    let in_map = |map: &SlotMap| map.nodes.values().cloned().collect::<Vec<NodeInfo>>();
    let nodes = match pick {
        Pick::Live => live_infos,
        Pick::Add(node) => {
            let map = map.as_ref().context(
                "the cluster has no map yet: run `shardkit cluster rebalance` to place the \
                 groups on the live nodes",
            )?;
            let new = find(&live_infos, node).with_context(|| {
                format!("no live node {node:?}: start it with [cluster] enabled first")
            })?;
            if map.nodes.contains_key(&new.id) {
                anyhow::bail!("node {} is in the map already", new.id);
            }
            let mut nodes = in_map(map);
            nodes.push(new.clone());
            nodes
        }
        Pick::Remove(node) => {
            let map = map.as_ref().context("the cluster has no map yet")?;
            let nodes = in_map(map);
            let gone = find(&nodes, node)
                .with_context(|| format!("the map names no node {node:?}"))?
                .id
                .clone();
            nodes.into_iter().filter(|n| n.id != gone).collect()
        }
    };
    let plan = planner::plan(
        map.as_ref(),
        &nodes,
        args.groups.unwrap_or(at.groups),
        args.replicas,
    )?;
    if args.dry_run {
        return Ok(report(&at.cluster, &plan, None, None));
    }
    let Some(current) = map.as_ref().filter(|_| !plan.moves.is_empty()) else {
        let stored = maps.store(&plan.map, plan.from_version).await?;
        return Ok(report(&at.cluster, &plan, Some(stored), None));
    };
    // Two steps, so a group's writes pause only for the hand-over itself: first each
    // moving group's new owner follows it (named a replica), then, once its record
    // says it does, it is named owner and takes the lease from the old one in place.
    let prepared = with_followers(current, &plan);
    let v1 = maps.store(&prepared, plan.from_version).await?;
    let asked = std::time::Instant::now();
    let ready = loop {
        let live = registry.live().await?;
        let following =
            |id: &str, g: u16| live.iter().any(|r| r.id == id && r.following.contains(&g));
        if plan.moves.iter().all(|m| following(&m.to, m.group)) {
            break true;
        }
        if asked.elapsed() > std::time::Duration::from_millis(args.follow_wait_ms) {
            break false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let stored = maps.store(&plan.map, v1).await?;
    Ok(report(
        &at.cluster,
        &plan,
        Some(stored),
        Some(json!({
            "version": v1,
            "followers_ready": ready,
            "ms": asked.elapsed().as_millis() as u64,
        })),
    ))
}

/// `current` with each moving group's new owner added to its replicas (and to the
/// nodes), owners unchanged.
fn with_followers(current: &SlotMap, plan: &Rebalance) -> SlotMap {
    let mut map = current.clone();
    for m in &plan.moves {
        let g = usize::from(m.group);
        if map.owner[g].as_deref() != Some(&m.to) && !map.replicas[g].contains(&m.to) {
            map.replicas[g].push(m.to.clone());
        }
        if let Some(node) = plan.map.nodes.get(&m.to) {
            map.nodes.insert(m.to.clone(), node.clone());
        }
    }
    map
}

/// A node by id or announced address.
fn find<'a>(nodes: &'a [NodeInfo], node: &str) -> Option<&'a NodeInfo> {
    nodes
        .iter()
        .find(|n| n.id == node || format!("{}:{}", n.host, n.port) == node)
}

/// What a rebalance did (or would do); `prepared`: the intermediate map of a move
/// (its version, whether every new owner followed in time, how long that took).
fn report(
    cluster: &str,
    plan: &Rebalance,
    stored: Option<u64>,
    prepared: Option<serde_json::Value>,
) -> serde_json::Value {
    json!({
        "cluster": cluster,
        "from_version": plan.from_version,
        "version": stored,
        "applied": stored.is_some(),
        "groups": plan.map.groups,
        "moved_groups": plan.moves.len(),
        "moves": plan.moves,
        "prepared": prepared,
    })
}
