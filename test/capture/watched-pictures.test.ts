import { closeSync, openSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { takePicture } from '../../src/capture/picture.js';
import { pictureStoreOf } from '../../src/capture/stable-read.js';
import { verifyWatched } from '../../src/capture/watch-verify.js';
import { watcherReady, watchReport } from '../../src/capture/watchers.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { describePicture, losing, watchmanForTheseTests, type LosingWatcher } from './watched-pictures.js';

// The watcher where it cannot vouch (a real kernel queue overflow) or vouches wrongly (the
// verification sweep). The property itself is test/faults/watcher.test.ts (quick counts in `npm test`).

const watchman = watchmanForTheseTests();

describe('when the watcher cannot vouch, or vouches wrongly', () => {
  async function project(): Promise<{ root: string; keeper: PictureKeeper; store: CheckpointStore; reference: ReturnType<typeof pictureStoreOf> }> {
    const base = await tempFolder('turnback-watched-');
    const root = path.join(base, 'project');
    for (let i = 0; i < 20; i++) await writeTree(root, { [`src/f${i}.txt`]: `file ${i}\n`, [`docs/d${i}.md`]: `doc ${i}\n` });
    const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: root });
    const keeper = new PictureKeeper({ store, projectRoot: root, coverage: resolveCoverage(), fs: nodeFileSystem, liveGenerations: () => [] });
    await watcherReady(root);
    return { root, keeper, store, reference: pictureStoreOf(store, nodeFileSystem) };
  }

  it('a real kernel queue overflow (the watcher stopped while 20,000 files are made) is not vouched for: the picture is a full sweep, and the next one vouches again', async () => {
    const { root, keeper, store, reference } = await project();
    await keeper.take({});
    const first = await keeper.take({});
    expect(keeper.watched.counts.same).toBe(1);
    // More new names than the kernel queues (max_queued_events, 16,384 here) while watchman cannot read.
    process.kill(watchman().pid, 'SIGSTOP');
    try {
      for (let i = 0; i < 20_000; i++) closeSync(openSync(path.join(root, i % 2 === 0 ? 'src' : 'docs', `burst-${i}`), 'w'));
    } finally {
      process.kill(watchman().pid, 'SIGCONT');
    }
    const sweeps = keeper.watched.counts.sweeps;
    const after = await keeper.take({});
    expect(keeper.watched.counts.sweeps).toBe(sweeps + 1);
    expect(watchReport(root)).toMatchObject({ state: 'not-vouching', reason: 'overflow' });
    expect(after.records.size).toBe(first.records.size + 20_000);
    const sweep = await takePicture({ store: reference, projectRoot: root, coverage: resolveCoverage(), cache: { records: first.records }, exclude: [store.root] });
    expect(describePicture(after)).toEqual(describePicture(sweep));
    await writeFile(path.join(root, 'src/f1.txt'), 'changed after the overflow\n');
    const vouched = await keeper.take({});
    expect(keeper.watched.counts.changes).toBe(1);
    expect(watchReport(root)).toMatchObject({ state: 'watching' });
    expect(vouched.records.get('src/f1.txt')?.size).toBe('changed after the overflow\n'.length);
    await keeper.close();
    await store.close();
  }, 120_000);

  it('the verification sweep counts a change the watcher did not report, status shows it, and the next picture is a full sweep that sees it', async () => {
    const { root, keeper, store } = await project();
    await keeper.take({});
    const liar = losing.get(root) as LosingWatcher;
    liar.hide.add('docs/d2.md');
    await writeFile(path.join(root, 'docs/d2.md'), 'unreported\n');
    await writeFile(path.join(root, 'src/f3.txt'), 'reported\n');
    const missed = await keeper.take({});
    // The lie is believed (a folder no change names is not looked at): that is what the sweep is for.
    expect(missed.records.get('docs/d2.md')?.size).toBe('doc 2\n'.length);
    expect(missed.records.get('src/f3.txt')?.size).toBe('reported\n'.length);
    const found = await verifyWatched({ root, coverage: resolveCoverage(), exclude: [store.root], watcher: liar, watched: keeper.watched });
    expect(found).toEqual(['docs/d2.md']);
    expect(watchReport(root)).toMatchObject({ verified: 1, disagreements: 1, lastDisagreement: { path: 'docs/d2.md' } });
    liar.hide.clear();
    const sweeps = keeper.watched.counts.sweeps;
    const next = await keeper.take({});
    expect(keeper.watched.counts.sweeps).toBe(sweeps + 1);
    expect(next.records.get('docs/d2.md')?.size).toBe('unreported\n'.length);
    // A sweep that finds nothing wrong counts as verified, with no disagreement more.
    expect(await verifyWatched({ root, coverage: resolveCoverage(), exclude: [store.root], watcher: liar, watched: keeper.watched })).toEqual([]);
    expect(watchReport(root)).toMatchObject({ verified: 2, disagreements: 1 });
    await keeper.close();
    await store.close();
  });
});
