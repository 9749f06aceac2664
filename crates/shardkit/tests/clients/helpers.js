// What the node client scenarios (node_redis.js, ioredis.js) share: a failing check
// ends the process with the reason, an expected error, the pause for a restart and the
// retry until the client has reconnected.
'use strict';
const readline = require('readline');

// check(cond, what) exits 1 with "FAILED [label]: what" on stderr unless cond holds.
function checker(label) {
  return function check(cond, what) {
    if (!cond) {
      console.error(`FAILED [${label}]: ${what}`);
      process.exit(1);
    }
  };
}

// Awaits `promise`, which must fail with a message containing `needle`.
function errorExpecter(check) {
  return async function expectError(promise, needle, what) {
    try {
      await promise;
    } catch (e) {
      check(String(e.message).includes(needle), `${what}: ${e.message} should mention ${needle}`);
      return;
    }
    check(false, `${what}: no error`);
  };
}

// Prints RESTART and resolves when the test writes a line on stdin (server restarted).
function waitForRestart() {
  console.log('RESTART');
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.once('line', () => {
      rl.close();
      resolve();
    });
  });
}

// Runs `command` until the client has reconnected after a restart (20 s at most) and
// answers its result.
async function untilReconnected(check, command) {
  const deadline = Date.now() + 20000;
  for (;;) {
    try {
      return await command();
    } catch (e) {
      check(Date.now() < deadline, `no reconnect within 20 s: ${e.message}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }
}

module.exports = { checker, errorExpecter, untilReconnected, waitForRestart };
