import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeWatchers, useWatchers } from '../../src/capture/watchers.js';
import { startPrivateWatchman, type PrivateWatchman } from '../helpers/watchman.js';
import { losingFactory, runSteps, steps, type RunCounts } from './watched-pictures.js';

// The watcher's property at quick counts (the fault campaign runs it at large ones,
// test/faults/watcher.test.ts): every watcher-backed picture equals a full sweep of the same moment.

let watchman: PrivateWatchman;
beforeAll(async () => {
  watchman = await startPrivateWatchman();
  await useWatchers(losingFactory(watchman.sockname));
});
afterAll(async () => {
  await useWatchers(undefined);
  await closeWatchers();
  await watchman?.stop();
});

describe('pictures from a watcher', () => {
  it('equal a full sweep of the same moment after random changes by other processes', async () => {
    const totals: RunCounts = { same: 0, changes: 0, sweeps: 0, pictures: 0 };
    await fc.assert(fc.asyncProperty(steps(6), (plan) => runSteps(plan, totals)), { seed: 2028, numRuns: 6, endOnFailure: true });
    console.log(JSON.stringify(totals));
    // The property held through the watcher, not around it: most pictures were answered from it.
    expect(totals.changes + totals.same).toBeGreaterThan(totals.pictures / 2);
  }, 120_000);
});
