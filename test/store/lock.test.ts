import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { isLockStale } from '../../src/store/lock.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { makeSandbox, openStore, type Sandbox } from './helpers.js';

let box: Sandbox;
let store: CheckpointStore;

beforeEach(async () => {
  box = await makeSandbox();
  store = await openStore(box, 200);
});
afterEach(async () => {
  await store.close();
  await box.cleanup();
});

/** A real child process that writes the lock file in the store's format and holds it until killed. */
function holdLockInChild(lockFile: string): Promise<ChildProcess> {
  const script = `
    const fs = require('node:fs'); const os = require('node:os');
    fs.writeFileSync(${JSON.stringify(lockFile)}, JSON.stringify({ pid: process.pid, hostname: os.hostname(), createdAt: new Date().toISOString(), token: 'child' }) + '\\n', { flag: 'wx', mode: 0o600 });
    process.stdout.write('locked\\n');
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`child exited ${String(code)}`)));
  });
}

function waitExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

describe('store lock', () => {
  test('a live holder in another process makes withLock fail with STORE_BUSY', async () => {
    const lockFile = path.join(store.root, 'store.lock');
    const child = await holdLockInChild(lockFile);
    try {
      const error = await store.withLock(() => 'never').catch((e: unknown) => e);
      expect(isCheckpointError(error, 'STORE_BUSY')).toBe(true);
      expect((error as { found: string }).found).toBe(String(child.pid));
      await expect(store.prune()).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_BUSY'));
    } finally {
      child.kill('SIGKILL');
      await waitExit(child);
    }
    // Its pid is dead now: the stale lock is broken and we get in.
    expect(await store.withLock(() => 'in')).toBe('in');
    await expect(readFile(lockFile)).rejects.toThrow();
  });

  test('a stale lock of a dead pid or an old one is broken', async () => {
    const lockFile = path.join(store.root, 'store.lock');
    const dead = spawn(process.execPath, ['-e', '0']);
    await waitExit(dead);
    await writeFile(lockFile, JSON.stringify({ pid: dead.pid, hostname: hostname(), createdAt: new Date().toISOString() }));
    expect(await store.withLock(async () => 42)).toBe(42);
    await writeFile(lockFile, JSON.stringify({ pid: process.ppid, hostname: 'elsewhere', createdAt: new Date(Date.now() - 11 * 60_000).toISOString() }));
    expect(await store.withLock(async () => 43)).toBe(43);
    expect(isLockStale(JSON.stringify({ pid: process.ppid, hostname: hostname(), createdAt: new Date().toISOString() }))).toBe(false);
    expect(isLockStale('garbage')).toBe(true);
  });

  test('reentrant within one store, serialised between independent callers', async () => {
    const result = await store.withLock(() => store.withLock(() => store.withLock(async () => 'nested')));
    expect(result).toBe('nested');
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const first = store.withLock(async () => {
      order.push('first-start');
      entered();
      await gate;
      order.push('first-end');
    }, { timeoutMs: 5000 });
    const second = store.withLock(async () => {
      order.push('second');
    }, { timeoutMs: 5000 });
    // The first holds the lock; a few turns of the event loop later the second is still waiting.
    await inside;
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first-start']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first-start', 'first-end', 'second']);
    // A nested prune/dropCheckpoint under an outer lock does not deadlock.
    await expect(store.withLock(() => store.prune())).resolves.toMatchObject({ removedCheckpoints: [] });
  });

  test('a continuation that outlives a hold takes the lock again: the file exists while it runs', async () => {
    const lockFile = path.join(store.root, 'store.lock');
    let wake!: () => void;
    const later = new Promise<void>((resolve) => (wake = resolve));
    let late: Promise<boolean> | undefined;
    await store.withLock(async () => {
      // Started inside the hold, run after it ended: it must not read as holding the lock.
      late = later.then(() => store.withLock(async () => (await readFile(lockFile, 'utf8')).includes(`"pid":${process.pid}`)));
    });
    await expect(readFile(lockFile, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    wake();
    await expect(late).resolves.toBe(true);
    await expect(readFile(lockFile, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
