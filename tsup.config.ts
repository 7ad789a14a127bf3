import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts', admin: 'src/admin.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    // One shared chunk for both entries in both formats: a store view opened through
    // turnback/admin must be the same class world as the observer of turnback.
    splitting: true,
    // import.meta.url (where the stat helper thread's program is) in the CJS build.
    shims: true,
  },
  {
    // The stat helper thread's program: a file of its own, loaded by new Worker(url).
    entry: { 'lstat-worker': 'src/fs/lstat-worker.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: true,
    target: 'node20',
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
