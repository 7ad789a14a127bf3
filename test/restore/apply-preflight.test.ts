import type * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FileSystem } from '../../src/fs/file-system.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import type { PlanEntry } from '../../src/restore/plan.js';
import { reachedPath } from '../helpers/reached.js';
import { apply, bytesOf, objects, outside, plan, root, useApplyRoots } from './apply-harness.js';
import { snapshotTree, tempLeftovers, writeTree } from './fixtures.js';

// What applyRestore checks before and between its writes: a path through a link, a .. segment,
// .git, a bad entry, an aborted signal, folders swapped for links mid-restore. A failed preflight
// leaves the tree (and the folder outside the root) byte-identical; a missing or damaged stored
// copy leaves only its own entry.

useApplyRoots();

describe('preflight failures leave the tree byte-identical', () => {
  async function expectUntouched(entries: PlanEntry[], culprit: string, code: string): Promise<void> {
    const before = await snapshotTree(root);
    const outsideBefore = await snapshotTree(outside);
    const result = await apply(entries);
    expect(await snapshotTree(root)).toEqual(before);
    expect(await snapshotTree(outside)).toEqual(outsideBefore);
    expect(result.restored).toEqual([]);
    expect(result.rolledBack).toBe(false);
    const writing = entries.filter((e) => ['restore', 'recreate', 'delete'].includes(e.action));
    expect(result.failed).toHaveLength(writing.length);
    const [blamed, ...others] = [...result.failed].sort((x, y) => Number(y.code !== undefined) - Number(x.code !== undefined));
    expect(blamed).toMatchObject({ path: culprit, code });
    for (const f of others) expect(f.error).toMatch(/^not attempted/);
  }

  async function baseEntries(): Promise<PlanEntry[]> {
    await writeTree(root, { a: { file: 'edited' }, z: { file: 'edited z' } });
    return plan({ a: { target: await objects.file('orig') }, z: { target: await objects.file('orig z') } });
  }

  it('a path through a symlinked folder pointing outside the root', async () => {
    const entries = await baseEntries();
    await writeTree(outside, { 'b.txt': { file: 'outside' } });
    await fs.symlink(outside, path.join(root, 'escape'));
    const evil: PlanEntry = { path: 'escape/b.txt', action: 'restore', target: await objects.file('pwned'), expectedHash: 'file:x', mode: 0o644 };
    await expectUntouched([...entries, evil], 'escape/b.txt', 'INVALID_PATH');
  });

  it('a folder swapped for a link to outside the root mid-restore: no later step writes, removes or rolls back through it', async () => {
    await writeTree(root, { 'd/a': { file: 'agent a' }, 'd/b': { file: 'agent b' }, 'd/c': { file: 'agent c' } });
    const entries = await plan({
      'd/a': { target: await objects.file('orig a') },
      'd/b': { target: await objects.file('orig b') },
      'd/c': { target: await objects.file('orig c') },
    });
    await writeTree(outside, { a: { file: 'outside a' }, b: { file: 'outside b' }, c: { file: 'outside c' } });
    const outsideBefore = await snapshotTree(outside);
    const base = nodeFileSystem.sync as NonNullable<FileSystem['sync']>;
    let swapped = false;
    const sync = {
      ...base,
      renameSync: (from: nodeFs.PathLike, to: nodeFs.PathLike) => {
        base.renameSync(from, to);
        // Right after d/a is published, the folder is moved away and a link to outside put in its place.
        if (!swapped && reachedPath(to) === path.join(root, 'd', 'a')) {
          swapped = true;
          base.renameSync(path.join(root, 'd'), path.join(root, 'd-moved'));
          base.symlinkSync(outside, path.join(root, 'd'));
        }
      },
    } as NonNullable<FileSystem['sync']>;
    const result = await apply(entries, { ...nodeFileSystem, sync });
    expect(swapped).toBe(true);
    expect(await snapshotTree(outside)).toEqual(outsideBefore);
    expect(result.rolledBack).toBe(true);
    expect(result.failed.find((f) => f.path === 'd/b')).toMatchObject({ code: 'INVALID_PATH' });
    // The rollback never goes through the link: it undoes d/a in the folder it was written in,
    // which the rename kept inside the root, so that folder is whole again.
    expect(result.cleanupPending).toEqual([]);
    expect(await fs.readFile(path.join(root, 'd-moved', 'a'), 'utf8')).toBe('agent a');
    expect(tempLeftovers(await snapshotTree(path.join(root, 'd-moved')))).toEqual([]);
  });

  it('an ancestor renamed out of the root mid-restore, with a link to it put in its place (same folder inode): no later file is written there', async () => {
    const files = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`a/d/f${i}`, { file: `agent ${i}` }]));
    await writeTree(root, files);
    const entries = await plan(Object.fromEntries(await Promise.all(Array.from({ length: 8 }, async (_, i) => [`a/d/f${i}`, { target: await objects.file(`orig ${i}`) }] as const))));
    const moved = path.join(outside, 'a-moved');
    const base = nodeFileSystem.sync as NonNullable<FileSystem['sync']>;
    let renamed = false;
    const sync = {
      ...base,
      renameSync: (from: nodeFs.PathLike, to: nodeFs.PathLike) => {
        base.renameSync(from, to);
        // Right after the first file is published, `a` leaves the root and a link to it takes its place.
        if (!renamed && reachedPath(to) === path.join(root, 'a', 'd', 'f0')) {
          renamed = true;
          base.renameSync(path.join(root, 'a'), moved);
          base.symlinkSync(moved, path.join(root, 'a'));
        }
      },
    } as NonNullable<FileSystem['sync']>;
    const result = await apply(entries, { ...nodeFileSystem, sync });
    expect(renamed).toBe(true);
    // Only the file published before the move is in the moved folder; none after it.
    for (let i = 1; i < 8; i++) expect(await fs.readFile(path.join(moved, 'd', `f${i}`), 'utf8')).toBe(`agent ${i}`);
    expect(result.rolledBack).toBe(true);
    expect(result.restored).toEqual([]);
    expect(result.failed.find((f) => f.path === 'a/d/f1')).toMatchObject({ code: 'INVALID_PATH' });
  });

  it('a .. segment in an entry path', async () => {
    const entries = await baseEntries();
    const evil: PlanEntry = { path: 'd/../../etc', action: 'recreate', target: await objects.file('x'), expectedHash: 'absent', mode: 0o644 };
    await expectUntouched([evil, ...entries], 'd/../../etc', 'INVALID_PATH');
  });

  it('a path inside .git', async () => {
    const entries = await baseEntries();
    await writeTree(root, { '.git/HEAD': { file: 'ref: refs/heads/main' } });
    const evil: PlanEntry = { path: '.git/HEAD', action: 'delete', target: { type: 'absent' }, expectedHash: 'file:x' };
    await expectUntouched([...entries, evil], '.git/HEAD', 'INVALID_PATH');
  });

  // A stored copy that is missing or damaged leaves that one entry (reported), and the rest of
  // the restore goes ahead: one lost object must not cost every other file.
  it('a missing object leaves that entry untouched, reported object-missing; the other entry is restored', async () => {
    const entries = await baseEntries();
    const target = entries[1]!.target;
    if (target.type === 'file') objects.objects.delete(target.object);
    const result = await apply(entries);
    expect(result.skipped).toMatchObject([{ path: 'z', action: 'leave', reason: 'object-missing' }]);
    expect(result.restored.map((e) => e.path)).toEqual(['a']);
    expect(result.failed).toEqual([]);
    expect([await bytesOf('a'), await bytesOf('z')]).toEqual(['orig', 'edited z']);
  });

  it('an object whose bytes do not match its record leaves that entry untouched, the other is restored', async () => {
    const entries = await baseEntries();
    const target = entries[0]!.target;
    if (target.type === 'file') objects.objects.set(target.object, Buffer.from('tampered'));
    const result = await apply(entries);
    expect(result.skipped).toMatchObject([{ path: 'a', action: 'leave', reason: 'object-missing' }]);
    expect(result.restored.map((e) => e.path)).toEqual(['z']);
    expect([await bytesOf('a'), await bytesOf('z')]).toEqual(['edited', 'orig z']);
  });

  it('a duplicated path and an action that does not fit its target', async () => {
    const entries = await baseEntries();
    await expectUntouched([...entries, { ...entries[1]! }], 'z', 'INVALID_ARGUMENT');
    const wrong: PlanEntry = { ...entries[0]!, action: 'delete' };
    await expectUntouched([wrong, entries[1]!], 'a', 'INVALID_ARGUMENT');
  });

  it('an already-aborted signal', async () => {
    const entries = await baseEntries();
    const before = await snapshotTree(root);
    const controller = new AbortController();
    controller.abort();
    const result = await apply(entries, nodeFileSystem, controller.signal);
    expect(result.failed.map((f) => f.path)).toEqual(['a', 'z']);
    expect(result.failed[0]?.code).toBe('ABORT_ERR');
    expect(await snapshotTree(root)).toEqual(before);
  });
});
