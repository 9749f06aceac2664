// ioredis's `sentinels` option against shardkit nodes (every node is a sentinel of its
// store), as the redis-py script does it:
//
//   node sentinel_failover.js SENTINELS STORE COUNT
//     SENTINELS: host:port,host:port,...   STORE: the store (master) name
//
// Increments through one ioredis client COUNT times, each with its own txid; an increment
// that fails (the master died, a replica refused it) is sent again with the same txid, so
// it is counted once. Prints "master HOST:PORT" before and after (asked of a sentinel),
// "acked N" every 50, and last "ok COUNT RETRIES".
'use strict';
const Redis = require('ioredis');

const [list, store, countText] = process.argv.slice(2);
const sentinels = list.split(',').map((a) => {
  const at = a.lastIndexOf(':');
  return { host: a.slice(0, at), port: Number(a.slice(at + 1)) };
});
const count = Number(countText);

async function masterAddr() {
  for (const s of sentinels) {
    const probe = new Redis({ ...s, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      const addr = await probe.call('SENTINEL', 'get-master-addr-by-name', store);
      if (addr) return `${addr[0]}:${addr[1]}`;
    } catch (e) {
      // That sentinel is down: ask the next.
    } finally {
      probe.disconnect();
    }
  }
  return '?';
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  console.log(`master ${await masterAddr()}`);
  const client = new Redis({
    sentinels,
    name: store,
    // A write refused by a node that no longer leads: reconnect (asking the sentinels).
    reconnectOnError: (e) => e.message.startsWith('READONLY'),
    retryStrategy: () => 50,
    sentinelRetryStrategy: () => 50,
  });
  client.on('error', () => {});
  let retries = 0;
  for (let n = 0; n < count; n++) {
    const txid = `io-${n}`;
    const deadline = Date.now() + 60000;
    for (;;) {
      try {
        await client.call('COUNTER.INCRBY', 'io:1', 'hits', 1, txid);
        break;
      } catch (e) {
        retries += 1;
        if (Date.now() > deadline) throw e;
        console.error(`retry ${txid}: ${e.message}`);
        await sleep(50);
      }
    }
    if ((n + 1) % 50 === 0) console.log(`acked ${n + 1}`);
  }
  console.log(`master ${await masterAddr()}`);
  console.log(`ok ${count} ${retries}`);
  client.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
