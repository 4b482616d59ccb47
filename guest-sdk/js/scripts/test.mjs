#!/usr/bin/env node
// Runs the unit tests under plain `node --test`, without a host: each
// test/*.test.ts is bundled twice with esbuild — once as a StarlingMonkey
// build sees the SDK, once as a QuickJS build does (the SyncPromise
// prelude, async lowered to generators, QuickJS-shaped fake imports) —
// with `airlock:job/*` aliased to the in-memory fakes in test/fake/.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, '.test-dist');
const fakes = {
  'airlock:job/context@0.6.0': join(root, 'test', 'fake', 'context.ts'),
  'airlock:job/config@0.6.0': join(root, 'test', 'fake', 'config.ts'),
};
const tests = readdirSync(join(root, 'test')).filter((f) => f.endsWith('.test.ts'));
rmSync(out, { recursive: true, force: true });

const files = [];
for (const engine of ['starlingmonkey', 'quickjs']) {
  await build({
    entryPoints: tests.map((t) => join(root, 'test', t)),
    outdir: join(out, engine),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    define: { __AIRLOCK_ENGINE__: JSON.stringify(engine) },
    supported: engine === 'quickjs' ? { 'async-await': false, 'async-generator': false, 'for-await': false } : {},
    inject: engine === 'quickjs' ? [join(root, 'src', 'quickjs-prelude.ts')] : [],
    plugins: [
      {
        name: 'fake-airlock',
        setup(b) {
          b.onResolve({ filter: /^airlock:/ }, (args) => {
            const path = fakes[args.path];
            return path ? { path } : { errors: [{ text: `no fake for ${args.path}` }] };
          });
        },
      },
    ],
    logLevel: 'warning',
  });
  for (const t of tests) files.push(join(out, engine, t.replace(/\.ts$/, '.mjs')));
}

const r = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
