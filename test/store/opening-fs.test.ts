import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { openingFileSystem } from '../../src/store/opening-fs.js';

// A store's open makes its calls on the calling thread (opening-fs.ts): each must answer and fail
// exactly as the promise API does, failures as rejected promises, never thrown.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tb-opening-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const codeOf = (promise: Promise<unknown>): Promise<string | undefined> => promise.then(
  () => undefined,
  (error: NodeJS.ErrnoException) => error.code,
);

describe('openingFileSystem', () => {
  it('answers as the promise API does: lstat, realpath, readdir, mkdir, a text read, an exclusive write; failures reject', async () => {
    const quick = openingFileSystem(nodeFileSystem);
    const slow = nodeFileSystem;
    writeFileSync(path.join(dir, 'a.json'), '{"x":1}\n');
    symlinkSync('a.json', path.join(dir, 'link'));
    for (const fs of [quick, slow]) {
      expect((await fs.lstat(path.join(dir, 'link'))).isSymbolicLink()).toBe(true);
      expect(await fs.realpath(path.join(dir, 'link'))).toBe(await slow.realpath(path.join(dir, 'a.json')));
    }
    expect((await quick.readdir(dir)).sort()).toEqual((await slow.readdir(dir)).sort());
    expect(await quick.readFile(path.join(dir, 'a.json'), 'utf8')).toBe('{"x":1}\n');
    expect(await quick.mkdir(path.join(dir, 'b', 'c'), { recursive: true, mode: 0o700 })).toBe(path.join(dir, 'b'));
    expect(await quick.mkdir(path.join(dir, 'b', 'c'), { recursive: true, mode: 0o700 })).toBeUndefined();
    await quick.writeFile(path.join(dir, 'new.json'), 'made', { flag: 'wx', mode: 0o600 });
    expect(await slow.readFile(path.join(dir, 'new.json'), 'utf8')).toBe('made');
    expect((await slow.lstat(path.join(dir, 'new.json'))).mode & 0o777).toBe(0o600);

    const missing = path.join(dir, 'missing');
    expect(await codeOf(quick.lstat(missing))).toBe('ENOENT');
    expect(await codeOf(quick.realpath(missing))).toBe('ENOENT');
    expect(await codeOf(quick.readdir(missing))).toBe('ENOENT');
    expect(await codeOf(quick.readFile(missing, 'utf8'))).toBe('ENOENT');
    expect(await codeOf(quick.writeFile(path.join(dir, 'new.json'), 'again', { flag: 'wx', mode: 0o600 }))).toBe('EEXIST');
    expect(await codeOf(quick.readdir(path.join(dir, 'a.json')))).toBe('ENOTDIR');
  });

  it('a file system without a sync path (the fault-injection tests\' own) is used as it is', () => {
    const { sync: _sync, ...withoutSync } = nodeFileSystem;
    const faulty: FileSystem = withoutSync;
    expect(openingFileSystem(faulty)).toBe(faulty);
  });
});
