// Builds an Airlock handler component from a TypeScript/JavaScript module:
//
//   1. esbuild bundles the handler, the SDK and any npm dependencies into
//      one ES module (TypeScript stripped, `airlock:*`/`wasi:*` imports left
//      for the engine to bind), behind a generated entry that exports `run`;
//   2. componentize-js (StarlingMonkey, the default) or componentize-qjs
//      (QuickJS) turns it into a component of the world `handler` of the
//      WIT bundled with this package (wit/airlock.wit) — or, with `batch`,
//      of the world `batch-handler`, whose entry also exports `runBatch`.
//
// esbuild and the engines are not dependencies of this package: they come
// from the build toolchain, installed once per machine outside any project
// (see toolchain.mjs).
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureToolchain, loadToolchain } from './toolchain.mjs';

export { ensureToolchain, toolchainDir, toolchainId, TOOLCHAIN_SOURCE } from './toolchain.mjs';

/** The SDK package root (real path, so it matches what esbuild resolves). */
export const SDK_ROOT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), '..'));
/** The contract handlers are built against. */
export const WIT_PATH = join(SDK_ROOT, 'wit', 'airlock.wit');
export const WORLD = 'handler';
/** The world of a `batch` build: `handler`'s, plus `run-batch`. */
export const BATCH_WORLD = 'batch-handler';
export const ENGINES = ['starlingmonkey', 'quickjs'];

const SDK_ENTRIES = {
  '': 'src/index.ts',
  '/internal': 'src/internal.ts',
  '/quickjs-prelude': 'src/quickjs-prelude.ts',
};

/** Resolves `@airlock/sdk` to this very package, so a bundle holds one copy of it. */
function sdkPlugin() {
  return {
    name: 'airlock-sdk',
    setup(build) {
      build.onResolve({ filter: /^@airlock\/sdk(\/.*)?$/ }, (args) => {
        const sub = args.path.slice('@airlock/sdk'.length);
        const file = SDK_ENTRIES[sub];
        if (!file) return { errors: [{ text: `@airlock/sdk has no export "${args.path}"` }] };
        return { path: join(SDK_ROOT, file) };
      });
      build.onResolve({ filter: /^(airlock|wasi):/ }, (args) => ({ path: args.path, external: true }));
    },
  };
}

function entrySource(entry, engine, batch) {
  const lines = [];
  if (engine === 'quickjs') lines.push(`import '@airlock/sdk/quickjs-prelude';`);
  lines.push(`import * as handlerModule from ${JSON.stringify(entry)};`);
  if (batch) {
    lines.push(`import { toRun, toRunBatch } from '@airlock/sdk/internal';`);
    lines.push(`export const run = toRun(handlerModule);`);
    lines.push(`export const runBatch = toRunBatch(handlerModule);`);
  } else {
    lines.push(`import { toRun } from '@airlock/sdk/internal';`);
    lines.push(`export const run = toRun(handlerModule);`);
  }
  return lines.join('\n') + '\n';
}

/**
 * Bundles `entry` into one ES module for `engine`; its text. With `batch`,
 * the entry also exports `runBatch` (the module's default export must be
 * made by `batchHandler`).
 * @param {{ entry: string, engine?: string, minify?: boolean, batch?: boolean }} opts
 */
export async function bundle({ entry, engine = 'starlingmonkey', minify = false, batch = false }) {
  const esbuild = await (await loadToolchain()).esbuild();
  const abs = resolve(entry);
  const result = await esbuild.build({
    stdin: { contents: entrySource(abs, engine, batch), resolveDir: dirname(abs), sourcefile: 'airlock-entry.js', loader: 'js' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['airlock', engine, 'import', 'default'],
    target: 'es2022',
    // QuickJS: the synchronous `run` cannot wait on native promises (see
    // src/sync-promise.ts), so async functions become generators driving
    // the SDK's own Promise.
    supported: engine === 'quickjs' ? { 'async-await': false, 'async-generator': false, 'for-await': false } : {},
    define: { __AIRLOCK_ENGINE__: JSON.stringify(engine) },
    plugins: [sdkPlugin()],
    minify,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'silent',
  }).catch((e) => {
    const messages = (e.errors || []).map((m) => (m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ${m.text}` : m.text));
    throw new Error(`bundling ${entry} failed:\n  ${messages.join('\n  ') || e.message}`);
  });
  return result.outputFiles[0].text;
}

/**
 * Builds `entry` into the component `out`: world `handler`, or with
 * `batch` world `batch-handler` (exports `run` and `run-batch`; the
 * module's default export must be made by `batchHandler`). The first
 * build on a machine installs the toolchain first (`toolchainMs`, not
 * counted in `ms`).
 * @param {{ entry: string, out: string, engine?: string, minify?: boolean, keepBundle?: boolean, batch?: boolean }} opts
 * @returns {Promise<{ out: string, engine: string, world: string, bytes: number, ms: number, bundleBytes: number, toolchainMs: number }>}
 */
export async function build({ entry, out, engine = 'starlingmonkey', minify = false, keepBundle = false, batch = false }) {
  if (!ENGINES.includes(engine)) throw new Error(`unknown engine \`${engine}\` (one of ${ENGINES.join(', ')})`);
  if (!existsSync(entry)) throw new Error(`no such handler module: ${entry}`);
  const world = batch ? BATCH_WORLD : WORLD;
  const { installedMs: toolchainMs } = await ensureToolchain();
  const started = performance.now();
  const source = await bundle({ entry, engine, minify, batch });
  const work = await mkdtemp(join(tmpdir(), 'airlock-build-'));
  const bundlePath = join(work, 'handler.bundle.js');
  await writeFile(bundlePath, source);
  let component;
  try {
    component =
      engine === 'quickjs'
        ? await componentizeQuickJs(bundlePath, source, world)
        : await componentizeStarlingMonkey(bundlePath, world);
  } finally {
    if (keepBundle) await writeFile(`${out}.bundle.js`, source);
    await rm(work, { recursive: true, force: true });
  }
  await mkdir(dirname(resolve(out)), { recursive: true });
  await writeFile(out, component);
  const { size } = await stat(out);
  return { out, engine, world, bytes: size, ms: Math.round(performance.now() - started), bundleBytes: Buffer.byteLength(source), toolchainMs };
}

async function componentizeStarlingMonkey(sourcePath, world) {
  const { componentize } = await (await loadToolchain()).componentizeJs();
  // Default features: stdio, random, clocks and http (`fetch`, which goes
  // through wasi:http under the host's egress rules).
  const { component } = await componentize({ sourcePath, witPath: WIT_PATH, worldName: world });
  return component;
}

async function componentizeQuickJs(jsPath, jsSource, world) {
  const { componentize } = await (await loadToolchain()).componentizeQjs();
  // `sync`: the non-async runtime; the host calls `run` (and `run-batch`)
  // without the component-model async ABI.
  const { component } = await componentize({ witPath: WIT_PATH, jsSource, jsPath, world, sync: true });
  return component;
}
