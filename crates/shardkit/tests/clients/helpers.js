// What the node client scenarios (node_redis.js, ioredis.js) share: a failing check
// ends the process with the reason, an expected error, and the pause for a restart.
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

module.exports = { checker, errorExpecter, waitForRestart };
