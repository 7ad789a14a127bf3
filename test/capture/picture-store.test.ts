import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { takePicture, type PictureStore } from '../../src/capture/picture.js';
import { loadPictureCache, savePictureCache } from '../../src/capture/picture-persist.js';
import { pictureStoreOf, storeFile } from '../../src/capture/stable-read.js';
import { CheckpointStore } from '../../src/store/store.js';
import { backdate, makeTree, tempDir } from './helpers.js';

let root: string;
beforeEach(async () => {
  root = await tempDir();
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('takePicture with the real CheckpointStore', () => {
  it('copies into the store, skips excluded paths, and reuses the persisted cache', async () => {
    // The project is a folder of root; the store sits beside it (a store inside the project is refused).
    await makeTree(root, { 'p/a.txt': 'alpha', 'p/src/b.ts': 'beta', 'p/.env': 'S=1', 'p/scratch/x.tmp': 'scratch' });
    for (const f of ['p/a.txt', 'p/src/b.ts']) await backdate(root, f);
    const storeRoot = path.join(root, 'store');
    const excluded = path.join(root, 'p', 'scratch');
    const project = path.join(root, 'p');
    const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
    try {
      const coverage = resolveCoverage();
      const first = await takePicture({ store: pictureStoreOf(store), projectRoot: project, coverage, exclude: [excluded] });
      expect([...first.records.keys()].sort()).toEqual(['.env', 'a.txt', 'src/b.ts']);
      expect(first.copied).toBe(2);
      const a = first.records.get('a.txt')?.state;
      if (a?.type !== 'file') throw new Error('expected a stored file');
      expect((await store.readObject(a.object)).toString()).toBe('alpha');
      await savePictureCache(store, 'picture-cache', first);

      let reads = 0;
      const counting: PictureStore = {
        putFile: (p, e) => {
          reads += 1;
          return storeFile(store, p, e);
        },
      };
      const cache = await loadPictureCache(store, 'picture-cache');
      const second = await takePicture({ store: counting, projectRoot: project, coverage, cache, exclude: [excluded] });
      expect(reads).toBe(0);
      expect(second.records.get('a.txt')?.state).toEqual(a);

      await fs.writeFile(path.join(project, 'a.txt'), 'changed');
      const third = await takePicture({ store: counting, projectRoot: project, coverage, cache: second, exclude: [excluded] });
      expect(reads).toBe(1);
      expect(third.records.get('a.txt')?.state).toMatchObject({ type: 'file', size: 7 });
    } finally {
      await store.close();
    }
  });
});
