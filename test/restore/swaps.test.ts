import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PathState } from '../../src/core/model.js';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { applyRestore, type ApplyResult } from '../../src/restore/apply.js';
import { planRestore, type PlanEntry, type PlanInput } from '../../src/restore/plan.js';
import { readDiskState } from '../../src/fs/disk-state.js';
import { faultFs } from '../helpers/fault-fs.js';
import { makeRoot, MemoryObjects, removeRoot, snapshotTree, syncFaultFs, tempLeftovers, writeTree } from './fixtures.js';

// Swaps planned across paths (restore/plan-structure.ts) and applied as one transaction: a file
// that became a folder of new files, a folder that became a link, a file that became a folder
// with a subfolder. Any single failing call rolls the whole tree back exactly.

let root: string;
let objects: MemoryObjects;
beforeEach(async () => {
  root = await fs.realpath(await makeRoot());
  objects = new MemoryObjects();
});
afterEach(async () => {
  await removeRoot(root);
});

/** The tree after the command: a → folder a/b, d → link, k → folder k/deep/z. */
async function scenario(created: 'delete' | 'keep' = 'delete'): Promise<PlanEntry[]> {
  await removeRoot(root);
  await fs.mkdir(root);
  await writeTree(root, { 'a/b': { file: 'new b' }, 'k/deep/z': { file: 'new z' }, keep: { file: 'keep' } });
  await fs.symlink('keep', path.join(root, 'd'));
  const file = (text: string): Promise<PathState> => objects.file(text);
  const spec: Record<string, { target: PathState; lastAfter: string }> = {
    a: { target: await file('orig a'), lastAfter: 'absent' },
    'a/b': { target: { type: 'absent' }, lastAfter: 'file' },
    d: { target: { type: 'absent' }, lastAfter: 'symlink:keep' },
    'd/x': { target: await file('orig x'), lastAfter: 'absent' },
    k: { target: await file('orig k'), lastAfter: 'absent' },
    'k/deep/z': { target: { type: 'absent' }, lastAfter: 'file' },
  };
  const inputs: PlanInput[] = [];
  for (const [rel, { target, lastAfter }] of Object.entries(spec)) {
    let disk: PlanInput['disk'];
    try {
      disk = await readDiskState(nodeFileSystem, root, rel);
    } catch {
      // A link on the way: what the session layer plans as "in the way".
      disk = { type: 'other', kind: 'unknown' };
    }
    inputs.push({ path: rel, target, disk, lastAfter: lastAfter === 'file' && disk.type === 'file' ? `file:${disk.hash}` : lastAfter });
  }
  return planRestore(inputs, { created, modePolicy: 'exact' });
}

function apply(entries: PlanEntry[], fsImpl: FileSystem = nodeFileSystem): Promise<ApplyResult> {
  return applyRestore({ fs: fsImpl, projectRoot: root, readObject: objects.readObject }, entries);
}

describe('planStructure', () => {
  it('plans the link out of the way in any undo, and the folders replaced only when this restore empties them', async () => {
    const keep = await scenario('keep');
    const row = (entries: PlanEntry[], p: string): Pick<PlanEntry, 'action' | 'reason' | 'afterRemovalOf'> | undefined => {
      const e = entries.find((x) => x.path === p);
      return e === undefined ? undefined : { action: e.action, reason: e.reason, ...(e.afterRemovalOf !== undefined ? { afterRemovalOf: e.afterRemovalOf } : {}) };
    };
    expect(row(keep, 'd')).toEqual({ action: 'delete', reason: 'in-the-way' });
    expect(row(keep, 'd/x')).toEqual({ action: 'recreate', reason: undefined, afterRemovalOf: 'd' });
    expect(row(keep, 'a')).toEqual({ action: 'refuse', reason: 'directory-in-the-way' });
    expect(row(keep, 'a/b')).toEqual({ action: 'leave', reason: 'created-since' });
    const del = await scenario('delete');
    expect(row(del, 'a')).toEqual({ action: 'restore', reason: 'folder-in-the-way' });
    expect(row(del, 'k')).toEqual({ action: 'restore', reason: 'folder-in-the-way' });
  });
});

describe('applying swaps', () => {
  it('a clean run puts every recorded file back and leaves no folder or temp file of the swaps', async () => {
    const result = await apply(await scenario());
    expect(result).toMatchObject({ failed: [], cleanupPending: [], rolledBack: false });
    const tree = await snapshotTree(root);
    expect(Object.keys(tree).sort()).toEqual(['a', 'd', 'd/x', 'k', 'keep']);
    expect(tree.a).toMatchObject({ type: 'file', bytes: Buffer.from('orig a').toString('hex') });
    expect(tree.d).toMatchObject({ type: 'dir' });
  });

  for (const path_ of ['promise', 'sync'] as const) {
    it(`every single fault of the ${path_} calls either rolls back to the exact original tree or completes`, async () => {
      const counting = path_ === 'promise' ? faultFs(nodeFileSystem) : syncFaultFs();
      await apply(await scenario(), counting.fs);
      const reference = await snapshotTree(root);
      let rolledBack = 0;
      for (const [op, total] of [...counting.calls.entries()]) {
        for (let nth = 1; nth <= total; nth++) {
          const label = `${op}#${nth}`;
          const ff = path_ === 'promise' ? faultFs(nodeFileSystem, { failOn: { op: op as never, nth } }) : syncFaultFs({ op: op as never, nth });
          const entries = await scenario();
          const before = await snapshotTree(root);
          const result = await apply(entries, ff.fs);
          const after = await snapshotTree(root);
          for (const leftover of tempLeftovers(after)) expect(result.cleanupPending, label).toContain(leftover);
          if (!result.rolledBack && result.failed.length === 0) {
            // Past the commit point a failed removal of a temp file is reported, never thrown.
            for (const leftover of tempLeftovers(after)) delete after[leftover];
            expect(after, label).toEqual(reference);
            continue;
          }
          rolledBack += 1;
          expect(result.restored, label).toEqual([]);
          expect(after, label).toEqual(before);
        }
      }
      expect(rolledBack).toBeGreaterThan(5);
    });
  }
});
