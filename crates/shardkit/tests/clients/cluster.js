// A cluster client against a shardkit cluster (tests/cluster_mode.rs), as a user would
// write it: ioredis's `Cluster` or node-redis's `createCluster`.
//
//   node cluster.js ioredis|node-redis PORT
//
// Counts 300 keys over every slot group and 20 hash-tagged rows, prints "counted N",
// waits for a line on stdin (the test adds a node and rebalances), counts them all again
// with the same client, which must follow the MOVED replies, and checks every total.
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
      }
    : {
        incr: (k) => c.incr(k),
        get: (k) => c.get(k),
        hincrby: (k, f, n) => c.hIncrBy(k, f, n),
        hget: (k, f) => c.hGet(k, f),
        mget: (...ks) => c.mGet(ks),
      };

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
  await c.quit();
  console.log(`ok ${kind} ${KEYS.length} keys twice, ${ROWS.length} rows`);
}

main().catch((e) => {
  console.error(`FAILED [${kind}]: ${e.stack || e}`);
  process.exit(1);
});
