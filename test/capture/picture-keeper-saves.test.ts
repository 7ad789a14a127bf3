import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { pictureDelta } from '../../src/capture/picture-persist.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { settleFolders } from './helpers.js';

// What a picture saves before it is handed back (issue #28: a first picture of 250,000 files):
// the picture base a call baseline will be a delta of, its stat cache head and the scan index.
// Saved after the picture was handed back instead (tried), the scan index raised the server's peak
// at 250,000 files from 220–225 to 248–250 MiB, the goal 250 (bench/RESULTS.md).

describe('what a picture saves before it is handed back', () => {
  it('a picture that writes a new base has written it, the stat cache head and the scan index; the delta of that picture against the base is empty', async () => {
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
    expect(written).toContain('scan-index');
    expect(await opened.readState('scan-index')).toBeDefined();
    // The call baseline's delta against the base just written from this very picture: nothing.
    expect(keeper.deltaOf(picture.records).records).toEqual([]);
    expect(pictureDelta(picture.records, keeper.base)).toEqual({ base: keeper.base?.ref, records: [], removed: [] });

    await keeper.close();
  });
});
