import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The built package, loaded by its own name through the exports map, as a user's code would.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONTRACT = [
  'CheckpointObserver',
  'CheckpointStore',
  'observerForConfig',
  'writeFile',
  'editFile',
  'deletePath',
  'movePath',
  'guardedWrite',
  'DEFAULT_RETAIN',
  'CheckpointError',
  'isCheckpointError',
  'statAccelerator',
];

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

describe('the package', () => {
  it('declares the module layout the issue names', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg).toMatchObject({ name: 'turnback', type: 'module', sideEffects: false, files: ['dist', 'native', 'binding.gyp', 'scripts/build-native.mjs'], engines: { node: '>=20.17' }, bin: { turnback: './dist/cli/main.js' } });
    // The optional native accelerator ships as source and is built at install, never failing it.
    expect((pkg.scripts as Record<string, string>).install).toBe('node scripts/build-native.mjs');
    for (const file of pkg.files as string[]) expect(existsSync(path.join(root, file))).toBe(true);
    const exports = pkg.exports as Record<string, { import: Record<string, string>; require: Record<string, string> } | string>;
    expect(exports['./package.json']).toBe('./package.json');
    const main = exports['.'] as { import: Record<string, string>; require: Record<string, string> };
    for (const file of [main.import.types, main.import.default, main.require.types, main.require.default]) expect(existsSync(path.join(root, file as string))).toBe(true);
  });

  it('finds the native addon from both builds (the CJS build through the import.meta shim)', () => {
    const esm = JSON.parse(run(['--input-type=module', '-e', "const m = await import('turnback'); console.log(JSON.stringify(m.statAccelerator()))"])) as { native: boolean; file?: string };
    const cjs = JSON.parse(run(['-e', "console.log(JSON.stringify(require('turnback').statAccelerator()))"])) as { native: boolean; file?: string };
    const file = path.join(root, 'build', 'Release', 'turnback_lstat.node');
    expect(esm).toEqual({ native: true, file });
    expect(cjs).toEqual({ native: true, file });
    const off = JSON.parse(execFileSync(process.execPath, ['-e', "console.log(JSON.stringify(require('turnback').statAccelerator()))"], { cwd: root, encoding: 'utf8', env: { ...process.env, TURNBACK_NATIVE: '0' } })) as { native: boolean; why?: string };
    expect(off).toEqual({ native: false, why: 'TURNBACK_NATIVE=0' });
  });

  it('loads by name as ESM and as CommonJS, with the public contract in both', () => {
    const esm = JSON.parse(run(['--input-type=module', '-e', "const m = await import('turnback'); console.log(JSON.stringify(Object.keys(m)))"])) as string[];
    const cjs = JSON.parse(run(['-e', "console.log(JSON.stringify(Object.keys(require('turnback'))))"])) as string[];
    for (const name of CONTRACT) {
      expect(esm).toContain(name);
      expect(cjs).toContain(name);
    }
    expect(run(['-e', "const t = require('turnback'); console.log(t.DEFAULT_RETAIN, new t.CheckpointError('IO', 'x') instanceof Error)"])).toBe('100 true');
  });
});
