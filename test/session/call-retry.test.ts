import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';

// A call retried under its id (issue #30): the first before-picture is kept, in one process and
// across processes, and what an earlier attempt left is kept as a snapshot of the call.

describe('a call retried under the same id', () => {
  /** What the snapshot kept for a retried call holds for `file`: the bytes an earlier attempt left. */
  async function keptBetween(observer: CheckpointObserver, callId: string, file: string): Promise<string[]> {
    const kept: string[] = [];
    for (const snapshot of (await observer.listSnapshots(observer.sessionId)).filter((s) => s.scopeId === callId)) {
      const entry = (await observer.store.manifest(snapshot.checkpointId)).entries.find((e) => e.path === file);
      if (entry?.before.type === 'file') kept.push((await observer.store.readObject(entry.before.object)).toString('utf8'));
    }
    return kept;
  }

  it('keeps the first before-picture (a detached call begun twice in one process): undoing the call reaches the original, and v1 is kept', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'original\n', 'b.txt': 'b\n' });
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn({ label: 'retry' });
    await observer.callBegin('c1', { command: 'edit a', detached: true });
    await fs.writeFile(path.join(project, 'a.txt'), 'v1\n');
    await observer.callBegin('c1', { command: 'edit a', detached: true });
    await fs.writeFile(path.join(project, 'a.txt'), 'v2\n');
    const attribution = await observer.callEnd('c1');
    expect(attribution.changes.map((c) => [c.path, c.kind])).toEqual([['a.txt', 'changed']]);
    expect(await keptBetween(observer, 'c1', 'a.txt')).toEqual(['v1\n']);
    const report = await observer.restoreCall(boundary, attribution);
    expect(report.refused).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('original\n');
    await observer.close();
  });

  it('keeps the first before-picture across processes (an agent hook per event): the call and the turn both undo to the original', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'original\n', 'keep.txt': 'k\n' });
    const start = await listing(project);
    const event = async <T>(fn: (o: CheckpointObserver) => Promise<T>): Promise<T> => {
      const observer = await openObserver(project, storeDir, { sessionId: 'agent' });
      try {
        return await fn(observer);
      } finally {
        await observer.close();
      }
    };
    const boundary = await event((o) => o.beginTurn({ label: 'turn' }));
    await event((o) => o.callBegin('toolu_1', { paths: ['a.txt'], detached: true }));
    await fs.writeFile(path.join(project, 'a.txt'), 'v1\n');
    await event((o) => o.callBegin('toolu_1', { paths: ['a.txt'], detached: true }));
    await fs.writeFile(path.join(project, 'a.txt'), 'v2\n');
    const attribution = await event((o) => o.callEnd('toolu_1'));
    expect(attribution.changes).toHaveLength(1);
    expect(attribution.changes[0]?.before).toMatchObject({ type: 'file', size: 'original\n'.length });
    expect(await event((o) => keptBetween(o, 'toolu_1', 'a.txt'))).toEqual(['v1\n']);
    const report = await event((o) => o.restore(boundary));
    expect(report.refused).toEqual([]);
    expect(await listing(project)).toEqual(start);
  });

  it('a tool call snapshot taken twice for one scope restores to the first pre-image, not what the first attempt left', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'original\n' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    const scope = { sessionId: 's1', scopeId: 'tc_retry' };
    const ctx = { projectRoot: project, observer };
    for (const content of ['v1\n', 'v2\n']) {
      await observer.snapshot(scope);
      await observer.withToolCall(scope, () => writeFile(ctx, 'a.txt', content));
    }
    const report = await observer.restoreSnapshot(scope);
    expect(report.refused).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('original\n');
    await observer.close();
  });
});
