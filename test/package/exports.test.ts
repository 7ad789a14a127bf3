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
];

function run(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();
}

describe('the package', () => {
  it('declares the module layout the issue names', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg).toMatchObject({ name: 'turnback', type: 'module', sideEffects: false, files: ['dist'], engines: { node: '>=20.17' }, bin: { turnback: './dist/cli/main.js' } });
    // Nothing runs at install: no compiler needed, nothing for pnpm to skip.
    expect(Object.keys(pkg.scripts as Record<string, string>).filter((name) => /install/.test(name))).toEqual([]);
    for (const file of pkg.files as string[]) expect(existsSync(path.join(root, file))).toBe(true);
    const exports = pkg.exports as Record<string, { import: Record<string, string>; require: Record<string, string> } | string>;
    expect(exports['./package.json']).toBe('./package.json');
    const main = exports['.'] as { import: Record<string, string>; require: Record<string, string> };
    for (const file of [main.import.types, main.import.default, main.require.types, main.require.default]) expect(existsSync(path.join(root, file as string))).toBe(true);
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
