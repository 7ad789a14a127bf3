import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFile } from '../../src/tools/reference-tools.js';
import { openObserver, sandbox, writeTree } from './helpers.js';

// Tool-call snapshots (src/session/snapshots.ts): explicit paths captured at once, writes inside
// withToolCall captured into their own scope, the per-session byte cap.

describe('tool-call snapshots', () => {
  it('captures explicit paths now and restores them, deleting paths seen as absent', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'lib.rs': 'fn main() {}', 'other.rs': 'o' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    const scope = { sessionId: 's1', scopeId: 'tc_42' };
    const info = await observer.snapshot({ ...scope, paths: ['lib.rs', 'new.rs', 'other.rs'] });
    expect(info.paths).toEqual(['lib.rs', 'new.rs', 'other.rs']);
    const ctx = { projectRoot: project, observer };
    await observer.withToolCall(scope, async () => {
      await writeFile(ctx, 'lib.rs', 'changed');
      await writeFile(ctx, 'new.rs', 'created');
    });
    // A change the observer never saw has no post-write record: the guard refuses it.
    await fs.writeFile(path.join(project, 'other.rs'), 'edited elsewhere');
    const report = await observer.restoreSnapshot(scope);
    expect(report.restored.map((e) => [e.path, e.action])).toEqual([
      ['lib.rs', 'restore'],
      ['new.rs', 'delete'],
    ]);
    expect(report.refused.map((e) => e.path)).toEqual(['other.rs']);
    expect(await fs.readFile(path.join(project, 'lib.rs'), 'utf8')).toBe('fn main() {}');
    await expect(fs.access(path.join(project, 'new.rs'))).rejects.toThrow();
    expect(await fs.readFile(path.join(project, 'other.rs'), 'utf8')).toBe('edited elsewhere');
  });

  it('auto-captures writes inside the tool call context, without mixing two concurrent calls', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a0', 'b.txt': 'b0' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await observer.snapshot({ sessionId: 's1', scopeId: 'call-a' });
    await observer.snapshot({ sessionId: 's1', scopeId: 'call-b' });
    const ctx = { projectRoot: project, observer };
    const tick = () => new Promise((r) => setImmediate(r));
    await Promise.all([
      observer.withToolCall({ sessionId: 's1', scopeId: 'call-a' }, async () => {
        await tick();
        await writeFile(ctx, 'a.txt', 'a1');
        await tick();
        await writeFile(ctx, 'new-a.txt', 'na');
      }),
      observer.withToolCall({ sessionId: 's1', scopeId: 'call-b' }, async () => {
        await writeFile(ctx, 'b.txt', 'b1');
        await tick();
        await tick();
      }),
    ]);
    const list = await observer.listSnapshots('s1');
    expect(list.map((s) => [s.scopeId, s.paths])).toEqual([
      ['call-a', ['a.txt', 'new-a.txt']],
      ['call-b', ['b.txt']],
    ]);
    const report = await observer.restoreSnapshot({ sessionId: 's1', scopeId: 'call-a' });
    expect(report.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('a0');
    await expect(fs.access(path.join(project, 'new-a.txt'))).rejects.toThrow();
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('b1');
    await observer.dropSnapshot({ sessionId: 's1', scopeId: 'call-b' });
    expect((await observer.listSnapshots('s1')).map((s) => s.scopeId)).toEqual(['call-a']);
  });

  it('evicts the oldest snapshots beyond the per-session byte cap', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'one.bin': Buffer.alloc(4000, 1), 'two.bin': Buffer.alloc(4000, 2), 'three.bin': Buffer.alloc(4000, 3) });
    const observer = await openObserver(project, storeDir, { snapshotCapBytes: 9000 });
    for (const [scopeId, file] of [['t1', 'one.bin'], ['t2', 'two.bin'], ['t3', 'three.bin']] as const) {
      await observer.snapshot({ sessionId: 's', scopeId, paths: [file] });
      await observer.withToolCall({ sessionId: 's', scopeId }, async () => undefined);
    }
    expect((await observer.listSnapshots('s')).map((s) => s.scopeId)).toEqual(['t2', 't3']);
  });
});

