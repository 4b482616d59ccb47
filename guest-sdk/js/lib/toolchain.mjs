// The build toolchain of airlock-build: esbuild, componentize-js
// (StarlingMonkey) and componentize-qjs (QuickJS), pinned exactly by
// toolchain/package.json and toolchain/package-lock.json.
//
// They are not dependencies of @airlock/sdk: they weigh ~400 MB on disk
// (the engines, binaryen, wizer...), which every project would otherwise
// carry in its node_modules. The first build on a machine installs them
// with `npm ci` (from that lockfile, through the npm registry) into one
// shared directory outside any project,
//
//   $AIRLOCK_JS_TOOLCHAIN, or else
//   ${XDG_CACHE_HOME:-$HOME/.cache}/airlock/js-toolchain/<id>
//
// where <id> is a short hash of the three files in toolchain/ (so a change
// of the pins installs a new directory next to the old one), and later
// builds, of any project, reuse it. The install goes into a temporary
// sibling directory that is renamed into place once `npm ci` succeeded, so
// builds started at the same time never see a half-installed toolchain:
// the first rename wins and the others discard their copy.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Where the toolchain's package.json, lockfile and loader are (in the SDK). */
export const TOOLCHAIN_SOURCE = join(realpathSync(join(dirname(fileURLToPath(import.meta.url)), '..')), 'toolchain');
const FILES = ['package.json', 'package-lock.json', 'load.mjs'];
/** Written into the toolchain directory after `npm ci` succeeded: its id. */
const MARKER = '.airlock-toolchain';
// Measured on Linux x64 with toolchain 0.2.0 (componentize-js 0.23.0,
// componentize-qjs 0.4.5, esbuild 0.28.2): 399 MB installed, from 137 MB
// of packages that npm downloads into its cache.
const SIZE = '~400 MB, from a ~140 MB download';
const NPM_ARGS = ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--update-notifier=false'];

let id;
/** A short hash of the toolchain's files: the name of its directory. */
export function toolchainId() {
  if (!id) {
    const h = createHash('sha256');
    for (const f of FILES) {
      h.update(`${f}\0`);
      h.update(readFileSync(join(TOOLCHAIN_SOURCE, f)));
      h.update('\0');
    }
    id = h.digest('hex').slice(0, 12);
  }
  return id;
}

/** The directory the toolchain is (or will be) installed in. */
export function toolchainDir() {
  if (process.env.AIRLOCK_JS_TOOLCHAIN) return resolve(process.env.AIRLOCK_JS_TOOLCHAIN);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'airlock', 'js-toolchain', toolchainId());
}

function installedIn(dir) {
  try {
    return readFileSync(join(dir, MARKER), 'utf8').trim() === toolchainId();
  } catch {
    return false;
  }
}

function versions() {
  const deps = JSON.parse(readFileSync(join(TOOLCHAIN_SOURCE, 'package.json'), 'utf8')).dependencies;
  return ['esbuild', '@bytecodealliance/componentize-js', 'componentize-qjs']
    .map((name) => `${name.replace('@bytecodealliance/', '')} ${deps[name]}`)
    .join(', ');
}

/** The npm to run: the one running this build (`npm run build`), else `npm` on PATH. */
function npmCommand() {
  const execPath = process.env.npm_execpath;
  if (execPath && /npm-cli\.[cm]?js$/.test(execPath)) return { command: process.execPath, prefix: [execPath], shell: false };
  return { command: process.platform === 'win32' ? 'npm.cmd' : 'npm', prefix: [], shell: process.platform === 'win32' };
}

function runNpm(cwd) {
  const { command, prefix, shell } = npmCommand();
  // The project's own npm settings reach a build run by `npm run` as
  // npm_config_* variables; those naming the project must not apply here.
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^npm_(config_local_prefix|config_loglevel|package_|lifecycle_)/i.test(key)) delete env[key];
  }
  return new Promise((done) => {
    let output = '';
    const child = spawn(command, [...prefix, ...NPM_ARGS], { cwd, env, shell, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (e) => done({ code: null, output: e.code === 'ENOENT' ? `${command}: not found on PATH` : String(e) }));
    child.on('close', (code) => done({ code, output }));
  });
}

/** Removes what interrupted installs left next to `dir` (a day old or more). */
async function sweep(parent, name) {
  const entries = await readdir(parent).catch(() => []);
  for (const e of entries) {
    if (!e.startsWith(`${name}.tmp-`) && !e.startsWith(`${name}.old-`)) continue;
    const p = join(parent, e);
    const s = await stat(p).catch(() => null);
    if (s && Date.now() - s.mtimeMs > 24 * 3600 * 1000) await rm(p, { recursive: true, force: true });
  }
}

