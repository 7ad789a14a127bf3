import { spawnSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempFolder } from '../helpers/temp.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
let dir: string;

beforeEach(async () => {
  dir = await tempFolder('turnback-native-build-');
  nodeFs.mkdirSync(path.join(dir, 'scripts'));
  nodeFs.mkdirSync(path.join(dir, 'native'));
  nodeFs.copyFileSync(path.join(root, 'scripts/build-native.mjs'), path.join(dir, 'scripts/build-native.mjs'));
  nodeFs.copyFileSync(path.join(root, 'binding.gyp'), path.join(dir, 'binding.gyp'));
});

function install(env: Record<string, string | undefined>): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [path.join(dir, 'scripts/build-native.mjs')], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });
  return { status: run.status, stderr: run.stderr };
}

describe('the install step (scripts/build-native.mjs)', () => {
  it('builds the accelerator from the shipped source', () => {
    nodeFs.copyFileSync(path.join(root, 'native/lstat_batch.c'), path.join(dir, 'native/lstat_batch.c'));
    const run = install({ TURNBACK_NATIVE: undefined });
    expect(run).toMatchObject({ status: 0 });
    expect(run.stderr).toContain('native accelerator built');
    expect(nodeFs.existsSync(path.join(dir, 'build/Release/turnback_lstat.node'))).toBe(true);
  });

  it('never fails the install when the source does not compile: it says so and turnback uses JavaScript', () => {
    nodeFs.writeFileSync(path.join(dir, 'native/lstat_batch.c'), 'this is not C;\n');
    const run = install({ TURNBACK_NATIVE: undefined });
    expect(run.status).toBe(0);
    expect(run.stderr).toContain('native accelerator not built');
    expect(run.stderr).toContain('JavaScript path');
    expect(nodeFs.existsSync(path.join(dir, 'build/Release/turnback_lstat.node'))).toBe(false);
  });

  it('falls back to npm\'s own node-gyp when the one npm names is missing, and a missing source is reported, not fatal', () => {
    const run = install({ TURNBACK_NATIVE: undefined, npm_config_node_gyp: path.join(dir, 'no-such-node-gyp.js') });
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/native accelerator not built/);
  });

  it('TURNBACK_NATIVE=0 skips the build', () => {
    nodeFs.copyFileSync(path.join(root, 'native/lstat_batch.c'), path.join(dir, 'native/lstat_batch.c'));
    const run = install({ TURNBACK_NATIVE: '0' });
    expect(run.status).toBe(0);
    expect(run.stderr).toContain('TURNBACK_NATIVE=0');
    expect(nodeFs.existsSync(path.join(dir, 'build'))).toBe(false);
  });
});
