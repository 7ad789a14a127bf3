import type * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Fingerprint, PathState } from '../../src/core/model.js';
import type { FileSystem } from '../../src/fs/file-system.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { applyRestore, type ApplyResult } from '../../src/restore/apply.js';
import { planRestore, type PlanEntry, type PlanOptions } from '../../src/restore/plan.js';
import { faultFs } from '../helpers/fault-fs.js';
import { reachedPath } from '../helpers/reached.js';
import { inputsFor, makeRoot, MemoryObjects, removeRoot, snapshotTree, syncFaultFs, tempLeftovers, writeTree } from './fixtures.js';

let root: string;
let outside: string;
let objects: MemoryObjects;
beforeEach(async () => {
  root = await makeRoot();
  outside = await makeRoot();
  objects = new MemoryObjects();
});
afterEach(async () => {
  await removeRoot(root);
  await removeRoot(outside);
});

const exact: PlanOptions = { created: 'delete', modePolicy: 'exact' };
type Targets = Record<string, { target: PathState; lastAfter?: Fingerprint | null }>;

async function plan(targets: Targets, options: PlanOptions = exact): Promise<PlanEntry[]> {
  return planRestore(await inputsFor(root, targets), options);
}

function apply(entries: PlanEntry[], fsImpl: FileSystem = nodeFileSystem, signal?: AbortSignal): Promise<ApplyResult> {
  return applyRestore({ fs: fsImpl, projectRoot: root, readObject: objects.readObject }, entries, signal ? { signal } : {});
}

const bytesOf = (rel: string) => fs.readFile(path.join(root, rel), 'utf8');
const modeOf = async (rel: string) => (await fs.lstat(path.join(root, rel))).mode & 0o7777;

