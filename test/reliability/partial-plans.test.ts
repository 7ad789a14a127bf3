import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { faultFs } from '../helpers/fault-fs.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

describe('one path that cannot be read, or whose copy is gone, never costs the rest of a restore', () => {
  it('an unreadable file is planned as leave (unreadable); every other path is planned and restored', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'secret.txt': 'secret before', 'open.txt': 'open before' });
    let denied = false;
    // Tests run as root, where mode 000 hides nothing: the denial is injected into the observer's file system.
    const faulty = faultFs(nodeFileSystem, {
      before: (op, args) => {
        if (denied && op === 'open' && String(args[0]).endsWith('secret.txt')) {
          throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        }
      },
    });
    const observer = await openObserver(project, storeDir, { fs: faulty.fs });
    const turn = await observer.beginTurn();
    const ctx = { projectRoot: project, observer };
    await writeFile(ctx, 'secret.txt', 'secret after');
    await writeFile(ctx, 'open.txt', 'open after');
    denied = true;
    const plan = await observer.plan(turn);
    expect(plan.entries.map((e) => [e.path, e.action, e.reason ?? ''])).toEqual([
      ['open.txt', 'restore', ''],
      ['secret.txt', 'leave', 'unreadable'],
    ]);
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['open.txt']);
    expect(report.skipped).toMatchObject([{ path: 'secret.txt', action: 'leave', reason: 'unreadable' }]);
    expect(await fs.readFile(path.join(project, 'open.txt'), 'utf8')).toBe('open before');
    expect(await fs.readFile(path.join(project, 'secret.txt'), 'utf8')).toBe('secret after');
    await observer.close();
  });

  it('a pre-image whose object is gone from the store is planned as leave (object-missing); the rest is restored', async () => {
    const { project, storeDir } = await sandbox();
    const big = 'x'.repeat(300 * 1024);
    await writeTree(project, { 'big.txt': big, 'small.txt': 'small before' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    const ctx = { projectRoot: project, observer };
    await writeFile(ctx, 'big.txt', 'big after');
    await writeFile(ctx, 'small.txt', 'small after');
    // The large pre-image is a loose object: remove it.
    const manifest = await observer.store.manifest(turn);
    const entry = manifest.entries.find((e) => e.path === 'big.txt');
    if (entry?.before.type !== 'file') throw new Error('expected a file pre-image');
    await fs.rm(path.join(storeDir, 'objects', 'v1', entry.before.object.slice(0, 2), entry.before.object));
    const plan = await observer.plan(turn);
    expect(plan.entries.map((e) => [e.path, e.action, e.reason ?? ''])).toEqual([
      ['big.txt', 'leave', 'object-missing'],
      ['small.txt', 'restore', ''],
    ]);
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['small.txt']);
    expect(report.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'small.txt'), 'utf8')).toBe('small before');
    expect(await fs.readFile(path.join(project, 'big.txt'), 'utf8')).toBe('big after');
    await observer.close();
  });
});
