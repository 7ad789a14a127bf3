import { describe, it } from 'vitest';
import { openStore } from '../../src/admin.js';
import { sandbox } from '../session/helpers.js';
import { runChild, Tally, trials } from './campaign.js';

// Two and three processes on one store at once, each a seeded mix of turns, restores of its own
// last turn (checked byte for byte), listings, verifies, prunes and drops of its own session,
// with file contents drawn from one pool so captures dedupe against each other's objects. Every
// operation is one trial; at the end the store must verify.
async function campaign(name: string, processes: number, opsEach: number, seedFallback: number): Promise<void> {
  const tally = new Tally(name, seedFallback);
  const { project, storeDir } = await sandbox();
  const runs = await Promise.all(
    Array.from({ length: processes }, (_, i) => runChild({ kind: 'mixed', project, storeDir, name: `p${i}`, ops: opsEach, seed: tally.random.int(1, 2 ** 31) })),
  );
  let busy = 0;
  let pruned = 0;
  for (const [i, run] of runs.entries()) {
    for (const line of run.lines) {
      if (typeof line.op !== 'string') continue;
      if (line.busy === true) busy += 1;
      if (line.pruned === true) pruned += 1;
      await tally.trial(`process ${i} ${line.op}`, async () => {
        if (typeof line.broke === 'string') throw new Error(line.broke);
      });
    }
    await tally.trial(`process ${i} exit`, async () => {
      if (run.code !== 0) throw new Error(`exited ${String(run.code)} ${run.signal ?? ''}: ${run.stderr.slice(0, 400)}`);
    });
  }
  await tally.trial('the store verifies after all of them', async () => {
    const store = await openStore(storeDir, { projectRoot: project });
    try {
      const report = await store.verify();
      if (!report.ok) throw new Error(JSON.stringify(report.problems.slice(0, 3)));
    } finally {
      await store.close();
    }
  });
  tally.note = `${busy} answered store busy, ${pruned} restores found their turn pruned by retain`;
  tally.finish();
}

describe('fault campaign: processes sharing one store', () => {
  it('two processes', () => campaign('2 processes, mixed operations', 2, trials(500, 30), 1201));
  it('three processes', () => campaign('3 processes, mixed operations', 3, trials(350, 20), 1202));
});