describe('applyRestore round trips', () => {
  it('stages small files in recycled inodes (the previous original), swaps atomically, leaves no temp files; hard links keep theirs', async () => {
    await writeTree(root, { 'src/a.txt': { file: 'agent edit a', mode: 0o644 }, 'src/b.txt': { file: 'agent edit b' }, 'src/c.txt': { file: 'shared edit' } });
    await fs.link(path.join(root, 'src/c.txt'), path.join(root, 'src/c-link.txt'));
    const inodeA = (await fs.lstat(path.join(root, 'src/a.txt'))).ino;
    const entries = await plan({
      'src/a.txt': { target: await objects.file('original a', 0o600) },
      'src/b.txt': { target: await objects.file('original b, longer than before') },
      // The link existed at the checkpoint: its inode is the one recorded.
      'src/c.txt': { target: { ...(await objects.file('shared original')), ino: (await fs.lstat(path.join(root, 'src/c.txt'))).ino } },
    });
    const result = await apply(entries);
    expect(result).toMatchObject({ failed: [], cleanupPending: [], rolledBack: false });
    expect(result.restored.map((e) => e.path)).toEqual(['src/a.txt', 'src/b.txt', 'src/c.txt']);
    expect(await bytesOf('src/a.txt')).toBe('original a');
    expect(await modeOf('src/a.txt')).toBe(0o600);
    expect((await fs.lstat(path.join(root, 'src/a.txt'))).ino).not.toBe(inodeA);
    // a.txt's original inode, moved aside, was written over and became b.txt's stage.
    expect(await bytesOf('src/b.txt')).toBe('original b, longer than before');
    expect((await fs.lstat(path.join(root, 'src/b.txt'))).ino).toBe(inodeA);
    expect(await bytesOf('src/c-link.txt')).toBe('shared original');
    expect((await fs.readdir(path.join(root, 'src'))).sort()).toEqual(['a.txt', 'b.txt', 'c-link.txt', 'c.txt']);
  });

  it('a durable restore stages even a plain single-link file, so its destination changes atomically', async () => {
    await writeTree(root, { 'a.txt': { file: 'agent edit' } });
    const inode = (await fs.lstat(path.join(root, 'a.txt'))).ino;
    const entries = await plan({ 'a.txt': { target: await objects.file('original') } });
    const result = await applyRestore({ fs: nodeFileSystem, projectRoot: root, readObject: objects.readObject }, entries, { durable: true });
    expect(result.restored.map((e) => e.path)).toEqual(['a.txt']);
    expect(await bytesOf('a.txt')).toBe('original');
    expect((await fs.lstat(path.join(root, 'a.txt'))).ino).not.toBe(inode);
    expect(await fs.readdir(root)).toEqual(['a.txt']);
  });

  it('restores content and exact mode', async () => {
    await writeTree(root, { 'src/a.txt': { file: 'agent edit', mode: 0o644 } });
    const entries = await plan({ 'src/a.txt': { target: await objects.file('original', 0o755) } });
    expect(entries[0]?.action).toBe('restore');
    const result = await apply(entries);
    expect(result).toMatchObject({ failed: [], refused: [], cleanupPending: [], rolledBack: false });
    expect(result.restored.map((e) => e.path)).toEqual(['src/a.txt']);
    expect(await bytesOf('src/a.txt')).toBe('original');
    expect(await modeOf('src/a.txt')).toBe(0o755);
    expect(tempLeftovers(await snapshotTree(root))).toEqual([]);
  });

  it('recreates a missing file, creating missing parent folders', async () => {
    const entries = await plan({ 'docs/notes/deep/a.md': { target: await objects.file('# notes', 0o600) } });
    expect(entries[0]?.action).toBe('recreate');
    const result = await apply(entries);
    expect(result.restored).toHaveLength(1);
    expect(await bytesOf('docs/notes/deep/a.md')).toBe('# notes');
    expect(await modeOf('docs/notes/deep/a.md')).toBe(0o600);
  });

  it('deletes a file created since the checkpoint', async () => {
    await writeTree(root, { 'scripts/tidy.sh': { file: 'rm -rf', mode: 0o755 }, keep: { file: 'k' } });
    const result = await apply(await plan({ 'scripts/tidy.sh': { target: { type: 'absent' } } }));
    expect(result.restored.map((e) => e.action)).toEqual(['delete']);
    expect(await snapshotTree(root)).toEqual({
      keep: { type: 'file', bytes: Buffer.from('k').toString('hex'), mode: 0o644 },
      scripts: { type: 'dir', mode: expect.any(Number) as number },
    });
  });

  it('keeps created files with created: keep', async () => {
    await writeTree(root, { new: { file: 'n' } });
    const result = await apply(await plan({ new: { target: { type: 'absent' } } }, { created: 'keep', modePolicy: 'exact' }));
    expect(result.skipped).toMatchObject([{ path: 'new', action: 'leave', reason: 'created-since' }]);
    expect(await bytesOf('new')).toBe('n');
  });

  it('replaces a symlink that points outside the root instead of writing through it', async () => {
    await writeTree(outside, { 'victim.txt': { file: 'do not touch' } });
    const victim = path.join(outside, 'victim.txt');
    await fs.symlink(victim, path.join(root, 'config'));
    const result = await apply(await plan({ config: { target: await objects.file('restored config') } }));
    expect(result.restored).toHaveLength(1);
    expect((await fs.lstat(path.join(root, 'config'))).isFile()).toBe(true);
    expect(await bytesOf('config')).toBe('restored config');
    expect(await fs.readFile(victim, 'utf8')).toBe('do not touch');
  });

  it('restores a symlink (recreated, not followed) over a file and where nothing is', async () => {
    await writeTree(root, { target: { file: 't' }, link: { file: 'agent replaced the link' } });
    const result = await apply(
      await plan({
        link: { target: { type: 'symlink', target: 'target' } },
        'gone/link2': { target: { type: 'symlink', target: '../../outside/nowhere' } },
      }),
    );
    expect(result.restored.map((e) => e.action)).toEqual(['recreate', 'restore']);
    expect(await fs.readlink(path.join(root, 'link'))).toBe('target');
    expect(await fs.readlink(path.join(root, 'gone/link2'))).toBe('../../outside/nowhere');
    expect(await bytesOf('target')).toBe('t');
  });

  it('rewrites a hard-linked file in place so the other link sees the restored content', async () => {
    await writeTree(root, { a: { file: 'edited', mode: 0o644 } });
    const other = path.join(outside, 'other-link');
    await fs.link(path.join(root, 'a'), other);
    const inode = (await fs.stat(other)).ino;
    const result = await apply(await plan({ a: { target: { ...(await objects.file('original', 0o600)), ino: inode } } }));
    expect(result).toMatchObject({ failed: [], cleanupPending: [] });
    expect(await bytesOf('a')).toBe('original');
    expect(await fs.readFile(other, 'utf8')).toBe('original');
    const [st, otherSt] = await Promise.all([fs.stat(path.join(root, 'a')), fs.stat(other)]);
    expect(st.ino).toBe(inode);
    expect(otherSt.nlink).toBe(2);
    expect(st.mode & 0o777).toBe(0o600);
    expect(tempLeftovers(await snapshotTree(root))).toEqual([]);
  });

  it('a hard link made since the checkpoint (to a file outside the project) is replaced by a rename, never written through', async () => {
    await writeTree(root, { a: { file: 'original inode' } });
    const recorded = (await fs.lstat(path.join(root, 'a'))).ino;
    // A shell call replaces the file with a hard link to a file outside the project.
    await writeTree(outside, { 'precious.txt': { file: 'outside bytes', mode: 0o640 } });
    await fs.rm(path.join(root, 'a'));
    await fs.link(path.join(outside, 'precious.txt'), path.join(root, 'a'));
    const result = await apply(await plan({ a: { target: { ...(await objects.file('restored', 0o600)), ino: recorded } } }));
    expect(result).toMatchObject({ failed: [], cleanupPending: [] });
    expect(await bytesOf('a')).toBe('restored');
    expect(await fs.readFile(path.join(outside, 'precious.txt'), 'utf8')).toBe('outside bytes');
    expect((await fs.lstat(path.join(outside, 'precious.txt'))).mode & 0o777).toBe(0o640);
    expect((await fs.lstat(path.join(outside, 'precious.txt'))).nlink).toBe(1);
  });

  it('never-widen keeps a non-executable destination non-executable and an executable one as is', async () => {
    await writeTree(root, { plain: { file: 'x', mode: 0o644 }, script: { file: 'y', mode: 0o750 } });
    const entries = await plan(
      {
        plain: { target: await objects.file('p', 0o777) },
        script: { target: await objects.file('s', 0o600) },
        fresh: { target: await objects.file('f', 0o775) },
      },
      { created: 'delete', modePolicy: 'never-widen' },
    );
    await apply(entries);
    expect(await modeOf('plain')).toBe(0o644);
    expect(await modeOf('script')).toBe(0o750);
    expect(await modeOf('fresh')).toBe(0o644);
    expect(await bytesOf('plain')).toBe('p');
  });

  it('applies a mode-only restore under exact', async () => {
    await writeTree(root, { run: { file: 'same', mode: 0o644 } });
    const entries = await plan({ run: { target: await objects.file('same', 0o755) } });
    expect(entries[0]).toMatchObject({ action: 'restore', reason: 'mode-only' });
    await apply(entries);
    expect(await modeOf('run')).toBe(0o755);
  });

  it('passes skip, leave and refuse entries through untouched', async () => {
    await writeTree(root, { same: { file: 's' }, outsideEdit: { file: 'theirs' } });
    const entries = await plan({
      same: { target: await objects.file('s') },
      outsideEdit: { target: await objects.file('mine'), lastAfter: 'file:0000000000000000' },
      secret: { target: { type: 'uncopied', reason: 'credential', size: 1, mode: 0o600 }, lastAfter: 'absent' },
    });
    const before = await snapshotTree(root);
    const result = await apply(entries);
    expect(result.refused.map((e) => [e.path, e.reason])).toEqual([['outsideEdit', 'changed-outside']]);
    expect(result.skipped.map((e) => [e.path, e.reason])).toEqual([
      ['same', 'already-matches'],
      ['secret', 'no-copy:credential'],
    ]);
    expect(await snapshotTree(root)).toEqual(before);
  });
});

