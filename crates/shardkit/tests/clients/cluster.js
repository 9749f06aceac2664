// A cluster client against a shardkit cluster (tests/cluster_mode.rs), as a user would
// write it: ioredis's `Cluster` or node-redis's `createCluster`.
//
//   node cluster.js ioredis|node-redis PORT
//
// Counts 300 keys over every slot group and 20 hash-tagged rows, prints "counted N",
// waits for a line on stdin (the test adds a node and rebalances), counts them all again
// with the same client, which must follow the MOVED replies, and checks every total;
// then walks every master with SCAN: the values under the keys listed add up to every
// count.
'use strict';
const readline = require('readline');
const { checker } = require('./helpers');

const [kind, port] = process.argv.slice(2);
const check = checker(kind);
const KEYS = Array.from({ length: 300 }, (_, i) => `weibo:${i}:likes`);
const ROWS = Array.from({ length: 20 }, (_, i) => `weibo:{${1000 + i}}`);

function connect() {
  if (kind === 'ioredis') {
    const { Cluster } = require('ioredis');
    return new Cluster([{ host: '127.0.0.1', port: Number(port) }]);
  }
  const { createCluster } = require('redis');
  const c = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
  c.on('error', (e) => console.error(`client error: ${e.message}`));
  return c;
}

// The two clients name a few commands differently.
const api = (c) =>
  kind === 'ioredis'
    ? {
        incr: (k) => c.incr(k),
        get: (k) => c.get(k),
        hincrby: (k, f, n) => c.hincrby(k, f, n),
        hget: (k, f) => c.hget(k, f),
        mget: (...ks) => c.mget(...ks),
        type: (k) => c.type(k),
        hvals: (k) => c.hvals(k),
      }
    : {
        incr: (k) => c.incr(k),
        get: (k) => c.get(k),
        hincrby: (k, f, n) => c.hIncrBy(k, f, n),
        hget: (k, f) => c.hGet(k, f),
        mget: (...ks) => c.mGet(ks),
        type: (k) => c.type(k),
        hvals: (k) => c.hVals(k),
      };

// Every key matching weibo:* on every master, each master walked with SCAN.
async function scanMasters(c) {
  const keys = [];
  if (kind === 'ioredis') {
    for (const node of c.nodes('master')) {
      let cursor = '0';
      do {
        const [next, page] = await node.scan(cursor, 'MATCH', 'weibo:*', 'COUNT', 50);
        keys.push(...page);
        cursor = next;
      } while (cursor !== '0');
    }
    return keys;
  }
  for (const master of c.masters) {
    const client = await c.nodeClient(master);
    for await (const page of client.scanIterator({ MATCH: 'weibo:*', COUNT: 50 })) keys.push(...page);
  }
  return keys;
}

async function countRound(r) {
  for (const k of KEYS) await r.incr(k);
  for (const row of ROWS) {
    await r.hincrby(row, 'comments', 3);
    await r.hincrby(row, 'likes', 1);
  }
}

async function main() {
  const c = connect();
  if (kind !== 'ioredis') await c.connect();
  const r = api(c);
  await countRound(r);
  for (const k of KEYS) check((await r.get(k)) === '1', `${k} after the first round`);
  console.log(`counted ${KEYS.length}`);
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once('line', resolve));
  rl.close();
  await countRound(r);
  for (const k of KEYS) check((await r.get(k)) === '2', `${k} after the rebalance`);
  for (const row of ROWS) {
    check((await r.hget(row, 'comments')) === '6', `${row} comments`);
    // The keys of one row share its slot: one multi-key command serves them.
    const got = await r.mget(`${row}:comments`, `${row}:likes`);
    check(JSON.stringify(got) === JSON.stringify(['6', '2']), `${row}: ${JSON.stringify(got)}`);
  }
  // SCAN each master (each lists the keys of its own slots): the values under the
  // keys listed add up to every count, none twice.
  const listed = await scanMasters(c);
  check(new Set(listed).size === listed.length, `a key listed twice: ${listed.length}`);
  let total = 0;
  for (const k of listed) {
    if ((await r.type(k)) === 'hash') {
      for (const v of await r.hvals(k)) total += Number(v);
    } else {
      total += Number(await r.get(k));
    }
  }
  check(total === KEYS.length * 2 + ROWS.length * 8, `scanned ${listed.length} keys holding ${total}`);
  await c.quit();
  console.log(`ok ${kind} ${KEYS.length} keys twice, ${ROWS.length} rows, ${listed.length} keys scanned`);
}

main().catch((e) => {
  console.error(`FAILED [${kind}]: ${e.stack || e}`);
  process.exit(1);
});
