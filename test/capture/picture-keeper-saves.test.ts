import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { pictureDelta } from '../../src/capture/picture-persist.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { settleFolders } from './helpers.js';

// What a picture waits for before it is handed back (issue #28: a first picture of 250,000 files):
// the picture base a call baseline will be a delta of, and its stat cache head; not the scan
// index, a speed cache for the next process, which the next save writes.

describe('what a picture saves before it is handed back', () => {
  it('a picture that writes a new base has written it and the stat cache head, the scan index only with the next save', async () => {
    const base = await tempFolder('turnback-saves-');
    const root = path.join(base, 'project');
    // Past the files a base is rewritten for (256), so the first picture writes one.
    const tree: Record<string, string> = {};
    for (let i = 0; i < 400; i++) tree[`d${i % 9}/f${i}.txt`] = `file ${i}\n`;
    await writeTree(root, tree);
    // Settled listings: what a scan index keeps.
    settleFolders(root);
    const opened = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: root });
    const written: string[] = [];
    const store = new Proxy(opened, {
      get(target, property, receiver) {
        if (property === 'writeState') {
          return async (name: string, ...rest: unknown[]) => {
            await (target.writeState as (...args: unknown[]) => Promise<void>).call(target, name, ...rest);
            written.push(name);
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const keeper = new PictureKeeper({ store, projectRoot: root, coverage: resolveCoverage({}), fs: nodeFileSystem, liveGenerations: () => [] });

    const picture = await keeper.take({});
    expect(picture.records.size).toBe(400);
    expect(keeper.base?.ref.count).toBe(400);
    const generation = keeper.base?.ref.generation as string;
    expect(written.filter((name) => name.startsWith(`pic-${generation}-`))).toHaveLength(keeper.base?.ref.chunks as number);
    expect(written).toContain('stat-cache');
    expect(written).not.toContain('scan-index');
    // The call baseline's delta against the base just written from this very picture: nothing.
    expect(keeper.deltaOf(picture.records).records).toEqual([]);
    expect(pictureDelta(picture.records, keeper.base)).toEqual({ base: keeper.base?.ref, records: [], removed: [] });

    await keeper.saveNow();
    expect(written).toContain('scan-index');
    expect(await opened.readState('scan-index')).toBeDefined();
    await keeper.close();
  });
});