describe('guard re-check', () => {
  it('refuses a file modified between plan and apply, and still restores the rest', async () => {
    await writeTree(root, { a: { file: 'agent a' }, b: { file: 'agent b' } });
    const entries = await plan({ a: { target: await objects.file('orig a') }, b: { target: await objects.file('orig b') } });
    await fs.writeFile(path.join(root, 'a'), 'user edit after preview');
    const result = await apply(entries);
    expect(result.refused).toMatchObject([{ path: 'a', action: 'refuse', reason: 'changed-since-plan' }]);
    expect(result.refused[0]?.foundHash).not.toBe(result.refused[0]?.expectedHash);
    expect(result.restored.map((e) => e.path)).toEqual(['b']);
    expect(await bytesOf('a')).toBe('user edit after preview');
    expect(await bytesOf('b')).toBe('orig b');
    expect(tempLeftovers(await snapshotTree(root))).toEqual([]);
  });

  it('re-checks just before the swap: a write landing after staging is refused, stage removed, folders undone', async () => {
    const entries = await plan({ 'new/dir/a': { target: await objects.file('orig') }, b: { target: await objects.file('b') } });
    let raced = false;
    const ff = faultFs(nodeFileSystem, {
      before: async (op, args) => {
        // The stage write is the first open of a .turnback-stage- file: a racing writer creates the target now.
        if (!raced && op === 'open' && reachedPath(args[0]).includes('.turnback-stage-') && reachedPath(args[0]).includes('new')) {
          raced = true;
          await fs.writeFile(path.join(root, 'new/dir/a'), 'racer');
        }
      },
    });
    const result = await apply(entries, ff.fs);
    expect(raced).toBe(true);
    expect(result.refused).toMatchObject([{ path: 'new/dir/a', reason: 'changed-since-plan', expectedHash: 'absent' }]);
    expect(result.restored.map((e) => e.path)).toEqual(['b']);
    expect(await bytesOf('new/dir/a')).toBe('racer');
    expect(tempLeftovers(await snapshotTree(root))).toEqual([]);
  });
});

