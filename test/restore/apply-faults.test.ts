import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FileSystem } from '../../src/fs/file-system.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { applyRestore, type ApplyResult } from '../../src/restore/apply.js';
import type { PlanEntry } from '../../src/restore/plan.js';
import { faultFs } from '../helpers/fault-fs.js';
import { apply, bytesOf, freshRoot, objects, plan, root, useApplyRoots } from './apply-harness.js';
import { removeRoot, snapshotTree, syncFaultFs, tempLeftovers, writeTree } from './fixtures.js';

// applyRestore under injected faults: one failure at any file-system call, of the promise calls
// and of the synchronous fast path, rolls back to the exact original tree or completes; what a
// rollback or the cleanup after the commit could not do is reported, and tried twice first.

useApplyRoots();

describe('transaction rollback under injected faults', () => {
  /** Every kind of write at once: content restore, hard-linked in place, recreate with folders, delete, link swaps. */
  async function scenario(): Promise<{ entries: PlanEntry[]; expected: Record<string, unknown> }> {
    await removeRoot(root);
    await fs.mkdir(root);
    await writeTree(root, {
      'a.txt': { file: 'agent a', mode: 0o644 },
      h1: { file: 'agent h', mode: 0o644 },
      'junk.txt': { file: 'junk' },
      ln: { file: 'was a link' },
      f2: { link: 'a.txt' },
      'keep/untouched': { file: 'u' },
    });
    await fs.link(path.join(root, 'h1'), path.join(root, 'keep/h2'));
    const entries = await plan({
      'a.txt': { target: await objects.file('orig a', 0o600) },
      h1: { target: { ...(await objects.file('orig h', 0o640)), ino: (await fs.lstat(path.join(root, 'h1'))).ino } },
      'new/deep/c.txt': { target: await objects.file('orig c') },
      'junk.txt': { target: { type: 'absent' } },
      ln: { target: { type: 'symlink', target: 'a.txt' } },
      f2: { target: await objects.file('orig f2', 0o755) },
    });
    return { entries, expected: {} };
  }

  async function expectedAfterSuccess(entries: PlanEntry[]): Promise<Record<string, unknown>> {
    const tree = await snapshotTree(root);
    // Only written paths, plus the hard link's twin, are compared: folders are incidental.
    const pick = (rels: string[]) => Object.fromEntries(rels.map((r) => [r, tree[r]]));
    return pick([...entries.map((e) => e.path), 'keep/h2', 'keep/untouched']);
  }

  it('an unfaulted run restores everything and yields the reference state', async () => {
    const { entries } = await scenario();
    const result = await apply(entries);
    expect(result).toMatchObject({ failed: [], cleanupPending: [], rolledBack: false });
    expect(result.restored).toHaveLength(6);
    expect(await bytesOf('keep/h2')).toBe('orig h');
    expect(await fs.readlink(path.join(root, 'ln'))).toBe('a.txt');
  });

  /**
   * One run of the fault matrix on a fresh scenario: the tree ends either exactly as before (and
   * the run reports a rollback or failure) or exactly as a clean run leaves it. True when it rolled back.
   */
  async function faultedRun(label: string, ff: { fs: FileSystem; readonly fired: boolean }, reference: unknown, options: { oneCulprit: boolean }): Promise<boolean> {
    const { entries: fresh } = await scenario();
    const before = await snapshotTree(root);
    const result = await apply(fresh, ff.fs);
    const after = await snapshotTree(root);
    expect(ff.fired, label).toBe(true);
    for (const leftover of tempLeftovers(after)) expect(result.cleanupPending, label).toContain(leftover);
    if (!result.rolledBack && result.failed.length === 0) {
      expect(await expectedAfterSuccess(fresh), label).toEqual(reference);
      return false;
    }
    expect(result.restored, label).toEqual([]);
    expect(result.cleanupPending, label).toEqual([]);
    expect(after, label).toEqual(before);
    if (options.oneCulprit) expect(result.failed.filter((f) => f.code !== undefined).length, label).toBe(1);
    return true;
  }

  it('every single fault either rolls back to the exact original tree or completes', async () => {
    const { entries } = await scenario();
    const counting = faultFs(nodeFileSystem);
    await apply(entries, counting.fs);
    const reference = await expectedAfterSuccess(entries);
    const counts = [...counting.calls.entries()];
    expect(counts.length).toBeGreaterThan(5);
    let rolledBackRuns = 0;
    for (const [op, total] of counts) {
      for (let nth = 1; nth <= total; nth++) {
        if (await faultedRun(`${op}#${nth}`, faultFs(nodeFileSystem, { failOn: { op, nth } }), reference, { oneCulprit: true })) rolledBackRuns++;
      }
    }
    expect(rolledBackRuns).toBeGreaterThan(10);
  });

  it('every single fault of the synchronous fast path either rolls back to the exact original tree or completes', async () => {
    const { entries } = await scenario();
    const counting = syncFaultFs();
    const clean = await apply(entries, counting.fs);
    expect(clean.failed).toEqual([]);
    const reference = await expectedAfterSuccess(entries);
    const counts = [...counting.calls.entries()];
    // The fast path really is used for the writes (folders, swaps, stage removal), not only for
    // reads; stage files themselves are written ahead through the promise API.
    for (const op of ['sync.openSync', 'sync.readSync', 'sync.renameSync', 'sync.linkSync', 'sync.unlinkSync', 'sync.mkdirSync', 'sync.symlinkSync'] as const) {
      expect(counting.calls.get(op) ?? 0, op).toBeGreaterThan(0);
    }
    let rolledBackRuns = 0;
    for (const [op, total] of counts) {
      for (let nth = 1; nth <= total; nth++) {
        if (await faultedRun(`${op}#${nth}`, syncFaultFs({ op, nth }), reference, { oneCulprit: false })) rolledBackRuns++;
      }
    }
    expect(rolledBackRuns).toBeGreaterThan(10);
  });

  it('durable mode fsyncs every stage and rewrite, and still restores', async () => {
    const { entries } = await scenario();
    const counting = faultFs(nodeFileSystem);
    const result = await applyRestore({ fs: counting.fs, projectRoot: root, readObject: objects.readObject }, entries, { durable: true });
    expect(result).toMatchObject({ failed: [], cleanupPending: [], rolledBack: false });
    // Three staged files (a.txt, new/deep/c.txt, f2), the hard-linked rewrite and its copy, and folders.
    expect(counting.calls.get('handle.sync') ?? 0).toBeGreaterThanOrEqual(5);
    const plain = faultFs(nodeFileSystem);
    const { entries: again } = await scenario();
    await applyRestore({ fs: plain.fs, projectRoot: root, readObject: objects.readObject }, again);
    expect(plain.calls.get('handle.sync') ?? 0).toBe(0);
  });

  it('cancellation mid-apply rolls back', async () => {
    const { entries } = await scenario();
    const before = await snapshotTree(root);
    const controller = new AbortController();
    const ff = faultFs(nodeFileSystem, {
      before: (op, _args, count) => {
        if (op === 'rename' && count === 2) controller.abort();
      },
    });
    const result = await apply(entries, ff.fs, controller.signal);
    expect(result.rolledBack).toBe(true);
    expect(result.failed.some((f) => f.code === 'ABORT_ERR')).toBe(true);
    expect(await snapshotTree(root)).toEqual(before);
  });

  it('reports what rollback could not put back in cleanupPending', async () => {
    const { entries } = await scenario();
    let failing = false;
    const ff = faultFs(nodeFileSystem, {
      failOn: { op: 'symlink', nth: 1 },
      before: (op) => {
        if (failing && op === 'rename') throw Object.assign(new Error('injected EIO'), { code: 'EIO' });
        if (op === 'symlink') failing = true;
      },
    });
    const result = await apply(entries, ff.fs);
    expect(result.rolledBack).toBe(true);
    expect(result.cleanupPending.length).toBeGreaterThan(0);
    const leftovers = tempLeftovers(await snapshotTree(root));
    expect(leftovers.length).toBeGreaterThan(0);
    for (const leftover of leftovers) expect(result.cleanupPending).toContain(leftover);
  });

  it('a cleanup failure after commit is reported, not a failure', async () => {
    await writeTree(root, { a: { file: 'edited' } });
    const entries = await plan({ a: { target: await objects.file('orig') } });
    const ff = faultFs(nodeFileSystem, {
      before: (op, args) => {
        if (op === 'unlink' && String(args[0]).includes('.turnback-displaced-')) throw Object.assign(new Error('EBUSY'), { code: 'EBUSY' });
      },
    });
    const result = await apply(entries, ff.fs);
    expect(result.failed).toEqual([]);
    expect(result.restored).toHaveLength(1);
    expect(result.cleanupPending).toHaveLength(1);
    expect(result.cleanupPending[0]).toMatch(/^\.turnback-displaced-[0-9a-f]+$/);
    expect(await bytesOf('a')).toBe('orig');
  });
});

