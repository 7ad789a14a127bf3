import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { takePicture, type Picture } from '../../src/capture/picture.js';
import { loadPictureCache, savePictureCache } from '../../src/capture/picture-persist.js';
import { pictureStoreOf } from '../../src/capture/stable-read.js';
import { CheckpointStore } from '../../src/store/store.js';
import { backdate, makeTree, tempDir } from '../capture/helpers.js';
import { storedObject } from './helpers.js';

// Issue #27: a picture reuses the record of a file whose stat is unchanged without reading the
// file. When the stored copy behind that record was damaged, the new picture pointed at it, and
// the file could not come back. A picture must never point at a copy it has not seen to be good.

let root: string;
let project: string;
let storeRoot: string;
beforeEach(async () => {
  root = await tempDir('turnback-damaged-');
  project = path.join(root, 'p');
  storeRoot = path.join(root, 'store');
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const SMALL = 'small file, packed: '.repeat(40);
/** Over the 4 MiB a picture's block takes: a loose object. */
const LARGE = Array.from({ length: 150_000 }, (_, i) => `line ${i} of a large loose file\n`).join('');

/**
 * Flips one byte in the middle of `key`'s stored bytes, in place (same inode, same size): of a
 * loose file, of a pack record, or of the block that holds it (then every member of the block).
 */
async function damage(store: CheckpointStore, key: string): Promise<void> {
  const stored = await storedObject(store, key);
  const at = stored.storedOffset + Math.floor(stored.stored.length / 2);
  const handle = await fs.open(stored.file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, at);
    byte[0] = (byte[0] as number) ^ 0x20;
    await handle.write(byte, 0, 1, at);
  } finally {
    await handle.close();
  }
}

function objectOf(picture: Picture, file: string): string {
  const state = picture.records.get(file)?.state;
  if (state?.type !== 'file') throw new Error(`${file} has no stored copy in the picture`);
  return state.object;
}

describe('a damaged stored copy is never reused by a later picture', () => {
  /** A first picture of small.txt and large.txt, then one that copies other.txt, created after it: a block of its own. */
  async function firstPictures(store: CheckpointStore, coverage: ReturnType<typeof resolveCoverage>): Promise<{ first: Picture; withOther: Picture }> {
    const first = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage });
    await makeTree(project, { 'other.txt': 'other' });
    await backdate(project, 'other.txt');
    const withOther = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: first });
    expect(withOther.copied).toBe(1);
    return { first, withOther };
  }

  for (const [kind, file, text] of [
    ['block member', 'small.txt', SMALL],
    ['loose object', 'large.txt', LARGE],
  ] as const) {
    it(`a new picture of the intact file stores it again (${kind}, next process)`, async () => {
      await makeTree(project, { 'small.txt': SMALL, 'large.txt': LARGE });
      for (const name of ['small.txt', 'large.txt']) await backdate(project, name);
      const coverage = resolveCoverage();
      let store = await CheckpointStore.open(storeRoot, { projectRoot: project });
      const { first: taken, withOther: first } = await firstPictures(store, coverage);
      const damagedKey = objectOf(taken, file);
      await savePictureCache(store, 'picture-cache', first);
      await store.close();
      store = await CheckpointStore.open(storeRoot, { projectRoot: project });
      try {
        await damage(store, damagedKey);
        await expect(store.readObject(damagedKey)).rejects.toMatchObject({ code: 'INTEGRITY' });
        const cache = await loadPictureCache(store, 'picture-cache');
        const second = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache });
        const key = objectOf(second, file);
        expect(key).not.toBe(damagedKey);
        expect((await store.readObject(key)).toString()).toBe(text);
        // The untouched file still rests on its first copy: only the damaged one was copied again.
        expect(objectOf(second, 'other.txt')).toBe(objectOf(first, 'other.txt'));
        expect(second.copied).toBe(1);
      } finally {
        await store.close();
      }
    });

    it(`a new picture of the intact file stores it again (${kind}, same process, damage from outside)`, async () => {
      await makeTree(project, { 'small.txt': SMALL, 'large.txt': LARGE });
      for (const name of ['small.txt', 'large.txt']) await backdate(project, name);
      const coverage = resolveCoverage();
      const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
      try {
        const { withOther: first } = await firstPictures(store, coverage);
        // A repeat picture first: what this process wrote and confirmed must not hide what comes next.
        const again = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: first });
        expect(again.copied).toBe(0);
        const damagedKey = objectOf(first, file);
        await damage(store, damagedKey);
        const second = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: again });
        const key = objectOf(second, file);
        expect(key).not.toBe(damagedKey);
        expect((await store.readObject(key)).toString()).toBe(text);
        expect(objectOf(second, 'other.txt')).toBe(objectOf(first, 'other.txt'));
        expect(second.copied).toBe(1);
      } finally {
        await store.close();
      }
    });
  }

  it('a damaged block: every file it held is copied again, none is pointed at; a file in another block keeps its copy', async () => {
    const texts: Record<string, string> = { 'a.txt': `a ${SMALL}`, 'b.txt': `b ${SMALL}`, 'c/d.txt': `d ${SMALL}` };
    await makeTree(project, texts);
    for (const name of Object.keys(texts)) await backdate(project, name);
    const coverage = resolveCoverage();
    const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
    try {
      const { first, withOther } = await firstPictures(store, coverage);
      expect((await storedObject(store, objectOf(first, 'a.txt'))).block?.members).toBe(3);
      await damage(store, objectOf(first, 'b.txt'));
      for (const name of Object.keys(texts)) await expect(store.readObject(objectOf(first, name))).rejects.toMatchObject({ code: 'INTEGRITY' });
      const second = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: withOther });
      expect(second.copied).toBe(3);
      for (const [name, text] of Object.entries(texts)) {
        expect(objectOf(second, name)).not.toBe(objectOf(first, name));
        expect((await store.readObject(objectOf(second, name))).toString()).toBe(text);
      }
      expect(objectOf(second, 'other.txt')).toBe(objectOf(withOther, 'other.txt'));
      const report = await store.verify();
      expect(report.problems.map((problem) => problem.kind)).toContain('corrupt-object');
    } finally {
      await store.close();
    }
  });

  it('a repeat picture of an unchanged tree copies nothing and keeps the same records', async () => {
    await makeTree(project, { 'small.txt': SMALL, 'large.txt': LARGE });
    for (const name of ['small.txt', 'large.txt']) await backdate(project, name);
    const coverage = resolveCoverage();
    const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
    try {
      const first = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage });
      const second = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: first });
      const third = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, cache: second });
      expect([second.copied, third.copied]).toEqual([0, 0]);
      expect(third.records).toBe(first.records);
    } finally {
      await store.close();
    }
  });
});
