import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import type { CheckpointManifest, ManifestEntry } from '../../src/core/model.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { DISCARDS_STATE, discardHolding, parseDiscards, recordDiscard, withoutDiscarded, type Discard } from '../../src/session/timeline.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';
import { storeBehind } from '../../src/store/view.js';

const id = (n: number): CheckpointId => `${String(1_700_000_000_000 + n).padStart(13, '0')}-0000-0000000${n % 10}` as CheckpointId;

function manifest(n: number, paths: string[]): CheckpointManifest {
  const entries: ManifestEntry[] = paths.map((p) => ({ path: p, before: { type: 'absent' }, after: 'absent' }));
  return {
    format: 'turnback-manifest',
    version: 1,
    id: id(n),
    kind: 'turn',
    createdAt: new Date(0).toISOString(),
    workspace: '/p',
    complete: true,
    entryCount: entries.length,
    entries,
    gaps: [],
    calls: [],
  } as unknown as CheckpointManifest;
}

const pathsOf = (manifests: CheckpointManifest[]): Record<string, string[]> =>
  Object.fromEntries(manifests.map((m) => [m.id.slice(10, 13), m.entries.map((e) => e.path)]));

describe('discards (pure)', () => {
  const timeline = [manifest(1, ['a']), manifest(2, ['a', 'b']), manifest(3, ['b', 'c']), manifest(4, ['a', 'b', 'c']), manifest(5, ['a'])];

  it('a full discard removes its whole range from a plan that starts before it, and the part after the anchor from its own start', () => {
    const full: Discard = { from: id(2), preRestore: id(4) };
    expect(pathsOf(withoutDiscarded(id(1), timeline, [full]))).toEqual({ '001': ['a'], '002': [], '003': [], '004': [], '005': ['a'] });
    expect(pathsOf(withoutDiscarded(id(2), timeline.slice(1), [full]))).toEqual({ '002': ['a', 'b'], '003': [], '004': [], '005': ['a'] });
    // A redo (the pre-restore as anchor) and anything after the range are untouched.
    expect(pathsOf(withoutDiscarded(id(4), timeline.slice(3), [full]))).toEqual({ '004': ['a', 'b', 'c'], '005': ['a'] });
  });

  it('a partial discard removes only its paths, minus what a redo revived', () => {
    const partial: Discard = { from: id(2), preRestore: id(4), paths: ['a', 'b'], revived: ['b'] };
    expect(pathsOf(withoutDiscarded(id(1), timeline, [partial]))).toEqual({ '001': ['a'], '002': ['b'], '003': ['b', 'c'], '004': ['b', 'c'], '005': ['a'] });
  });

  it('only a boundary strictly inside a full discard is held', () => {
    const full: Discard = { from: id(2), preRestore: id(4) };
    expect(discardHolding(id(3), [full])).toBe(full);
    for (const n of [1, 2, 4, 5]) expect(discardHolding(id(n), [full])).toBeUndefined();
    expect(discardHolding(id(3), [{ ...full, paths: ['a'] }])).toBeUndefined();
  });

  it('records full and partial discards; a redo of a discard revives it (whole or by path)', () => {
    const full = recordDiscard([], id(2), id(4), ['a'], true);
    expect(full).toEqual([{ from: id(2), preRestore: id(4) }]);
    expect(recordDiscard(full, id(4), id(6), ['a', 'b'], true)).toEqual([{ from: id(4), preRestore: id(6) }]);
    expect(recordDiscard(full, id(4), id(6), ['b'], false)).toEqual([
      { from: id(2), preRestore: id(4), revived: ['b'] },
      { from: id(4), preRestore: id(6), paths: ['b'] },
    ]);
  });

  it('reads a malformed document as no discards, and drops malformed items', () => {
    expect(parseDiscards(undefined)).toEqual([]);
    expect(parseDiscards('nonsense')).toEqual([]);
    expect(parseDiscards({ discards: 'x' })).toEqual([]);
    expect(parseDiscards({ discards: [{ from: id(4), preRestore: id(2) }, { from: 'x', preRestore: id(2) }, { from: id(1), preRestore: id(2), paths: [1] }, { from: id(1), preRestore: id(3) }] })).toEqual([
      { from: id(1), preRestore: id(3) },
    ]);
  });
});

