import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFile } from '../../src/tools/reference-tools.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

const asRoot = process.geteuid?.() === 0;

describe.skipIf(!asRoot)('a restore run as root keeps every file with the owner it had (needs root)', () => {
  it('files of different owners, restored in one run (recycled and new stages alike), keep their owners and modes', async () => {
    const { project, storeDir } = await sandbox();
    const files = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`f${i}.txt`, `original ${i} ${'x'.repeat(i * 50)}`]));
    await writeTree(project, files);
    const owners = new Map<string, number>();
    for (let i = 0; i < 6; i++) {
      const uid = 1001 + (i % 3);
      await fs.chown(path.join(project, `f${i}.txt`), uid, uid);
      await fs.chmod(path.join(project, `f${i}.txt`), 0o600);
      owners.set(`f${i}.txt`, uid);
    }
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    for (let i = 0; i < 6; i++) await writeFile({ projectRoot: project, observer }, `f${i}.txt`, `agent ${i}`);
    const report = await observer.restore(turn);
    expect(report.restored).toHaveLength(6);
    for (const [name, uid] of owners) {
      const stats = await fs.lstat(path.join(project, name));
      expect([name, stats.uid, stats.gid, stats.mode & 0o777]).toEqual([name, uid, uid, 0o600]);
      expect(await fs.readFile(path.join(project, name), 'utf8')).toBe(files[name]);
    }
    // And back (the redo goes through the same swaps).
    const redo = await observer.restore(report.preRestoreId!);
    expect(redo.restored).toHaveLength(6);
    for (const [name, uid] of owners) expect((await fs.lstat(path.join(project, name))).uid).toBe(uid);
    await observer.close();
  });
});
