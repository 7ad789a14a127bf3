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
    // The command is one file with its dependencies inside: a fresh process resolves and compiles
    // one module instead of seven packages (CommonJS ones through the ESM interop), which
    // measured about 80 ms of each command's start (bench/RESULTS.md, the fresh section).
    noExternal: [/./],
    // Bundled CommonJS dependencies call require() for Node's own modules and read __filename.
    banner: {
      js: [
        '#!/usr/bin/env node',
        "import { createRequire as __turnbackRequire } from 'node:module';",
        "import { fileURLToPath as __turnbackPath } from 'node:url';",
        "import { dirname as __turnbackDirname } from 'node:path';",
        'const require = __turnbackRequire(import.meta.url);',
        'const __filename = __turnbackPath(import.meta.url);',
        'const __dirname = __turnbackDirname(__filename);',
      ].join('\n'),
    },
  },
]);
