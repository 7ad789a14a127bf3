import { writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import { nodeFileSystem, type FileSystem, type SyncFileSystem } from '../../src/fs/file-system.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

async function write(observer: CheckpointObserver, project: string, rel: string, content: string): Promise<void> {
  const abs = path.join(project, rel);
  await observer.beforeWrite(abs);
  await fs.writeFile(abs, content);
  await observer.afterWrite(abs);
}

describe('the pre-restore save (between guard and swap)', () => {
  it('records what each write replaces, so the restore can be undone exactly', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a1', 'b.txt': 'b1' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await write(observer, project, 'a.txt', 'a2');
    await write(observer, project, 'new.txt', 'created');
    await observer.beforeWrite(path.join(project, 'b.txt'));
    await fs.rm(path.join(project, 'b.txt'));
    await observer.afterWrite(path.join(project, 'b.txt'));
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => [e.path, e.action])).toEqual([
      ['a.txt', 'restore'],
      ['b.txt', 'recreate'],
      ['new.txt', 'delete'],
    ]);
    const saved = await observer.store.manifest(report.preRestoreId as CheckpointId);
    expect(saved.complete).toBe(true);
    const byPath = Object.fromEntries(saved.entries.map((e) => [e.path, e]));
    expect(byPath['a.txt']).toMatchObject({ before: { type: 'file', size: 2 }, after: expect.stringMatching(/^file:/) as string });
    expect(byPath['b.txt']).toMatchObject({ before: { type: 'absent' } });
    expect(byPath['new.txt']).toMatchObject({ before: { type: 'file', size: 7 }, after: 'absent' });
    const undo = await observer.restore(report.preRestoreId as CheckpointId);
    expect(undo.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('a2');
    expect(await fs.readFile(path.join(project, 'new.txt'), 'utf8')).toBe('created');
    await expect(fs.lstat(path.join(project, 'b.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    await observer.close();
  });

  it('leaves alone what it cannot save first: a credential file, a file over the copy limit', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { '.env': 'TOKEN=old', 'big.txt': 'small before', 'ok.txt': 'o1' });
    const observer = await openObserver(project, storeDir, { coverage: { maxFileMib: 1000 / (1024 * 1024) } });
    const turn = await observer.beginTurn();
    await write(observer, project, '.env', 'TOKEN=new');
    await write(observer, project, 'big.txt', 'x'.repeat(5000));
    await write(observer, project, 'ok.txt', 'o2');
    await write(observer, project, '.env.local', 'CREATED=1');
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['ok.txt']);
    // .env was never copied at capture either, so it is left as a no-copy path.
    expect(report.skipped.map((e) => [e.path, e.reason])).toEqual(
      expect.arrayContaining([
        ['.env', 'no-copy:credential'],
        ['big.txt', 'cannot-save-first:too-large'],
        // Created by the agent: deleting it would need a copy first, and credentials are never copied.
        ['.env.local', 'cannot-save-first:credential'],
      ]),
    );
    expect(await fs.readFile(path.join(project, '.env.local'), 'utf8')).toBe('CREATED=1');
    expect(await fs.readFile(path.join(project, 'big.txt'), 'utf8')).toBe('x'.repeat(5000));
    expect(await fs.readFile(path.join(project, 'ok.txt'), 'utf8')).toBe('o1');
    const saved = await observer.store.manifest(report.preRestoreId as CheckpointId);
    expect(saved.entries.map((e) => e.path)).toEqual(['ok.txt']);
    await observer.close();
  });

  it('names temp files a killed restore left beside planned paths, even when nothing is written', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'src/a.txt': 'a1' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await write(observer, project, 'src/a.txt', 'a2');
    await fs.writeFile(path.join(project, 'src/a.txt'), 'a1'); // already back: nothing to write
    await fs.writeFile(path.join(project, 'src/.turnback-displaced-0123456789abcdef'), 'a2');
    const report = await observer.restore(turn);
    expect(report.restored).toEqual([]);
    expect(report.preRestoreId).toBeUndefined();
    expect(report.cleanupPending).toEqual(['src/.turnback-displaced-0123456789abcdef']);
    await observer.close();
  });

  it('a file changed after the plan is refused at its guard and leaves no record in the pre-restore checkpoint', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a1', 'b.txt': 'b1' });
    const sync = nodeFileSystem.sync as SyncFileSystem;
    let raced = false;
    // A writer lands on b.txt while a.txt is being swapped, after the plan read both.
    const racing: FileSystem = {
      ...nodeFileSystem,
      sync: {
        ...sync,
        renameSync: ((from: string, to: string) => {
          if (!raced && (String(from).endsWith('a.txt') || String(to).endsWith('a.txt'))) {
            raced = true;
            writeFileSync(path.join(project, 'b.txt'), 'a person typed this');
          }
          sync.renameSync(from, to);
        }) as SyncFileSystem['renameSync'],
      },
    };
    const observer = await openObserver(project, storeDir, { fs: racing });
    const turn = await observer.beginTurn();
    await write(observer, project, 'a.txt', 'a2');
    await write(observer, project, 'b.txt', 'b2');
    const report = await observer.restore(turn);
    expect(raced).toBe(true);
    expect(report.restored.map((e) => e.path)).toEqual(['a.txt']);
    expect(report.refused).toMatchObject([{ path: 'b.txt', reason: 'changed-since-plan' }]);
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('a person typed this');
    const saved = await observer.store.manifest(report.preRestoreId as CheckpointId);
    expect(saved.entries.map((e) => e.path)).toEqual(['a.txt']);
    expect(saved.gaps).toEqual([]);
    await observer.close();
  });
});
