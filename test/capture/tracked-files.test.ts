import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanTrackedBlob, cleanTrackedBlobIs, cleanTrackedBlobs, trackedPathSharer } from '../../src/capture/tracked-files.js';
import { restingCheck } from '../../src/capture/picture-coverage.js';
import { pictured } from '../../src/capture/stat-record.js';
import type { PictureRecord } from '../../src/capture/picture.js';
import { lstatNumbers } from '../../src/fs/fast-lstat.js';
import { tempFolder } from '../helpers/temp.js';

/** A repository with `names` committed, each file's mtime a minute in the past (not racily clean). */
async function repoWith(names: readonly string[]): Promise<string> {
  const root = await tempFolder('turnback-tracked-');
  const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'core.quotepath=off', ...args], { cwd: root, encoding: 'utf8' });
  git('init', '-q');
  const past = new Date(Date.now() - 60_000);
  for (const name of names) {
    const file = path.join(root, ...name.split('/'));
    nodeFs.mkdirSync(path.dirname(file), { recursive: true });
    nodeFs.writeFileSync(file, `bytes of ${name}\n`);
    nodeFs.utimesSync(file, past, past);
  }
  git('add', '-A');
  git('commit', '-qm', 'init');
  return root;
}

function recordOf(root: string, name: string): { path: string; type: 'file'; size: number; mode: number; mtimeMs: number; ino: number } {
  const out = new Float64Array(5);
  lstatNumbers(path.join(root, ...name.split('/')), out, 0);
  return { path: name, type: 'file', size: out[2] as number, mode: out[1] as number, mtimeMs: out[3] as number, ino: out[4] as number };
}

function blobOf(root: string, name: string): string {
  return execFileSync('git', ['rev-parse', `:${name}`], { cwd: root, encoding: 'utf8' }).trim();
}

describe("the resting check (git's index still names a record's blob, clean)", () => {
  it('answers a file record holding its state as it answers the plain record, for git keys, other keys and blobs git does not name', async () => {
    const names = ['a.txt', 'b/c.txt', 'b/d/e.txt', 'ﬀ.txt', '😀.txt'];
    const root = await repoWith(names);
    const check = restingCheck(root);
    const blobIs = cleanTrackedBlobIs(root);
    for (const name of names) {
      const stat = recordOf(root, name);
      const blob = blobOf(root, name);
      const other = blob.replace(/^./, (c) => (c === '0' ? '1' : '0'));
      expect(blobIs(stat, blob), name).toBe(true);
      expect(blobIs(stat, `git:${blob}`, 4), name).toBe(true);
      expect(blobIs(stat, `git:${other}`, 4), name).toBe(false);
      expect(blobIs(stat, `git:${blob}0`, 4), name).toBe(false);
      const cases: [string, boolean][] = [[`git:${blob}`, true], [`git:${other}`, false], [`${blob.slice(0, 16)}-1a`, false]];
      for (const [key, expected] of cases) {
        const state = { type: 'file' as const, object: key, hash: key, size: stat.size, mode: stat.mode & 0o7777, ino: stat.ino };
        // Held by its key (the state repeats the stat), held whole (another mode), and as a plain record.
        const held = pictured(stat.path, stat.size, stat.mode, stat.mtimeMs, stat.ino, state);
        const whole = pictured(stat.path, stat.size, stat.mode, stat.mtimeMs, stat.ino, { ...state, mode: 0o600 });
        const plain: PictureRecord = { ...stat, state };
        expect(held.repeatsStat).toBe(true);
        expect(whole.repeatsStat).toBe(false);
        expect([check(held), check(whole), check(plain)], `${name} ${key}`).toEqual([expected, expected, expected]);
      }
      const uncopied = pictured(stat.path, stat.size, stat.mode, stat.mtimeMs, stat.ino, { type: 'uncopied', reason: 'credential', size: stat.size, mode: stat.mode });
      expect(check(uncopied)).toBe(false);
    }
  });
});

describe('cleanTrackedBlob (git index look-up of a clean file)', () => {
  // Ordered as git orders them by bytes, yet not as strings: U+FB00 (UTF-8 EF AC 80) sorts before
  // U+1F600 (F0 9F 98 80) in bytes, after it in UTF-16 (FB00 > D83D).
  const cases: [string, string[]][] = [
    ['ASCII paths, whose string order is git\'s', ['a.txt', 'b/c.txt', 'b/d/e.txt', 'b-c.txt', 'b0.txt', 'z.txt', 'Z.txt', 'a b.txt']],
    ['paths whose string order is not git\'s byte order', ['a.txt', 'ﬀ.txt', '😀.txt', 'é/x.txt', 'b.txt', '日本/語.txt']],
  ];
  for (const [title, names] of cases) {
    it(`names git's blob for every clean tracked file, and nothing for a path git does not hold or a changed file: ${title}`, async () => {
      const root = await repoWith(names);
      const many = cleanTrackedBlobs(root);
      for (const name of names) {
        expect(cleanTrackedBlob(root, recordOf(root, name)), name).toBe(blobOf(root, name));
        expect(many(recordOf(root, name)), name).toBe(blobOf(root, name));
      }
      // Names git does not hold, between and around the ones it does.
      for (const name of ['', '0.txt', 'a.txu', 'b', 'b/c.tx', 'zz.txt', '😀.txu', 'ﬀ']) {
        expect(cleanTrackedBlob(root, { ...recordOf(root, names[0] as string), path: name }), name).toBeUndefined();
      }
      const changed = names[1] as string;
      nodeFs.appendFileSync(path.join(root, ...changed.split('/')), 'more\n');
      expect(cleanTrackedBlob(root, recordOf(root, changed))).toBeUndefined();
    });
  }
});

describe('trackedPathSharer (the kept index\'s string for a walk\'s fresh record)', () => {
  it('gives back the very text it is given, before and past its threshold, tracked or not, in a work tree and outside one', async () => {
    const names = ['a.txt', 'b/c.txt', 'ﬀ.txt', '😀.txt', 'é/x.txt'];
    const root = await repoWith(names);
    nodeFs.writeFileSync(path.join(root, 'untracked.txt'), 'u\n');
    const asked = [...names, 'untracked.txt', 'b', 'missing/file.txt', ...names];
    for (const after of [0, 2, 1000]) {
      const share = trackedPathSharer(root, after);
      expect(asked.map((p) => share(p))).toEqual(asked);
    }
    const outside = await tempFolder('turnback-untracked-');
    const share = trackedPathSharer(outside, 0);
    expect(asked.map((p) => share(p))).toEqual(asked);
  });
});
