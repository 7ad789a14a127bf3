import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { readDiskState, readPostWriteState, readVersionSync, SYNC_READ_MAX_BYTES, type DiskState } from '../../src/fs/disk-state.js';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { resolveInsideRoot } from '../../src/fs/paths.js';
import { makeRoot, writeTree } from '../restore/fixtures.js';

// The real file system reads small files synchronously; without `sync` every call is a promise.
// Both paths must see exactly the same states and refuse exactly the same paths.
const { sync: _sync, ...promiseOnly } = nodeFileSystem;
const asyncOnly: FileSystem = promiseOnly;

let root: string;
let outside: string;
beforeEach(async () => {
  root = await makeRoot();
  outside = await makeRoot();
});

async function bothWays(rel: string): Promise<{ sync: DiskState | string; promise: DiskState | string }> {
  const settle = (fsImpl: FileSystem) =>
    readDiskState(fsImpl, root, rel).catch((error: unknown) => (isCheckpointError(error) ? `error:${error.code}` : `thrown:${String(error)}`));
  return { sync: await settle(nodeFileSystem), promise: await settle(asyncOnly) };
}

describe('synchronous fast path of readDiskState', () => {
  it('agrees with the promise path on every kind of path', async () => {
    await writeTree(root, {
      'small.txt': { file: 'hello', mode: 0o640 },
      'empty.txt': { file: '' },
      'at-limit.bin': { file: Buffer.alloc(SYNC_READ_MAX_BYTES, 1) },
      'over-limit.bin': { file: Buffer.alloc(SYNC_READ_MAX_BYTES + 1, 2) },
      'link-in': { link: 'small.txt' },
      'link-out': { link: outside },
      'dir/inner.txt': { file: 'inner' },
      'file-as-parent': { file: 'x' },
    });
    await fs.symlink(outside, path.join(root, 'linked-dir'));
    await fs.writeFile(path.join(outside, 'secret.txt'), 'secret');
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const cases = ['small.txt', 'empty.txt', 'at-limit.bin', 'over-limit.bin', 'link-in', 'link-out', 'dir', 'dir/inner.txt', 'missing.txt', 'missing/deeper/file', 'file-as-parent/x', 'linked-dir/secret.txt', 'pipe'];
    for (const rel of cases) {
      const { sync, promise } = await bothWays(rel);
      expect(sync, rel).toEqual(promise);
    }
    expect((await bothWays('linked-dir/secret.txt')).sync).toBe('error:INVALID_PATH');
    expect((await bothWays('file-as-parent/x')).sync).toBe('error:INVALID_PATH');
    expect((await bothWays('pipe')).sync).toEqual({ type: 'other', kind: 'fifo' });
  });

  it('resolves ancestors the same way (missing folders listed outermost first)', async () => {
    await writeTree(root, { 'a/b/c.txt': { file: 'c' } });
    for (const rel of ['a/b/c.txt', 'a/x/y/z.txt', 'new/file']) {
      expect(await resolveInsideRoot(nodeFileSystem, root, rel)).toEqual(await resolveInsideRoot(asyncOnly, root, rel));
    }
    expect((await resolveInsideRoot(nodeFileSystem, root, 'a/x/y/z.txt')).missingDirs).toEqual(['a/x', 'a/x/y']);
  });

  it('agrees with the promise path on random small trees (property)', async () => {
    const name = fc.constantFrom('a', 'b', 'c.txt', 'd');
    const node = fc.oneof(
      fc.record({ kind: fc.constant('file' as const), size: fc.integer({ min: 0, max: 3000 }), mode: fc.constantFrom(0o600, 0o644, 0o755, 0o400) }),
      fc.record({ kind: fc.constant('link' as const), target: fc.constantFrom('a', '../x', '/etc', 'b/c.txt') }),
      fc.record({ kind: fc.constant('dir' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.array(name, { minLength: 1, maxLength: 3 }), node), { maxLength: 8 }), async (items) => {
        await fs.rm(root, { recursive: true, force: true });
        await fs.mkdir(root);
        for (const [segments, item] of items) {
          const abs = path.join(root, ...segments);
          await fs.mkdir(path.dirname(abs), { recursive: true }).catch(() => undefined);
          if (item.kind === 'file') await fs.writeFile(abs, Buffer.alloc(item.size, item.size & 0xff), { mode: item.mode }).catch(() => undefined);
          else if (item.kind === 'link') await fs.symlink(item.target, abs).catch(() => undefined);
          else await fs.mkdir(abs, { recursive: true }).catch(() => undefined);
        }
        for (const [segments] of items) {
          const { sync, promise } = await bothWays(segments.join('/'));
          expect(sync).toEqual(promise);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('readVersionSync reads exactly the version a stat identity names, and nothing else', async () => {
    await writeTree(root, { 'a.txt': { file: 'one' }, 'big.bin': { file: Buffer.alloc(SYNC_READ_MAX_BYTES + 1, 3) } });
    const identity = (await readPostWriteState(nodeFileSystem, root, 'a.txt')).fingerprint;
    expect(readVersionSync(nodeFileSystem, root, 'a.txt', identity)).toEqual(await readDiskState(nodeFileSystem, root, 'a.txt'));
    expect(readVersionSync(asyncOnly, root, 'a.txt', identity)).toBe('unknown');
    const bigIdentity = (await readPostWriteState(nodeFileSystem, root, 'big.bin')).fingerprint;
    expect(readVersionSync(nodeFileSystem, root, 'big.bin', bigIdentity)).toBe('unknown');
    // Another size, so the identity differs even where timestamps are coarse.
    await fs.writeFile(path.join(root, 'a.txt'), 'two!');
    expect(readVersionSync(nodeFileSystem, root, 'a.txt', identity)).toBe('changed');
    await fs.rm(path.join(root, 'a.txt'));
    expect(readVersionSync(nodeFileSystem, root, 'a.txt', identity)).toBe('changed');
  });
});
