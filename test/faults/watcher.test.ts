import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runSteps, steps, watchmanForTheseTests, type RunCounts } from '../capture/watched-pictures.js';
import { FULL, Tally, trials } from './campaign.js';

// The watcher's property (issue #28), the test that lets anyone trust it: random changes made by
// other processes between pictures — files and whole folders created, deleted, renamed within,
// into and out of the tree, one name made and removed again and again, modes, symlinks,
// `.gitignore` rules, same-size writes with the mtime put back, and the watcher losing its events
// (an overflow, through the interface; test/capture/watched-pictures.test.ts makes a real one), a
// stored copy damaged in place — and every watcher-backed picture equal to a full sweep of the
// same moment, every copy equal to the bytes on disk and reading back as them. Quick counts in `npm test`, large ones in `npm run faults`.

watchmanForTheseTests();

/** One property run of `runs` plans (`git`: the committed project's variant), its outcome in `tally` and counts in `totals`. */
async function campaign(tally: Tally, totals: RunCounts, options: { git: boolean; runs: number }): Promise<void> {
  await fc
    .assert(
      fc.asyncProperty(steps(FULL ? 12 : 6, options.git), async (plan) => {
        tally.tried++;
        await runSteps(plan, totals, { git: options.git });
        tally.held++;
      }),
      { seed: tally.random.seed, numRuns: options.runs, endOnFailure: true },
    )
    .catch((error: unknown) => {
      tally.broke++;
      // fast-check's message names the counterexample; its cause is the assertion that failed.
      const cause = error instanceof Error && error.cause instanceof Error ? `\n${error.cause.message.slice(0, 6000)}` : '';
      tally.failures.push(error instanceof Error ? `${error.message.slice(0, 4000)}${cause}` : String(error));
    });
}

describe('fault campaign: the watcher', () => {
  it('every watcher-backed picture equals a full sweep of the same moment, whatever other processes change in between', async () => {
    const tally = new Tally('watcher-backed pictures', 2028);
    const totals: RunCounts = { same: 0, changes: 0, sweeps: 0, pictures: 0 };
    await campaign(tally, totals, { git: false, runs: trials(150, 6) });
    tally.note = `${totals.pictures} pictures: ${totals.changes} from a change set (${totals.carried ?? 0} carrying the last map, ${totals.takenWhole ?? 0} folders taken whole), ${totals.same} unchanged, ${totals.sweeps} full sweeps`;
    tally.finish();
    // The property held through the watcher, not around it: most pictures were answered from it.
    expect(totals.changes + totals.same).toBeGreaterThan(totals.pictures / 2);
    // And the change-set walks carried the last map (folders no change named taken without a look at a record).
    expect(totals.carried ?? 0).toBeGreaterThan(0);
    // And subtrees no change lay under were taken whole, unvisited (subtree-carry.ts).
    expect(totals.takenWhole ?? 0).toBeGreaterThan(0);
  }, 1_800_000);

  it('in a committed project whose clean files rest on git, with git changing its index between pictures, every watcher-backed picture still equals a full sweep', async () => {
    const tally = new Tally('watcher-backed pictures of a committed project', 2029);
    const totals: RunCounts = { same: 0, changes: 0, sweeps: 0, pictures: 0 };
    await campaign(tally, totals, { git: true, runs: trials(100, 5) });
    tally.note = `${totals.pictures} pictures: ${totals.changes} from a change set (${totals.carried ?? 0} carrying the last map, ${totals.takenWhole ?? 0} folders taken whole), ${totals.same} unchanged, ${totals.sweeps} full sweeps; ${totals.onGit ?? 0} records resting on git`;
    tally.finish();
    expect(totals.changes + totals.same).toBeGreaterThan(totals.pictures / 2);
    expect(totals.carried ?? 0).toBeGreaterThan(0);
    // The variant tested what it is for: records resting on git's blobs, carried by change-set walks.
    expect(totals.onGit ?? 0).toBeGreaterThan(0);
    expect(totals.takenWhole ?? 0).toBeGreaterThan(0);
  }, 1_800_000);
});