describe('the beforeSwap hook (where the session layer saves first)', () => {
  it('sees what the guard read, bytes included, before the destination is touched', async () => {
    await writeTree(root, { a: { file: 'agent a' }, gone: { file: 'agent made this' }, link: { link: 'elsewhere' } });
    const entries = await plan({
      a: { target: await objects.file('orig a') },
      gone: { target: { type: 'absent' } },
      link: { target: await objects.file('was a file') },
      'new.txt': { target: await objects.file('orig new') },
    });
    const seen: Record<string, unknown> = {};
    const result = await applyRestore(
      {
        fs: nodeFileSystem,
        projectRoot: root,
        readObject: objects.readObject,
        beforeSwap: async (entry, sight) => {
          // The destination is still untouched when the hook runs.
          const now = await fs.lstat(path.join(root, entry.path)).then((st) => (st.isSymbolicLink() ? 'link' : 'file'), () => 'absent');
          seen[entry.path] = { type: sight.state.type, bytes: sight.bytes?.toString(), now };
          return 'go';
        },
      },
      entries,
    );
    expect(result.failed).toEqual([]);
    expect(seen).toEqual({
      a: { type: 'file', bytes: 'agent a', now: 'file' },
      gone: { type: 'file', bytes: 'agent made this', now: 'file' },
      link: { type: 'symlink', bytes: undefined, now: 'link' },
      'new.txt': { type: 'absent', bytes: undefined, now: 'absent' },
    });
  });

  it('refuse and leave answers drop only that entry and remove its stage; a throw rolls everything back', async () => {
    await writeTree(root, { a: { file: 'agent a' }, b: { file: 'agent b' }, 'c/d': { file: 'agent d' } });
    const base = {
      a: { target: await objects.file('orig a') },
      b: { target: await objects.file('orig b') },
      'c/d': { target: await objects.file('orig d') },
      'n/e': { target: await objects.file('orig e') },
    };
    const answered = await applyRestore(
      {
        fs: nodeFileSystem,
        projectRoot: root,
        readObject: objects.readObject,
        beforeSwap: async (entry) => (entry.path === 'a' ? { refuse: 'file:0000' } : entry.path === 'n/e' ? { leave: 'cannot-save-first:too-large' } : 'go'),
      },
      await plan(base),
    );
    expect(answered.refused).toMatchObject([{ path: 'a', reason: 'changed-since-plan', foundHash: 'file:0000' }]);
    expect(answered.skipped).toMatchObject([{ path: 'n/e', action: 'leave', reason: 'cannot-save-first:too-large' }]);
    expect(answered.restored.map((e) => e.path)).toEqual(['b', 'c/d']);
    expect(await bytesOf('a')).toBe('agent a');
    const tree = await snapshotTree(root);
    expect(tempLeftovers(tree)).toEqual([]);
    expect(tree['n']).toBeUndefined(); // the folder made for n/e went with its stage

    await writeTree(root, { a: { file: 'agent a' }, b: { file: 'agent b' }, 'c/d': { file: 'agent d' } });
    const before = await snapshotTree(root);
    const thrown = await applyRestore(
      {
        fs: nodeFileSystem,
        projectRoot: root,
        readObject: objects.readObject,
        beforeSwap: async (entry) => {
          if (entry.path === 'c/d') throw Object.assign(new Error('store full'), { code: 'ENOSPC' });
          return 'go';
        },
      },
      await plan(base),
    );
    expect(thrown.rolledBack).toBe(true);
    expect(thrown.failed.find((f) => f.path === 'c/d')).toMatchObject({ code: 'ENOSPC' });
    expect(await snapshotTree(root)).toEqual(before);
  });
});

