import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FileSystem } from '../../src/fs/file-system.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { applyRestore } from '../../src/restore/apply.js';
import { faultFs } from '../helpers/fault-fs.js';
import { reachedPath } from '../helpers/reached.js';
import { apply, bytesOf, modeOf, objects, outside, plan, root, useApplyRoots } from './apply-harness.js';
import { removeRoot, snapshotTree, tempLeftovers, writeTree } from './fixtures.js';

// applyRestore's writes (files, links, modes, hard links, deletes), the guard just before each
// swap, the beforeSwap hook the session layer saves through, and stages written ahead.

useApplyRoots();

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
