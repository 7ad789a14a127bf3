import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { CheckpointStore } from '../../src/store/store.js';
import { sandbox } from '../session/helpers.js';

async function gone(store: CheckpointStore, id: string): Promise<{ message: string; found?: string }> {
  const error = await store.manifest(id).catch((e: unknown) => e);
  expect(isCheckpointError(error, 'UNKNOWN_CHECKPOINT')).toBe(true);
  return error as { message: string; found?: string };
}

describe('an id that is not in the store says why: never existed, pruned by retain, cleared, dropped', () => {
  it('tells the four apart, by full id and by the short id list shows', async () => {
    const { base, project } = await sandbox();
    const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: project });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const writer = await store.openCheckpoint({ kind: 'turn', label: `t${i}` });
      await writer.append({ op: 'before', path: `f${i}.txt`, state: { type: 'absent' } });
      ids.push((await writer.seal()).id);
    }
    const report = await store.prune({ retain: 3 });
    expect(report.cleared).toEqual([{ id: ids[0], reason: 'retain' }]);
    expect(await gone(store, ids[0] as string)).toMatchObject({ found: 'retain', message: expect.stringMatching(/was pruned on .*`retain`/) });
    await store.dropCheckpoint(ids[1] as string);
    expect(await gone(store, ids[1] as string)).toMatchObject({ found: 'dropped', message: expect.stringMatching(/was dropped by its session/) });
    const never = '1700000000000-0000-abcdef01';
    expect(await gone(store, never)).toMatchObject({ found: 'never-existed', message: `no checkpoint ${never} in this store (it never existed here)` });
    expect((await store.removal((ids[0] as string).slice(-8)))?.reason).toBe('retain');
    expect(await store.removal('abcdef01')).toBeUndefined();
    // keep_days: everything older than 0 days goes.
    const later = await store.prune({ retain: 100, keepDays: 0 });
    expect(later.cleared.map((c) => c.reason)).toEqual(['keep-days', 'keep-days']);
    expect(await gone(store, ids[3] as string)).toMatchObject({ found: 'keep-days', message: expect.stringMatching(/older than `keep_days`/) });
    await store.close();
  });
});