async function write(observer: CheckpointObserver, project: string, rel: string, content: string): Promise<void> {
  const abs = path.join(project, rel);
  await observer.beforeWrite(abs);
  await fs.mkdir(path.dirname(abs), { recursive: true });
  await fs.writeFile(abs, content);
  await observer.afterWrite(abs);
}

async function remove(observer: CheckpointObserver, project: string, rel: string): Promise<void> {
  const abs = path.join(project, rel);
  await observer.beforeWrite(abs);
  await fs.rm(abs);
  await observer.afterWrite(abs);
}

const read = (project: string, rel: string): Promise<string> => fs.readFile(path.join(project, rel), 'utf8');
const exists = (project: string, rel: string): Promise<boolean> =>
  fs.lstat(path.join(project, rel)).then(
    () => true,
    () => false,
  );

describe('discarding later boundaries after a restore', () => {
  it('a full restore discards later boundaries: a discarded id is refused with CONFLICT, redo brings them back', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'x.txt': 'v1' });
    const observer = await openObserver(project, storeDir);
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'v2');
    const b = await observer.beginTurn({ label: 'B' });
    await write(observer, project, 'x.txt', 'v3');
    await write(observer, project, 'y.txt', 'new');

    const report = await observer.restore(a);
    expect(report.refused).toEqual([]);
    expect(report.failed).toEqual([]);
    expect(report.restored.map((e) => e.path)).toEqual(['x.txt', 'y.txt']);
    expect(await read(project, 'x.txt')).toBe('v1');
    expect(await exists(project, 'y.txt')).toBe(false);
    const pre = report.preRestoreId as CheckpointId;

    // Every id stays listed (session records keep working), but B is on a branch the restore left.
    const ids = (await observer.store.list()).map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining([a, b, pre]));
    const refusal = await observer.plan(b).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isCheckpointError(refusal, 'CONFLICT')).toBe(true);
    expect((refusal as Error).message).toContain(pre);
    await expect(observer.restore(b)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await read(project, 'x.txt')).toBe('v1');

    // The restored boundary itself stays plannable: nothing left to do there.
    expect((await observer.plan(a)).entries.filter((e) => e.action !== 'skip')).toEqual([]);

    // Redo: the pre-restore puts the later state back, and B is restorable again.
    const redo = await observer.restore(pre);
    expect(redo.failed).toEqual([]);
    expect(redo.refused).toEqual([]);
    expect(await read(project, 'x.txt')).toBe('v3');
    expect(await read(project, 'y.txt')).toBe('new');
    const toB = await observer.restore(b);
    expect(toB.restored.map((e) => e.path)).toEqual(['x.txt', 'y.txt']);
    expect(await read(project, 'x.txt')).toBe('v2');
    expect(await exists(project, 'y.txt')).toBe(false);
    await observer.close();
  });

  it('after a full restore, later plans from before or at the boundary leave the discarded range out', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'x.txt': 'v1', 'w.txt': 'w1' });
    const observer = await openObserver(project, storeDir);
    const first = await observer.beginTurn({ label: 'first' });
    await write(observer, project, 'w.txt', 'w2');
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'v2');
    await observer.beginTurn({ label: 'B' });
    await write(observer, project, 'y.txt', 'created in B');
    const report = await observer.restore(a);
    expect(report.restored).toHaveLength(2);

    // A new turn after the restore; the discarded range (A's and B's records, the pre-restore)
    // no longer takes part: y.txt is not even listed, x.txt only through the new turn.
    await observer.beginTurn({ label: 'C' });
    await write(observer, project, 'x.txt', 'v4');
    const fromA = await observer.plan(a);
    expect(fromA.entries.map((e) => [e.path, e.action])).toEqual([['x.txt', 'restore']]);
    const fromFirst = await observer.plan(first);
    expect(fromFirst.entries.map((e) => [e.path, e.action])).toEqual([
      ['w.txt', 'restore'],
      ['x.txt', 'restore'],
    ]);
    const back = await observer.restore(first);
    expect(back.failed).toEqual([]);
    expect(back.refused).toEqual([]);
    expect(await read(project, 'w.txt')).toBe('w1');
    expect(await read(project, 'x.txt')).toBe('v1');
    expect(await exists(project, 'y.txt')).toBe(false);
    await observer.close();
  });

  it('a partial restore discards only the restored paths, so a retry keeps its guard', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'w.txt': 'w1', 'x.txt': 'x1', 'y.txt': 'y1' });
    const observer = await openObserver(project, storeDir);
    const first = await observer.beginTurn({ label: 'first' });
    await write(observer, project, 'w.txt', 'w2');
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'x2');
    await write(observer, project, 'y.txt', 'y2');
    // A preview first: the session's post-write records are content hashes from here on (an
    // outside edit before that would leave a stat identity that no later content can match).
    await observer.plan(a);
    await fs.writeFile(path.join(project, 'y.txt'), 'edited by a person');

    const partial = await observer.restore(a);
    expect(partial.restored.map((e) => e.path)).toEqual(['x.txt']);
    expect(partial.refused).toMatchObject([{ path: 'y.txt', reason: 'changed-outside' }]);
    expect(await read(project, 'x.txt')).toBe('x1');

    // Nothing was discarded wholesale: A stays restorable, and y.txt keeps its attribution.
    const retryPlan = await observer.plan(a);
    expect(retryPlan.entries.find((e) => e.path === 'y.txt')).toMatchObject({ action: 'refuse', reason: 'changed-outside', expectedHash: expect.stringMatching(/^file:/) as string });
    // x.txt left A's attribution: a plan from before A no longer sees it.
    expect((await observer.plan(first)).entries.map((e) => e.path)).toEqual(['w.txt', 'y.txt']);

    // The person puts the agent's version back; the retry restores y.txt under the same guard.
    await fs.writeFile(path.join(project, 'y.txt'), 'y2');
    const retry = await observer.restore(a);
    expect(retry.restored.map((e) => e.path)).toEqual(['y.txt']);
    expect(retry.refused).toEqual([]);
    expect(await read(project, 'y.txt')).toBe('y1');
    expect(await read(project, 'x.txt')).toBe('x1');
    await observer.close();
  });

  it('a restore limited to some paths discards only those', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'x.txt': 'x1', 'y.txt': 'y1' });
    const observer = await openObserver(project, storeDir);
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'x2');
    const b = await observer.beginTurn({ label: 'B' });
    await write(observer, project, 'y.txt', 'y2');
    await remove(observer, project, 'x.txt');

    const one = await observer.restore(a, { paths: ['x.txt'] });
    expect(one.restored.map((e) => e.path)).toEqual(['x.txt']);
    expect(await read(project, 'x.txt')).toBe('x1');
    // B is not discarded (the restore was partial) and still restores y.txt.
    const toB = await observer.restore(b);
    expect(toB.restored.map((e) => e.path)).toEqual(['y.txt']);
    expect(await read(project, 'y.txt')).toBe('y1');
    expect(await read(project, 'x.txt')).toBe('x1');
    await observer.close();
  });

  it('a restore that keeps created files is partial; an unreadable discard document changes no plan', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'x.txt': 'x1' });
    const observer = await openObserver(project, storeDir);
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'x2');
    const b = await observer.beginTurn({ label: 'B' });
    await write(observer, project, 'new.txt', 'n');
    const kept = await observer.restore(a, { created: 'keep' });
    expect(kept.skipped).toMatchObject([{ path: 'new.txt', action: 'leave', reason: 'created-since' }]);
    // Partial: B keeps its attribution for new.txt, so a later rewind can still delete it.
    expect((await observer.plan(b)).entries).toMatchObject([{ path: 'new.txt', action: 'delete' }]);

    await storeBehind(observer.store).writeState(DISCARDS_STATE, { version: 1, discards: 'garbage' });
    expect((await observer.plan(a)).entries.map((e) => e.path)).toEqual(['new.txt', 'x.txt']);
    await observer.close();
  });

  it('the discards survive a new process (a new observer on the same store)', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'x.txt': 'x1' });
    const observer = await openObserver(project, storeDir);
    const a = await observer.beginTurn({ label: 'A' });
    await write(observer, project, 'x.txt', 'x2');
    const b = await observer.beginTurn({ label: 'B' });
    await write(observer, project, 'x.txt', 'x3');
    await observer.restore(a);
    await observer.close();
    const again = await openObserver(project, storeDir);
    await expect(again.plan(b)).rejects.toMatchObject({ code: 'CONFLICT' });
    await again.close();
  });
});
