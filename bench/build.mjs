// Builds a private bundle of src/ for benchmarking without touching dist/ (which the end-to-end
// tests use): node bench/build.mjs NAME → .bench-build/NAME/index.js. Then run the bench with
// TURNBACK_DIST=.bench-build/NAME node --expose-gc bench/run.mjs
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const name = process.argv[2] ?? 'local';
if (!/^[\w-]+$/.test(name)) throw new Error(`bad build name ${name}`);
const outfile = path.join(root, '.bench-build', name, 'index.js');
await build({
  entryPoints: [path.join(root, 'src', 'index.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  outfile,
  logLevel: 'warning',
});
console.log(`TURNBACK_DIST=${path.dirname(outfile)}`);
