import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';

// Issue #26 point 6: redo left an empty folder about half the time. The undo recreated the folder
// a moment after opening its save, but a folder's birth time comes from the file system's coarse
// clock and could read as older than the save, so the redo kept it. Here every folder reads as
// born long ago (the clock relation that triggered it, forced): only the sequence can decide.
const oldFolders: FileSystem = {
  ...nodeFileSystem,
  lstat: (async (...args: Parameters<typeof nodeFileSystem.lstat>) => {
    const stats = await nodeFileSystem.lstat(...args);
    if (!stats.isDirectory()) return stats;
    return Object.assign(Object.create(Object.getPrototypeOf(stats) as object) as typeof stats, stats, { birthtimeMs: 1, birthtime: new Date(1) });
  }) as FileSystem['lstat'],
};

describe('redo of an undo that recreated a folder', () => {
  it('removes the folder the undo made, whatever its birth time says', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'docs/a.md': 'a\n', 'docs/b.md': 'b\n', 'keep.txt': 'k\n' });
    const observer = await openObserver(project, storeDir, { fs: oldFolders });
    const turn = await observer.beginTurn({ label: 'rm -rf docs' });
    for (const name of ['docs/a.md', 'docs/b.md']) {
      await observer.beforeWrite(name);
      await fs.rm(path.join(project, name));
      await observer.afterWrite(name);
    }
    await fs.rmdir(path.join(project, 'docs'));
    const agent = await listing(project);

    const undo = await observer.restore(turn);
    expect(undo.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'docs', 'a.md'), 'utf8')).toBe('a\n');
    const save = undo.preRestoreId;
    expect(save).toBeDefined();

    const redo = await observer.restore(save!, { created: 'delete' });
    expect(redo.failed).toEqual([]);
    expect(redo.removedFolders).toEqual(['docs']);
    await expect(fs.lstat(path.join(project, 'docs'))).rejects.toThrow(/ENOENT/);
    expect(await listing(project)).toEqual(agent);
    await observer.close();
  });

  it("keeps the record of the folders an undo made while its save is kept, and prune removes it with the save", async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'docs/a.md': 'a\n' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn({ label: 'rm -rf docs' });
    await observer.beforeWrite('docs/a.md');
    await fs.rm(path.join(project, 'docs'), { recursive: true });
    await observer.afterWrite('docs/a.md');
    const save = (await observer.restore(turn)).preRestoreId!;
    await observer.close();
    const record = path.join(storeDir, 'state', `made-folders-${save}.json`);
    expect(JSON.parse(await fs.readFile(record, 'utf8'))).toMatchObject({ folders: ['docs'] });

    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    await store.prune({ retain: 100 });
    expect((await fs.lstat(record)).isFile()).toBe(true);
    await store.dropCheckpoint(save);
    await store.prune({ retain: 100 });
    await expect(fs.lstat(record)).rejects.toThrow(/ENOENT/);
    await store.close();
  });

  it('keeps a folder that was there before the undo, emptied by the redo', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'docs/a.md': 'a\n' });
    const observer = await openObserver(project, storeDir, { fs: oldFolders });
    const turn = await observer.beginTurn({ label: 'rm docs/a.md' });
    await observer.beforeWrite('docs/a.md');
    await fs.rm(path.join(project, 'docs', 'a.md'));
    await observer.afterWrite('docs/a.md');
    const undo = await observer.restore(turn);
    const redo = await observer.restore(undo.preRestoreId!, { created: 'delete' });
    expect(redo.removedFolders).toEqual([]);
    expect((await fs.lstat(path.join(project, 'docs'))).isDirectory()).toBe(true);
    await observer.close();
  });
});
