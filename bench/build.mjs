// Builds a private bundle of src/ for benchmarking without touching dist/ (which the end-to-end
// tests use): node bench/build.mjs NAME → .bench-build/NAME/{index,admin,lstat-worker}.js. Then run the bench with
// TURNBACK_DIST=.bench-build/NAME node --expose-gc bench/run.mjs
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const name = process.argv[2] ?? 'local';
if (!/^[\w-]+$/.test(name)) throw new Error(`bad build name ${name}`);
const outdir = path.join(root, '.bench-build', name);
await build({
  entryPoints: { index: path.join(root, 'src', 'index.ts'), admin: path.join(root, 'src', 'admin.ts'), 'lstat-worker': path.join(root, 'src', 'fs', 'lstat-worker.ts') },
  bundle: true,
  // One shared chunk: a store view from admin.js must be the same class world as index.js.
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  outdir,
  logLevel: 'warning',
});
console.log(`TURNBACK_DIST=${outdir}`);
