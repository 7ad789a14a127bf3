import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
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
});