function notOurs(dir) {
  return new Error(
    `${dir} exists and is not an Airlock JS build toolchain (no ${MARKER} in it): ` +
      `remove it, or set AIRLOCK_JS_TOOLCHAIN to another directory`,
  );
}

async function install(dir, log) {
  const parent = dirname(dir);
  const name = basename(dir);
  const present = await readdir(dir).catch(() => null);
  if (present && present.length > 0 && !present.includes(MARKER)) throw notOurs(dir);
  log(
    `airlock-build: installing the JS build toolchain (${versions()}; ${SIZE}) into ${dir} ` +
      `with \`npm ${NPM_ARGS.join(' ')}\`: once per machine, then every build reuses it; ` +
      `this takes from ten seconds to a few minutes, depending on the network`,
  );
  try {
    await mkdir(parent, { recursive: true });
  } catch (e) {
    throw new Error(`cannot create ${parent} for the JS build toolchain (${e.message}); set AIRLOCK_JS_TOOLCHAIN to a writable directory`);
  }
  await sweep(parent, name);
  const tmp = await mkdtemp(join(parent, `${name}.tmp-`));
  try {
    await chmod(tmp, 0o755); // mkdtemp makes it 0700: the toolchain may be shared
    for (const f of FILES) await copyFile(join(TOOLCHAIN_SOURCE, f), join(tmp, f));
    const { code, output } = await runNpm(tmp);
    if (code !== 0) {
      const lines = output.trim().split('\n').filter((l) => !/^npm error\s+at /.test(l)); // no stack frames
      throw new Error(
        `could not install the JS build toolchain into ${dir}: \`npm ${NPM_ARGS.join(' ')}\` ` +
          `(run in a temporary directory beside it, ${basename(tmp)}, now removed) ` +
          `${code === null ? 'did not start' : `exited with status ${code}`}:\n  ${lines.slice(-20).join('\n  ')}\n` +
          `Check that npm reaches its registry (\`npm config get registry\`, proxy settings) and build again; ` +
          `AIRLOCK_JS_TOOLCHAIN=<dir> installs the toolchain elsewhere.`,
      );
    }
    await writeFile(join(tmp, MARKER), `${toolchainId()}\n`);
    try {
      await rename(tmp, dir);
    } catch (e) {
      if (installedIn(dir)) return; // another build installed it meanwhile
      if (!['ENOTEMPTY', 'EEXIST', 'EPERM'].includes(e.code)) throw e;
      // In the way: a toolchain of other pins (AIRLOCK_JS_TOOLCHAIN kept
      // across an SDK update) is moved aside and replaced; anything else
      // is not this code's to delete.
      if (!(await stat(join(dir, MARKER)).catch(() => null))) throw notOurs(dir);
      const old = `${dir}.old-${process.pid}-${Date.now()}`;
      await rename(dir, old);
      await rename(tmp, dir).catch((e2) => {
        if (!installedIn(dir)) throw e2;
      });
      await rm(old, { recursive: true, force: true });
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

let ready;
let reported = false;
/**
 * The toolchain's directory, installed first when missing (printing one
 * line through `log`). `installedMs` is the time the install took: 0 when
 * the toolchain was there already, and on every later call in this process.
 * @param {{ log?: (line: string) => void }} [opts]
 * @returns {Promise<{ dir: string, id: string, installedMs: number }>}
 */
export async function ensureToolchain({ log = (line) => console.error(line) } = {}) {
  if (!ready) {
    ready = (async () => {
      const dir = toolchainDir();
      const started = performance.now();
      if (installedIn(dir)) return { dir, id: toolchainId(), installedMs: 0 };
      await install(dir, log);
      return { dir, id: toolchainId(), installedMs: Math.round(performance.now() - started) };
    })();
    ready.catch(() => (ready = undefined)); // a failed install is tried again by the next call
  }
  const result = await ready;
  if (reported) return { ...result, installedMs: 0 };
  reported = true;
  return result;
}

let loaded;
/**
 * The toolchain's loader module (`toolchain/load.mjs`, imported from the
 * toolchain's directory): `esbuild()`, `componentizeJs()`, `componentizeQjs()`.
 */
export async function loadToolchain(opts) {
  const { dir } = await ensureToolchain(opts);
  loaded ??= import(pathToFileURL(join(dir, 'load.mjs')).href);
  return loaded;
}
