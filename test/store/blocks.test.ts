import { readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { takePicture, type PictureStore } from '../../src/capture/picture.js';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { BLOCK_MEMBER_MAX_BYTES, loadPackHasher } from '../../src/store/pack-format.js';
import { PendingBlocks } from '../../src/store/pending-blocks.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { openStore, storedObject, storePerTest, type Sandbox } from './helpers.js';

// Layout 3's blocks: a batch's small objects written together as one compressed pack record, on
// disk once the batch ends; nobody is handed a key that is not on disk.

let box: Sandbox;
let store: CheckpointStore;
const fixture = storePerTest();
beforeAll(async () => {
  await Promise.all([loadHasher(), loadPackHasher()]);
});
beforeEach(async () => {
  ({ box, store } = fixture);
  await store.loadObjects(); // the synchronous puts work from then on
});

/** Source-like text, different for every seed. */
const textFor = (seed: number, lines = 40): Buffer => Buffer.from(Array.from({ length: lines }, (_, i) => `const v${seed}_${i} = f(${i * seed});\n`).join(''));

const packsDir = (): string => path.join(store.root, 'objects', 'packs');
const packBytes = async (): Promise<number> => {
  let total = 0;
  for (const name of await readdir(packsDir())) if (name.endsWith('.pack')) total += (await readFile(path.join(packsDir(), name))).length;
  return total;
};

describe('blocks', () => {
  test("a batch's objects are written as one block when it ends, read back from it, and from its index by a new store", async () => {
    const batch = store.openBatch();
    const texts = Array.from({ length: 30 }, (_, i) => textFor(i));
    const refs = texts.map((bytes) => store.putHashedSync(bytes, contentHash(bytes), { batch }));
    expect(await packBytes()).toBe(0); // nothing on disk yet: not even a pack
    expect([...(await store.endBatch(batch)).keys()]).toEqual([]);
    const where = await storedObject(store, refs[0]?.object as string);
    expect(where.block).toEqual({ encoding: 2, members: 30 });
    const raw = texts.reduce((sum, bytes) => sum + bytes.length, 0);
    expect(where.recordLength).toBeLessThan(raw / 4);
    for (const [i, ref] of refs.entries()) expect(Buffer.compare(await store.readObject(ref?.object as string), texts[i] as Buffer)).toBe(0);
    await store.close(); // sealed: a version-2 index lists the block, not its members
    const idx = (await readdir(packsDir())).find((name) => name.endsWith('.idx')) as string;
    const tableLength = where.storedOffset - where.recordOffset - 15;
    expect((await readFile(path.join(packsDir(), idx), 'latin1')).split('\n')).toContain(`@ ${where.recordOffset} ${where.recordLength} 30 ${tableLength}`);
    const again = await openStore(box);
    try {
      for (const [i, ref] of refs.entries()) expect(Buffer.compare(await again.readObject(ref?.object as string), texts[i] as Buffer)).toBe(0);
      expect((await again.verify()).problems).toEqual([]);
    } finally {
      await again.close();
    }
  });

  test('a key still waiting is handed to no one else before it is on disk: a plain put writes it, a read waits for it, a copy check refuses it', async () => {
    const batch = store.openBatch();
    const bytes = textFor(7);
    const ref = store.putHashedSync(bytes, contentHash(bytes), { batch });
    expect(store.copyCheck()(ref?.object as string)).toBe(false);
    // Another process (a second store instance) sees it on disk as soon as a plain put returns it.
    expect((await store.putBytes(bytes)).object).toBe(ref?.object);
    const other = await openStore(box);
    try {
      expect(await other.hasObject(ref?.object as string)).toBe(true);
    } finally {
      await other.close();
    }
    const later = textFor(8);
    const waiting = store.putHashedSync(later, contentHash(later), { batch });
    expect(Buffer.compare(await store.readObject(waiting?.object as string), later)).toBe(0);
    expect((await store.endBatch(batch)).size).toBe(0);
    expect(store.copyCheck()(waiting?.object as string)).toBe(true);
  });

  test('the same bytes twice in a batch are one member; an object over 4 MiB is a loose file, one under it a member', async () => {
    const batch = store.openBatch();
    const bytes = textFor(3);
    const a = store.putHashedSync(bytes, contentHash(bytes), { batch });
    const b = store.putHashedSync(Buffer.from(bytes), contentHash(bytes), { batch });
    const medium = Buffer.from('a medium object of a picture\n'.repeat(20_000)); // 580 KB
    const big = Buffer.alloc(BLOCK_MEMBER_MAX_BYTES + 1, 'x');
    const m = await store.putHashed(medium, contentHash(medium), { batch });
    const g = await store.putHashed(big, contentHash(big), { batch });
    await store.endBatch(batch);
    expect(a?.object).toBe(b?.object);
    expect((await storedObject(store, a?.object as string)).block?.members).toBe(2);
    expect((await storedObject(store, m.object)).block?.members).toBe(2);
    expect((await storedObject(store, g.object)).block).toBeUndefined();
    expect((await storedObject(store, g.object)).file).toContain(`${path.sep}v1${path.sep}`);
    for (const [ref, expected] of [[m, medium], [g, big]] as const) expect(Buffer.compare(await store.readObject(ref.object), expected)).toBe(0);
    // The medium object put again outside a batch finds the block's copy: no loose file.
    expect((await store.putBytes(medium)).object).toBe(m.object);
    expect((await store.listObjects()).filter((info) => info.key === m.object && info.pack === undefined)).toEqual([]);
  });

  test('a large object outside a batch never takes the key of a damaged block copy: it gets the next one', async () => {
    const batch = store.openBatch();
    const bytes = Buffer.from('the bytes a picture put in a block\n'.repeat(10_000));
    const inBlock = await store.putHashed(bytes, contentHash(bytes), { batch });
    await store.endBatch(batch);
    await store.close();
    const where = await storedObject(store, inBlock.object);
    const pack = await readFile(where.file);
    pack[where.storedOffset + 20] = (pack[where.storedOffset + 20] as number) ^ 0x08;
    await writeFile(where.file, pack);
    const again = await openStore(box);
    try {
      const put = await again.putBytes(bytes);
      expect(put.object).toBe(`${inBlock.object}.1`);
      expect(Buffer.compare(await again.readObject(put.object), bytes)).toBe(0);
      await expect(again.readObject(inBlock.object)).rejects.toSatisfy((e) => isCheckpointError(e, 'INTEGRITY'));
    } finally {
      await again.close();
    }
  });

  test("a damaged block copy of a large object does not hide the key's good loose copy", async () => {
    const bytes = Buffer.from('a large object, loose first\n'.repeat(12_000));
    const loose = await store.putBytes(bytes);
    const file = (await storedObject(store, loose.object)).file;
    const old = new Date(Date.now() - 20 * 60_000);
    await utimes(file, old, old); // an old loose copy: the picture keeps a fresh one in its block
    const batch = store.openBatch();
    expect((await store.putHashed(bytes, contentHash(bytes), { batch })).object).toBe(loose.object);
    await store.endBatch(batch);
    await store.close();
    const packed = (await store.listObjects()).find((info) => info.key === loose.object && info.pack !== undefined);
    if (packed?.offset === undefined) throw new Error('the picture kept no block copy');
    const pack = await readFile(packed.path);
    pack[packed.offset + 40] = (pack[packed.offset + 40] as number) ^ 0x40; // a bit of the block's member table
    await writeFile(packed.path, pack);
    const again = await openStore(box);
    try {
      expect(Buffer.compare(await again.readObject(loose.object), bytes)).toBe(0);
    } finally {
      await again.close();
    }
  });

  test('a damaged block: every member reads as INTEGRITY, never wrong bytes; verify names it; a copy check refuses each', async () => {
    const batch = store.openBatch();
    const texts = Array.from({ length: 5 }, (_, i) => textFor(100 + i));
    const refs = texts.map((bytes) => store.putHashedSync(bytes, contentHash(bytes), { batch })?.object as string);
    await store.endBatch(batch);
    await store.close();
    const where = await storedObject(store, refs[2] as string);
    const pack = await readFile(where.file);
    pack[where.storedOffset + 10] = (pack[where.storedOffset + 10] as number) ^ 0x01;
    await writeFile(where.file, pack);
    const reopened = await openStore(box);
    try {
      for (const key of refs) {
        const error = await reopened.readObject(key).catch((e: unknown) => e);
        expect(isCheckpointError(error, 'INTEGRITY')).toBe(true);
      }
      await reopened.loadObjects();
      const check = reopened.copyCheck();
      for (const key of refs) expect(check(key)).toBe(false);
      const report = await reopened.verify();
      expect(report.problems.some((problem) => problem.kind === 'corrupt-object' && /block checksum/.test(problem.detail))).toBe(true);
    } finally {
      await reopened.close();
    }
  });

  test('a block that cannot be written is named to every batch that was handed one of its keys', async () => {
    const failure = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    const pending = new PendingBlocks(() => {
      throw failure;
    });
    const first = { failed: new Map<string, unknown>() };
    const second = { failed: new Map<string, unknown>() };
    pending.add('0123456789abcdef-3', Buffer.from('abc'), first);
    pending.share('0123456789abcdef-3', second);
    pending.add('fedcba9876543210-3', Buffer.from('def'), second);
    expect(pending.state('0123456789abcdef-3')).toBe('building');
    await pending.settle();
    expect(pending.idle).toBe(true);
    expect([...first.failed]).toEqual([['0123456789abcdef-3', failure]]);
    expect([...second.failed.keys()].sort()).toEqual(['0123456789abcdef-3', 'fedcba9876543210-3']);
  });

  test("a picture records a file whose copy could not be written as not copied, with the store's reason", async () => {
    await writeFile(path.join(box.project, 'a.txt'), 'a');
    await writeFile(path.join(box.project, 'b.txt'), 'b');
    let copies = 0;
    const fake: PictureStore = {
      putFile: async () => ({ object: `${'0'.repeat(15)}${copies++}-1`, hash: `${'0'.repeat(15)}${copies}`, size: 1, mode: 0o644 }),
      batch: () => ({
        putFile: async (file) => ({ object: `${path.basename(file) === 'a.txt' ? 'a' : 'b'}${'0'.repeat(15)}-1`, hash: `${path.basename(file) === 'a.txt' ? 'a' : 'b'}${'0'.repeat(15)}`, size: 1, mode: 0o644 }),
        end: async () => new Map([[`a${'0'.repeat(15)}-1`, Object.assign(new Error('disk full'), { code: 'ENOSPC' })]]),
      }),
    };
    const picture = await takePicture({ store: fake, projectRoot: box.project, coverage: resolveCoverage() });
    expect(picture.records.get('a.txt')?.state).toMatchObject({ type: 'uncopied', reason: 'store-full' });
    expect(picture.records.get('b.txt')?.state).toMatchObject({ type: 'file', object: `b${'0'.repeat(15)}-1` });
    expect(picture.gaps.map((gap) => gap.path)).toEqual(['a.txt']);
    expect(picture.copied).toBe(1);
  });
});