describe('cleanup after the commit', () => {
  it('a cleanup call that fails once is tried again: nothing is left for the person to clean', async () => {
    const scenario = async (fsImpl: FileSystem): Promise<ApplyResult> => {
      await writeTree(root, { 'a.txt': 'old\n' });
      const entries = await plan({ 'a.txt': { target: await objects.file(Buffer.from('new\n'), 0o644) }, 'made/deep/b.txt': { target: await objects.file(Buffer.from('b\n'), 0o644) } });
      return apply(entries, fsImpl);
    };
    // A clean run tells how many unlinks a restore makes; the last frees the displaced original, after the commit.
    const counted = faultFs(nodeFileSystem);
    expect((await scenario(counted.fs)).cleanupPending).toEqual([]);
    const lastUnlink = counted.calls.get('unlink') ?? 0;
    expect(lastUnlink).toBeGreaterThan(0);
    await freshRoot();

    const faulty = faultFs(nodeFileSystem, { failOn: { op: 'unlink', nth: lastUnlink } });
    const result = await scenario(faulty.fs);
    expect(faulty.fired).toBe(true);
    expect(result.failed).toEqual([]);
    expect(result.cleanupPending).toEqual([]);
    expect(await bytesOf('a.txt')).toBe('new\n');
    expect(await bytesOf('made/deep/b.txt')).toBe('b\n');
    expect(tempLeftovers(await snapshotTree(root))).toEqual([]);
  });
});
