import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { faultFs } from '../helpers/fault-fs.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

describe('verify checks every object a state document names', () => {
  it('a pre-image only an open call baseline and the stat cache name, cut from the store, is a missing-object problem', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'the only copy of this text is the call baseline', 'b.txt': 'b' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await observer.callBegin('open-call');
    // Everything the picture copied went to this process's pack: remove the packs (and indexes).
    const packs = path.join(storeDir, 'objects', 'packs');
    await observer.store.close();
    for (const name of await fs.readdir(packs)) await fs.rm(path.join(packs, name));
    const report = await observer.store.verify();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'missing-object', detail: expect.stringMatching(/named by (call-|stat-cache|pic-)/) })]));
    expect(report.steps.find((step) => step.name === 'references')?.problems).toBeGreaterThan(0);
    await observer.close().catch(() => undefined);
  });

  it('a checkpoint pruned by another process while verify runs is not reported as missing objects; one that stays is', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'big.bin': 'x'.repeat(300_000), 'other.bin': 'y'.repeat(300_000) });
    const agent = await openObserver(project, storeDir);
    const pruned = await agent.beginTurn();
    await agent.beforeWrite('big.bin');
    await fs.writeFile(path.join(project, 'big.bin'), 'agent');
    await agent.afterWrite('big.bin');
    const kept = await agent.beginTurn();
    await agent.beforeWrite('other.bin');
    await fs.writeFile(path.join(project, 'other.bin'), 'agent');
    await agent.afterWrite('other.bin');
    await agent.close();
    const objectOf = async (id: CheckpointId) => {
      const entry = (await agent.store.manifest(id)).entries[0];
      if (entry?.before.type !== 'file') throw new Error('expected a file pre-image');
      return path.join(storeDir, 'objects', 'v1', entry.before.object.slice(0, 2), entry.before.object);
    };
    const prunedObject = await objectOf(pruned);
    const keptObject = await objectOf(kept);
    // After verify has read the checkpoints and before it lists objects, a prune elsewhere removes
    // the first turn and its object; the second turn's object is lost for real.
    let raced = false;
    const racing = faultFs(nodeFileSystem, {
      before: async (op, args) => {
        if (raced || op !== 'readdir' || !String(args[0]).includes(path.join('objects', 'v1'))) return;
        raced = true;
        await fs.rm(path.join(storeDir, 'checkpoints', `${pruned as string}.json`));
        await fs.rm(prunedObject);
        await fs.rm(keptObject);
      },
    });
    const store = await CheckpointStore.open(storeDir, { projectRoot: project, fs: racing.fs });
    const report = await store.verify();
    expect(raced).toBe(true);
    expect(report.problems.filter((problem) => problem.kind === 'missing-object').map((problem) => problem.id)).toEqual([kept]);
    await store.close();
  });
});