describe('stages written ahead', () => {
  it('a refused entry whose new folder later stages share leaves the folder to them; refused alone, it goes', async () => {
    const targets = {
      'new/a': { target: await objects.file('orig a') },
      'new/b': { target: await objects.file('orig b') },
      'other/deep/c': { target: await objects.file('orig c') },
    };
    const refuseA = await applyRestore(
      { fs: nodeFileSystem, projectRoot: root, readObject: objects.readObject, beforeSwap: async (e) => (e.path === 'new/a' ? { refuse: 'file:1' } : 'go') },
      await plan(targets),
    );
    expect(refuseA.restored.map((e) => e.path)).toEqual(['new/b', 'other/deep/c']);
    expect(refuseA.cleanupPending).toEqual([]);
    let tree = await snapshotTree(root);
    expect(Object.keys(tree).filter((k) => tree[k]?.type === 'file')).toEqual(['new/b', 'other/deep/c']);
    expect(tempLeftovers(tree)).toEqual([]);

    await removeRoot(root);
    await fs.mkdir(root);
    const refuseAll = await applyRestore(
      { fs: nodeFileSystem, projectRoot: root, readObject: objects.readObject, beforeSwap: async (e) => (e.path.startsWith('new/') ? { refuse: 'file:1' } : 'go') },
      await plan(targets),
    );
    expect(refuseAll.restored.map((e) => e.path)).toEqual(['other/deep/c']);
    expect(refuseAll.cleanupPending).toEqual([]);
    tree = await snapshotTree(root);
    // The folder made for new/a and new/b is gone: both were refused.
    expect(Object.keys(tree)).toEqual(['other', 'other/deep', 'other/deep/c']);
  });

  it('a stage that fails ahead of its turn rolls back everything already swapped', async () => {
    // Recreated files are staged ahead (an existing single-link file is rewritten in place instead).
    await writeTree(root, { keep: { file: 'kept' } });
    const entries = await plan({ a: { target: await objects.file('orig a') }, b: { target: await objects.file('orig b') }, c: { target: await objects.file('orig c') } });
    expect(entries.map((e) => e.action)).toEqual(['recreate', 'recreate', 'recreate']);
    const before = await snapshotTree(root);
    // The third stage write fails (which entry's is a matter of the thread pool's order); by then
    // earlier entries may already be swapped.
    const ff = faultFs(nodeFileSystem, { failOn: { op: 'handle.writeFile', nth: 3 } });
    const result = await apply(entries, { ...ff.fs, sync: nodeFileSystem.sync } as FileSystem);
    expect(ff.fired).toBe(true);
    expect(result.rolledBack).toBe(true);
    expect(result.restored).toEqual([]);
    expect(result.cleanupPending).toEqual([]);
    expect(result.failed.filter((f) => f.code !== undefined)).toMatchObject([{ code: 'EIO' }]);
    expect(await snapshotTree(root)).toEqual(before);
  });
});

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
    await removeRoot(root);
    root = await makeRoot();

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
