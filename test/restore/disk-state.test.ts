import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { fingerprintOf } from '../../src/core/model.js';
import { diskFingerprint, readDiskState } from '../../src/fs/disk-state.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { makeRoot, removeRoot, writeTree } from './fixtures.js';

let root: string;
let outside: string;
beforeEach(async () => {
  root = await makeRoot();
  outside = await makeRoot();
});
afterEach(async () => {
  await removeRoot(root);
  await removeRoot(outside);
});

const read = (rel: string) => readDiskState(nodeFileSystem, root, rel);

describe('readDiskState', () => {
  it('hashes a regular file and reports size, mode and link count', async () => {
    await loadHasher();
    await writeTree(root, { 'src/a.txt': { file: 'hello', mode: 0o640 } });
    await fs.link(path.join(root, 'src/a.txt'), path.join(root, 'b.txt'));
    const state = await read('src/a.txt');
    const st = await fs.lstat(path.join(root, 'src/a.txt'), { bigint: true });
    expect(state).toEqual({
      type: 'file',
      hash: contentHash(Buffer.from('hello')),
      size: 5,
      mode: 0o640,
      nlink: 2,
      // The stat identity of the version read (inode, size, ns mtime and ctime), for lazily hashed post-write records.
      statId: `stat:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`,
      // The owner, which a restore run as root gives the file it writes back.
      uid: Number(st.uid),
      gid: Number(st.gid),
      ino: Number(st.ino),
    });
    expect(diskFingerprint(state)).toBe(fingerprintOf({ type: 'file', object: 'x', hash: contentHash(Buffer.from('hello')), size: 5, mode: 0 }));
  });

  it('hashes files larger than one read chunk the same way as contentHash', async () => {
    await loadHasher();
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 0x5a);
    await writeTree(root, { big: { file: big } });
    expect(await read('big')).toMatchObject({ type: 'file', hash: contentHash(big), size: big.length });
  });

  it('reports a missing file, and a file under a missing folder, as absent', async () => {
    expect(await read('nope')).toEqual({ type: 'absent' });
    expect(await read('no/such/dir/file')).toEqual({ type: 'absent' });
    expect(diskFingerprint({ type: 'absent' })).toBe('absent');
  });

  it('never follows a symlink leaf, dangling or not', async () => {
    await writeTree(root, { target: { file: 'x' }, ln: { link: 'target' }, dangling: { link: '../../nowhere' } });
    expect(await read('ln')).toEqual({ type: 'symlink', target: 'target' });
    expect(await read('dangling')).toEqual({ type: 'symlink', target: '../../nowhere' });
    expect(diskFingerprint(await read('ln'))).toBe(fingerprintOf({ type: 'symlink', target: 'target' }));
  });

  it('reports folders and FIFOs as other', async () => {
    await writeTree(root, { dir: { dir: true } });
    expect(await read('dir')).toEqual({ type: 'other', kind: 'directory' });
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await read('pipe')).toEqual({ type: 'other', kind: 'fifo' });
    expect(diskFingerprint(await read('pipe'))).toBe('other:fifo');
  });

  it('throws INVALID_PATH for a path under a symlinked folder', async () => {
    await writeTree(outside, { 'secret.txt': { file: 's' } });
    await fs.symlink(outside, path.join(root, 'escape'));
    await expect(read('escape/secret.txt')).rejects.toMatchObject({ code: 'INVALID_PATH' });
  });

  it('throws INVALID_PATH for .git and non-canonical paths', async () => {
    await expect(read('.git/config')).rejects.toMatchObject({ code: 'INVALID_PATH' });
    await expect(read('a/../b')).rejects.toMatchObject({ code: 'INVALID_PATH' });
    await expect(read('/etc/passwd')).rejects.toMatchObject({ code: 'INVALID_PATH' });
  });
});
