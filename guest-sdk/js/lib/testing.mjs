// Drives `airlock test` from Node's own test runner: the component under
// test is the very .wasm you deploy; the fixtures are the JSON files
// `airlock test` reads (see the README, "Test a handler against fixtures").
//
//   import { fixtureTests } from '@airlock/sdk/testing';
//   fixtureTests('hello.wasm', ['fixtures']);   // in hello.test.mjs, run by `node --test`
import { spawn } from 'node:child_process';
import { test } from 'node:test';

/** Runs `airlock test --json COMPONENT FIXTURES...`; resolves to its outcomes. */
export function runFixtures(component, fixtures, { airlock = process.env.AIRLOCK_BIN || 'airlock' } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(airlock, ['--json', 'test', component, ...fixtures], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', (e) => reject(new Error(`cannot run ${airlock}: ${e.message} (set AIRLOCK_BIN)`)));
    child.on('close', (code) => {
      // Exit 1 with the outcomes on stdout: some fixture failed. Anything
      // else without them: the command itself failed.
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`airlock test exited ${code}: ${err.trim() || out.trim()}`));
      }
    });
  });
}

/** Registers a test whose subtests are the fixtures, one each, failing with the fixture's failures. */
export function fixtureTests(component, fixtures, options) {
  test(`airlock test ${component}`, async (t) => {
    const outcomes = await runFixtures(component, fixtures, options);
    for (const outcome of outcomes) {
      await t.test(outcome.name, () => {
        if (!outcome.passed) throw new Error(outcome.failures.join('\n'));
      });
    }
  });
}
