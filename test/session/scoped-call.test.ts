import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';

// A call scoped to the paths a write tool names (callBegin's `paths`): its pictures hold those
// paths alone, so it costs reading them, not two sweeps — and it must attribute and undo them as
// exactly as a whole-tree call, in one process and across two.

describe('a call scoped to named paths', () => {
  it('attributes exactly what the call did to the named paths, and nothing else', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'gone.txt': 'g\n' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn({ label: 'edit' });
    await observer.callBegin('w1', { paths: ['a.txt', path.join(project, 'new.txt'), 'gone.txt'] });
    await fs.writeFile(path.join(project, 'a.txt'), 'A\n');
    await fs.writeFile(path.join(project, 'new.txt'), 'n\n');
    await fs.rm(path.join(project, 'gone.txt'));
    await fs.writeFile(path.join(project, 'b.txt'), 'B (outside the scope)\n');
    const attribution = await observer.callEnd('w1');
    expect(attribution.changes.map((c) => [c.path, c.kind])).toEqual([
      ['a.txt', 'changed'],
      ['gone.txt', 'deleted'],
      ['new.txt', 'created'],
    ]);
    expect(attribution.partial).toBe(false);
    const report = await observer.restoreCall(observer.currentTurn as never, attribution);
    expect(report.failed).toEqual([]);
    expect(await listing(project)).toEqual({
      'a.txt': `file:644:${Buffer.from('a\n').toString('base64')}`,
      'b.txt': `file:644:${Buffer.from('B (outside the scope)\n').toString('base64')}`,
      'gone.txt': `file:644:${Buffer.from('g\n').toString('base64')}`,
    });
    await observer.close();
  });

  it('ends in another process: the scoped baseline is read back and the call lands in a checkpoint of its own, which a restore undoes', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'src/x.ts': 'one\n', 'keep.txt': 'k\n' });
    const before = await listing(project);
    const first = await openObserver(project, storeDir, { sessionId: 'agent-s1' });
    await first.callBegin('toolu_1', { paths: ['src/x.ts'], command: 'Edit src/x.ts' });
    await first.close();
    await fs.writeFile(path.join(project, 'src/x.ts'), 'two\n');

    const second = await openObserver(project, storeDir, { sessionId: 'agent-s1' });
    const attribution = await second.callEnd('toolu_1');
    expect(attribution.changes.map((c) => [c.path, c.kind])).toEqual([['src/x.ts', 'changed']]);
    const calls = (await second.store.list()).filter((m) => m.kind === 'call');
    expect(calls.map((m) => m.label)).toEqual(['Edit src/x.ts']);
    const report = await second.restore(calls[0]!.id, { created: 'delete' });
    expect(report.failed).toEqual([]);
    expect(await listing(project)).toEqual(before);
    await second.close();
  });

  it('refuses a path outside the project, an empty list or a non-string before anything is written', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    const observer = await openObserver(project, storeDir);
    for (const paths of [[path.join(base, 'elsewhere.txt')], ['../up.txt'], [], [7]] as unknown as string[][]) {
      const error = await observer.callBegin('bad', { paths }).catch((e: unknown) => e);
      expect(isCheckpointError(error)).toBe(true);
    }
    expect(observer.currentTurn).toBeUndefined();
    expect(await observer.store.list()).toEqual([]);
    await observer.close();
  });

  it('reports a named folder as a gap instead of picturing it', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'dir/a.txt': 'a\n' });
    const observer = await openObserver(project, storeDir);
    const begin = await observer.callBegin('w', { paths: ['dir'] });
    expect(begin.partial).toBe(true);
    expect(begin.gaps.map((g) => g.path)).toEqual(['dir']);
    await observer.callEnd('w');
    await observer.close();
  });
});
