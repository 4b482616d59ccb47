// The work of build.sh: builds every example (see build.sh), skipping the
// ones whose inputs hash to the stamp left by their last build. An example
// folder may hold `airlock-build.json`, the build options it needs
// (`{ "batch": true }`: world `batch-handler`, as `airlock-build --batch`).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, SDK_ROOT, toolchainId } from '@airlock/sdk/build';

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error('usage: node build.mjs OUTDIR');
  process.exit(2);
}

/** Every file under `dir` (sorted), skipping node_modules and build outputs. */
function files(dir) {
  const result = [];
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      if (name === 'node_modules' || name.startsWith('.') || name.endsWith('.wasm')) continue;
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else result.push(p);
    }
  };
  walk(dir);
  return result;
}

const sdkFiles = [
  ...files(join(SDK_ROOT, 'src')),
  ...files(join(SDK_ROOT, 'lib')),
  ...files(join(SDK_ROOT, 'wit')),
  join(SDK_ROOT, 'package.json'),
  join(SDK_ROOT, 'package-lock.json'),
  join(here, 'package-lock.json'),
  join(here, 'build.mjs'),
];

/**
 * The `airlock-build` options an example asks for in its
 * `airlock-build.json` (none without one): `{ "batch": true }` builds it
 * for the world `batch-handler` (`airlock-build --batch`).
 */
function buildOptions(name) {
  const file = join(here, name, 'airlock-build.json');
  if (!existsSync(file)) return {};
  const options = JSON.parse(readFileSync(file, 'utf8'));
  for (const [key, value] of Object.entries(options)) {
    if (key !== 'batch' || typeof value !== 'boolean') {
      throw new Error(`${relative(here, file)}: unknown option \`${key}\` (only \`batch\`, true or false)`);
    }
  }
  return options;
}

function stampOf(exampleDir, engine) {
  const h = createHash('sha256');
  // The toolchain's id hashes its package.json, lockfile and loader: new
  // pins of esbuild or an engine rebuild everything.
  h.update(`engine ${engine} node ${process.versions.node} toolchain ${toolchainId()}\n`);
  const options = join(exampleDir, 'airlock-build.json');
  for (const f of [...files(join(exampleDir, 'src')), ...(existsSync(options) ? [options] : []), ...sdkFiles]) {
    h.update(`${relative(here, f)}\n`);
    h.update(readFileSync(f));
  }
  return h.digest('hex');
}

const examples = readdirSync(here)
  .filter((d) => existsSync(join(here, d, 'src', 'handler.ts')))
  .sort();
const jobs = examples.map((name) => ({
  name,
  engine: 'starlingmonkey',
  file: `js_${name.replaceAll('-', '_')}.wasm`,
  options: buildOptions(name),
}));
for (const name of ['noop', 'payment-webhook']) {
  jobs.push({ name, engine: 'quickjs', file: `js_${name.replaceAll('-', '_')}_qjs.wasm`, options: buildOptions(name) });
}

let built = 0;
for (const job of jobs) {
  const dir = join(here, job.name);
  const target = join(out, job.file);
  const stampFile = join(out, `.${job.file}.stamp`);
  const stamp = stampOf(dir, job.engine);
  if (existsSync(target) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
    console.log(`${job.file.padEnd(34)} up to date (${(statSync(target).size / 1048576).toFixed(2)} MiB)`);
    continue;
  }
  try {
    const r = await build({ entry: join(dir, 'src', 'handler.ts'), out: target, engine: job.engine, ...job.options });
    writeFileSync(stampFile, stamp);
    built++;
    const world = job.options.batch ? ', batch-handler' : '';
    console.log(`${job.file.padEnd(34)} built in ${(r.ms / 1000).toFixed(1)} s, ${(r.bytes / 1048576).toFixed(2)} MiB (${job.engine}${world})`);
  } catch (e) {
    console.error(`${job.file}: ${e && e.message ? e.message : e}`);
    process.exit(1);
  }
}
console.log(`js examples: ${built} built, ${jobs.length - built} up to date, in ${out}`);
