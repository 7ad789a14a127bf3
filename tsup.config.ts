import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts', admin: 'src/admin.ts', savepoint: 'src/savepoint.ts', 'ai-sdk': 'src/ai-sdk.ts', mcp: 'src/mcp.ts', 'openai-agents': 'src/openai-agents.ts', langchain: 'src/langchain.ts', acp: 'src/acp.ts', hooks: 'src/hooks.ts', 'claude-agent-sdk': 'src/claude-agent-sdk.ts', remote: 'src/remote.ts' },
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
    entry: { 'cli/main': 'src/cli/main.ts', 'cli/turnback': 'src/cli/client.ts' },
    // The command is one CommonJS file with its dependencies inside. A fresh process then
    // compiles one module instead of seven packages, and never loads Node's ESM loader: together
    // about 90 ms of each command's start (bench/RESULTS.md, the fresh section). `cli/turnback`
    // is the small client a person starts (src/cli/client.ts): it loads `cli/main` only when it
    // runs a command itself.
    format: ['cjs'],
    dts: false,
    sourcemap: true,
    target: 'node20',
    noExternal: [/^(?!@aws-sdk\/)/],
    // The AWS SDK stays a package of its own, required only when push or pull runs (it is
    // larger than the whole command): every other command's start never loads it.
    external: [/^@aws-sdk\//],
    // import.meta.url (where the stat helper thread's program is) in CommonJS.
    shims: true,
    banner: { js: '#!/usr/bin/env node' },
  },
]);
