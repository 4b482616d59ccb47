// Bundles the dashboard into dist/{index.html,app.js,app.css,favicon.svg}:
// one script and one stylesheet, loaded relative to /ui/, nothing inline
// (the pages are served with a strict Content-Security-Policy).
//
//   node build.mjs        (build.sh calls it; it also skips unchanged builds)
import { build } from 'esbuild';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await build({
  entryPoints: { app: join(here, 'src/main.tsx') },
  outdir: dist,
  bundle: true,
  format: 'iife',
  target: ['es2022'],
  platform: 'browser',
  minify: true,
  legalComments: 'linked',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
await copyFile(join(here, 'src/index.html'), join(dist, 'index.html'));
await copyFile(join(here, 'src/favicon.svg'), join(dist, 'favicon.svg'));
console.log(`built ${dist}`);
