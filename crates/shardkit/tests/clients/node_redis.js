// The client-matrix scenario with node-redis, as a user would write it.
//
//   node node_redis.js PORT KEY RESP     RESP: 3 (node-redis 6's default) or 2
//
// Prints RESTART and waits for a line on stdin while the test restarts the server, then
// checks that the same client carries on. Exits 1 with the failed check on stderr.
'use strict';
const { createClient } = require('redis');
const { checker, errorExpecter, untilReconnected, waitForRestart } = require('./helpers');

const [port, key, respArg] = process.argv.slice(2);
const RESP = Number(respArg);
const tag = `nr${RESP}`;

const check = checker(`node-redis RESP${RESP}`);
const expectError = errorExpecter(check);

async function main() {
  // Without the key: RESP3's handshake (HELLO 3) is refused; in RESP2 the connection
  // opens and the first command is.
  const bare = createClient({ socket: { port: Number(port), reconnectStrategy: false }, RESP });
  bare.on('error', () => {});
  if (RESP === 3) {
    await expectError(bare.connect(), 'NOAUTH', 'connecting without the key');
  } else {
    await bare.connect();
    await expectError(bare.incr(`${tag}:0`), 'NOAUTH', 'a command without the key');
    await bare.quit();
  }

  const r = createClient({ socket: { port: Number(port) }, password: key, RESP });
  r.on('error', () => {});
  await r.connect();
  check((await r.incr(`${tag}:1`)) === 1, 'INCR');
  check((await r.incrBy(`${tag}:1`, 5)) === 6, 'INCRBY');
  check((await r.get(`${tag}:1`)) === '6', 'GET');
  const m = await r.mGet([`${tag}:1`, `${tag}:2`]);
  check(JSON.stringify(m) === '["6","0"]', `MGET ${JSON.stringify(m)}`);
  check((await r.hIncrBy(`h${tag}:1`, 'likes', 3)) === 3, 'HINCRBY');
  check((await r.hGet(`h${tag}:1`, 'likes')) === '3', 'HGET');
  const hm = await r.hmGet(`h${tag}:1`, ['likes', 'nope']);
  check(JSON.stringify(hm) === '["3",null]', `HMGET ${JSON.stringify(hm)}`);
  const all = await r.hGetAll(`h${tag}:1`);
  check(JSON.stringify({ ...all }) === '{"likes":"3"}', `HGETALL ${JSON.stringify(all)}`);
  await expectError(r.decrBy(`${tag}:1`, 100), 'below zero', 'DECRBY below zero');
  check((await r.get(`${tag}:1`)) === '6', 'the refused DECRBY kept the value');
  const once = [];
  for (let i = 0; i < 2; i++) {
    once.push(await r.sendCommand(['COUNTER.INCRBY', `h${tag}:1`, 'likes', '2', 'tx-1']));
  }
  check(JSON.stringify(once) === '[5,5]', `COUNTER.INCRBY with a txid counted once: ${once}`);
  const ids = await r.sendCommand(['ID.NEXT', '5', '2']);
  check(ids.length === 2 && typeof ids[0] === 'string', `ID.NEXT gives strings: ${ids}`);
  check(BigInt(ids[0]) < BigInt(ids[1]) && BigInt(ids[0]) > 2n ** 53n, `ID.NEXT exact: ${ids}`);
  const t1 = await r.sendCommand(['TICKET.NEXT', `t${tag}`]);
  const t2 = await r.sendCommand(['TICKET.NEXT', `t${tag}`]);
  check(t1 === '1' && t2 === '2', `TICKET.NEXT ${t1} ${t2}`);
  for (let i = 0; i < 50; i++) await r.incr(`s${tag}:${i}`);
  const found = new Set();
  for await (const keys of r.scanIterator({ MATCH: `s${tag}:*`, COUNT: 10 })) {
    for (const k of [].concat(keys)) found.add(k);
  }
  check(found.size === 50, `SCAN found ${found.size} of 50`);
  const info = await r.info();
  check(String(info).includes('redis_version'), 'INFO');
  const pipe = r.multi();
  for (let i = 0; i < 1000; i++) pipe.incr(`p${tag}:1`);
  const replies = await pipe.execAsPipeline();
  check(replies.length === 1000 && replies[999] === 1000, 'a pipeline of 1000 INCR');
  check((await r.incr(`r${tag}:1`)) === 1, 'INCR before the restart');
  await waitForRestart();
  const value = await untilReconnected(check, () => r.incr(`r${tag}:1`));
  check(value === 2, 'the value survived the restart');
  await r.quit();
  console.log(`ok node-redis RESP${RESP} ${require('redis/package.json').version}`);
}

main().then(() => process.exit(0)).catch((e) => {
  console.error(`FAILED [node-redis RESP${RESP}]: ${e.stack || e}`);
  process.exit(1);
});
