#!/usr/bin/env node
// airlock-build <handler.ts|js> -o <out.wasm> [--engine starlingmonkey|quickjs] [--batch] [--minify] [--keep-bundle]
// airlock-build --toolchain
import { build, ENGINES, ensureToolchain } from '../lib/build.mjs';

const USAGE = `usage: airlock-build <handler.ts|.js> -o <out.wasm> [--engine starlingmonkey|quickjs] [--batch] [--minify] [--keep-bundle] [--quiet]
       airlock-build --toolchain

Bundles the handler module (its default export is \`handler(async (data, ctx) => ...)\`
from @airlock/sdk) and builds an Airlock handler component (world \`handler\` of
airlock:job@0.6.0).

  -o, --out <file>      the component to write (default: handler.wasm)
  --engine <engine>     starlingmonkey (default: fetch, ~12 MiB) or quickjs (~1.6 MiB, no fetch)
  --batch               build world \`batch-handler\` (exports \`run\` and \`run-batch\`, what a
                        queue bound with \`batch\` needs); the default export must be
                        \`batchHandler(async (jobs, ctx) => ...)\`
  --minify              minify the bundled JavaScript
  --keep-bundle         also write the bundled JavaScript next to the component (<out>.bundle.js)
  --quiet               print nothing on success (but the line announcing a toolchain install, on stderr)
  --toolchain           install the build toolchain if it is missing and print its directory

The build toolchain (esbuild, componentize-js, componentize-qjs; ~400 MB) is
installed by the first build on a machine, with npm ci, into
\$AIRLOCK_JS_TOOLCHAIN or \${XDG_CACHE_HOME:-~/.cache}/airlock/js-toolchain/<id>;
later builds reuse it.`;

const args = process.argv.slice(2);
let entry;
let out = 'handler.wasm';
let engine = 'starlingmonkey';
let minify = false;
let keepBundle = false;
let batch = false;
let quiet = false;
let toolchainOnly = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    const v = args[++i];
    if (v === undefined) fail(`${a} needs a value`);
    return v;
  };
  if (a === '-h' || a === '--help') {
    console.log(USAGE);
    process.exit(0);
  } else if (a === '-o' || a === '--out') out = value();
  else if (a.startsWith('--out=')) out = a.slice(6);
  else if (a === '--engine') engine = value();
  else if (a.startsWith('--engine=')) engine = a.slice(9);
  else if (a === '--minify') minify = true;
  else if (a === '--keep-bundle') keepBundle = true;
  else if (a === '--batch') batch = true;
  else if (a === '--quiet') quiet = true;
  else if (a === '--toolchain') toolchainOnly = true;
  else if (a.startsWith('-')) fail(`unknown option ${a}`);
  else if (entry === undefined) entry = a;
  else fail(`unexpected argument ${a}`);
}
if (engine === 'sm') engine = 'starlingmonkey';
if (engine === 'qjs') engine = 'quickjs';
if (toolchainOnly) {
  try {
    const { dir } = await ensureToolchain();
    console.log(dir);
    process.exit(0);
  } catch (e) {
    console.error(`airlock-build: ${e && e.message ? e.message : e}`);
    process.exit(1);
  }
}
if (!entry) fail('no handler module given');
if (!ENGINES.includes(engine)) fail(`unknown engine ${engine}`);

function fail(message) {
  console.error(`airlock-build: ${message}\n\n${USAGE}`);
  process.exit(2);
}

try {
  const r = await build({ entry, out, engine, minify, keepBundle, batch });
  if (!quiet) {
    const installed = r.toolchainMs ? ` (after ${(r.toolchainMs / 1000).toFixed(1)} s installing the toolchain)` : '';
    console.log(`airlock-build: ${r.out} (${engine}${batch ? ', world batch-handler' : ''}) ${(r.bytes / 1048576).toFixed(2)} MiB in ${(r.ms / 1000).toFixed(1)} s${installed}`);
  }
} catch (e) {
  console.error(`airlock-build: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
