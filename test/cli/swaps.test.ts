import { lstat, mkdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { snapshotTree } from '../restore/fixtures.js';

// A file swapped for a folder, or a folder for a link, comes back in one undo, with the right
// reason when it cannot, and no empty folder is left behind.

const SWAPS = 'rm a; mkdir a; echo n > a/b; rm -rf d; ln -s /tmp d; rm k; mkdir -p k/deep; echo z > k/deep/z; mkdir -p newdir/sub; echo q > newdir/sub/q';

async function swapped(): Promise<Awaited<ReturnType<typeof cliRepo>>> {
  const repo = await cliRepo({ a: 'a\n', 'd/x': 'x\n', 'd/y': 'y\n', k: 'k\n' });
  expect(repo.tb(['run', '--', 'sh', '-c', SWAPS]).code).toBe(0);
  return repo;
}

describe('swaps between files, folders and links', () => {
  // Issue #26 point 7 and #27: what the turn itself created, still as it left it, goes with a plain
  // undo — a link over a folder and a file over a folder alike; what a later turn created is kept.
  it('a plain undo takes back what the turn itself created (a link or a file where a folder was, new folders); a later turn\'s new file is kept and listed', async () => {
    const repo = await swapped();
    const turn = repo.newestId();
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo l > later.txt']).code).toBe(0);
    const undo = repo.tb(['undo', turn, '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(undo.stdout).toMatch(/deleted +d +\(it stands where a folder was; saved first\)/);
    expect(undo.stdout).toMatch(/written +a +\(replaces the folder emptied by this undo\)/);
    expect(undo.stdout).toMatch(/kept +later\.txt/);
    expect((await lstat(path.join(repo.proj, 'd'))).isDirectory()).toBe(true);
    expect(await readFile(path.join(repo.proj, 'd', 'x'), 'utf8')).toBe('x\n');
    expect(await readFile(path.join(repo.proj, 'a'), 'utf8')).toBe('a\n');
    expect(await readFile(path.join(repo.proj, 'k'), 'utf8')).toBe('k\n');
    expect(existsSync(path.join(repo.proj, 'newdir'))).toBe(false);
    expect(await readFile(path.join(repo.proj, 'later.txt'), 'utf8')).toBe('l\n');
  });

  it('undo --delete-created brings every swap back in one undo, leaves no empty folder, and redo returns the swapped tree exactly', async () => {
    const repo = await swapped();
    const before = await snapshotTree(repo.proj);
    const undo = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toMatch(/written +a +\(replaces the folder emptied by this undo\)/);
    expect(undo.stdout).toMatch(/removed +newdir\/ +an emptied folder made since the picture/);
    expect(repo.git('status', '--porcelain', '--untracked-files=all')).toBe('');
    expect(existsSync(path.join(repo.proj, 'newdir'))).toBe(false);
    expect(await readFile(path.join(repo.proj, 'k'), 'utf8')).toBe('k\n');

    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    const after = await snapshotTree(repo.proj);
    delete before['.git'];
    for (const key of Object.keys(after)) if (key === '.git' || key.startsWith('.git/')) delete after[key];
    for (const key of Object.keys(before)) if (key.startsWith('.git/')) delete before[key];
    expect(after).toEqual(before);
    expect(await readlink(path.join(repo.proj, 'd'))).toBe('/tmp');
  });

  it('a folder holding a file the plan does not know is never removed: that path is refused, the rest restored', async () => {
    const repo = await swapped();
    await writeFile(path.join(repo.proj, '.gitignore'), 'a/secret\n');
    // Written outside any picture, and ignored: the plan knows nothing of it.
    await writeFile(path.join(repo.proj, 'a', 'secret'), 'keep me\n');
    const undo = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code).toBe(6);
    expect(undo.stdout.trimEnd().split('\n').at(-1)).toBe('not brought back: 1 file (1 changed since the preview)');
    expect(undo.stdout).toMatch(/skipped +a +changed since the preview/);
    expect(await readFile(path.join(repo.proj, 'a', 'secret'), 'utf8')).toBe('keep me\n');
    expect(await readFile(path.join(repo.proj, 'k'), 'utf8')).toBe('k\n');
    expect(existsSync(path.join(repo.proj, 'a', 'b'))).toBe(false);
  });

  it('--delete-created removes only folders made since the picture: an empty folder that was there before stays', async () => {
    const repo = await cliRepo({ 'x.txt': 'x\n' });
    await mkdir(path.join(repo.proj, 'old'));
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo n > old/n.txt; mkdir -p fresh/sub; echo f > fresh/sub/f.txt']).code).toBe(0);
    const undo = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code).toBe(0);
    expect(existsSync(path.join(repo.proj, 'old'))).toBe(true);
    expect(existsSync(path.join(repo.proj, 'old', 'n.txt'))).toBe(false);
    expect(existsSync(path.join(repo.proj, 'fresh'))).toBe(false);
    expect(undo.stdout).toMatch(/removed +fresh\/sub\//);
    expect(undo.stdout).not.toMatch(/removed +old\//);
  });
});
