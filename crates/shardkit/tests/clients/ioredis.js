// The client-matrix scenario with ioredis (RESP2), as a user would write it.
//
//   node ioredis.js PORT KEY
//
// Prints RESTART and waits for a line on stdin while the test restarts the server, then
// checks that the same client carries on (ioredis reconnects and replays its queue).
'use strict';
const Redis = require('ioredis');
const { checker, errorExpecter, untilReconnected, waitForRestart } = require('./helpers');

const [port, key] = process.argv.slice(2);
const tag = 'io';

const check = checker('ioredis');
const expectError = errorExpecter(check);

async function main() {
  // Without the key, ioredis's handshake (HELLO) is refused with NOAUTH, as by a Redis
  // with a password, and the connection closes.
  const refusals = [];
  const bare = new Redis({ port: Number(port), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  bare.on('error', (e) => refusals.push(e.message));
  try {
    await bare.connect();
    await bare.incr(`${tag}:0`);
    check(false, 'a command without the key was run');
  } catch (e) {
    refusals.push(e.message);
  }
  check(refusals.some((m) => m.includes('NOAUTH')), `no NOAUTH without the key: ${refusals}`);
  bare.disconnect();

  const r = new Redis({ port: Number(port), password: key });
  r.on('error', () => {});
  check((await r.incr(`${tag}:1`)) === 1, 'INCR');
  check((await r.incrby(`${tag}:1`, 5)) === 6, 'INCRBY');
  check((await r.get(`${tag}:1`)) === '6', 'GET');
  const m = await r.mget(`${tag}:1`, `${tag}:2`);
  check(JSON.stringify(m) === '["6","0"]', `MGET ${JSON.stringify(m)}`);
  check((await r.hincrby(`h${tag}:1`, 'likes', 3)) === 3, 'HINCRBY');
  check((await r.hget(`h${tag}:1`, 'likes')) === '3', 'HGET');
  const hm = await r.hmget(`h${tag}:1`, 'likes', 'nope');
  check(JSON.stringify(hm) === '["3",null]', `HMGET ${JSON.stringify(hm)}`);
  const all = await r.hgetall(`h${tag}:1`);
  check(JSON.stringify(all) === '{"likes":"3"}', `HGETALL ${JSON.stringify(all)}`);
  await expectError(r.decrby(`${tag}:1`, 100), 'below zero', 'DECRBY below zero');
  check((await r.get(`${tag}:1`)) === '6', 'the refused DECRBY kept the value');
  const once = [];
  for (let i = 0; i < 2; i++) {
    once.push(await r.call('COUNTER.INCRBY', `h${tag}:1`, 'likes', '2', 'tx-1'));
  }
  check(JSON.stringify(once) === '[5,5]', `COUNTER.INCRBY with a txid counted once: ${once}`);
  // The case the issue saw: two ids of one call must come out different and exact.
  const ids = await r.call('ID.NEXT', '5', '2');
  check(ids.length === 2 && typeof ids[0] === 'string' && ids[0] !== ids[1], `ID.NEXT ${ids}`);
  check(BigInt(ids[0]) < BigInt(ids[1]) && BigInt(ids[0]) > 2n ** 53n, `ID.NEXT exact: ${ids}`);
  const t1 = await r.call('TICKET.NEXT', `t${tag}`);
  const t2 = await r.call('TICKET.NEXT', `t${tag}`);
  check(t1 === '1' && t2 === '2', `TICKET.NEXT ${t1} ${t2}`);
  for (let i = 0; i < 50; i++) await r.incr(`s${tag}:${i}`);
  const found = new Set();
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `s${tag}:*`, 'COUNT', 10);
    keys.forEach((k) => found.add(k));
    cursor = next;
  } while (cursor !== '0');
  check(found.size === 50, `SCAN found ${found.size} of 50`);
  check((await r.info()).includes('redis_version'), 'INFO');
  const pipe = r.pipeline();
  for (let i = 0; i < 1000; i++) pipe.incr(`p${tag}:1`);
  const replies = await pipe.exec();
  check(replies.length === 1000 && replies[999][1] === 1000, 'a pipeline of 1000 INCR');
  check((await r.incr(`r${tag}:1`)) === 1, 'INCR before the restart');
  await waitForRestart();
  const value = await untilReconnected(check, () => r.incr(`r${tag}:1`));
  check(value === 2, 'the value survived the restart');
  r.disconnect();
  console.log(`ok ioredis ${require('ioredis/package.json').version}`);
}

main().then(() => process.exit(0)).catch((e) => {
  console.error(`FAILED [ioredis]: ${e.stack || e}`);
  process.exit(1);
});
