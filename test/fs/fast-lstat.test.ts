import { spawnSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  KIND_FAILED,
  KIND_FILE,
  KIND_FOLDER,
  KIND_MISSING,
  KIND_NOT_FOLDER_ON_PATH,
  KIND_OTHER,
  KIND_SYMLINK,
  STAT_FIELDS,
  lstatNumbers,
  usesFastLstat,
} from '../../src/fs/fast-lstat.js';
import { tempFolder } from '../helpers/temp.js';

let dir: string;
beforeEach(async () => {
  dir = await tempFolder('turnback-fast-lstat-');
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** What `fs.lstatSync` says, in lstatNumbers' layout. */
function expected(p: string): number[] {
  const stats = nodeFs.lstatSync(p);
  const kind = stats.isFile() ? KIND_FILE : stats.isSymbolicLink() ? KIND_SYMLINK : stats.isDirectory() ? KIND_FOLDER : KIND_OTHER;
  return [kind, stats.mode & 0o7777, stats.size, stats.mtimeMs, stats.ino];
}

function numbers(p: string): number[] {
  const out = new Float64Array(STAT_FIELDS);
  out[0] = lstatNumbers(p, out, 0);
  return [...out];
}

describe('lstat as numbers', () => {
  it('takes the fast path on this platform (else the cases below compare the fallback with itself)', () => {
    expect(process.platform === 'win32' || usesFastLstat()).toBe(true);
  });

  it('gives the very numbers fs.lstatSync gives for a file, a folder, a link, a FIFO', () => {
    const file = path.join(dir, 'file.txt');
    nodeFs.writeFileSync(file, 'hello');
    nodeFs.chmodSync(file, 0o4755);
    const folder = path.join(dir, 'sub');
    nodeFs.mkdirSync(folder, { mode: 0o700 });
    const link = path.join(dir, 'link');
    nodeFs.symlinkSync('../somewhere/else', link);
    const fifo = path.join(dir, 'fifo');
    spawnSync('mkfifo', [fifo]);
    for (const p of [file, folder, link, ...(nodeFs.existsSync(fifo) ? [fifo] : [])]) expect(numbers(p), p).toEqual(expected(p));
    expect(numbers(link)[0]).toBe(KIND_SYMLINK);
  });

  it('says missing, a file on the way, and other failures by kind, never by throwing', () => {
    nodeFs.writeFileSync(path.join(dir, 'plain'), 'x');
    expect(numbers(path.join(dir, 'nothing'))[0]).toBe(KIND_MISSING);
    expect(numbers(path.join(dir, 'plain', 'below'))[0]).toBe(KIND_NOT_FOLDER_ON_PATH);
    // A loop of links is not followed by lstat; a name too long fails.
    expect(numbers(path.join(dir, 'x'.repeat(300)))[0]).toBe(KIND_FAILED);
  });

  it('round trip: any size, permission bits and sub-millisecond mtime come back exactly (fast-check)', () => {
    const file = path.join(dir, 'probe');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 0o7777 }), fc.integer({ min: 0, max: 4_000_000_000 }), fc.integer({ min: 0, max: 999_999 }), (size, mode, seconds, micros) => {
        nodeFs.writeFileSync(file, Buffer.alloc(size, 7));
        nodeFs.chmodSync(file, mode);
        const time = seconds + micros / 1e6;
        nodeFs.utimesSync(file, time, time);
        expect(numbers(file)).toEqual(expected(file));
      }),
      { seed: 20261202, numRuns: 60 },
    );
  });
});
