import { execFileSync } from 'node:child_process';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { loadHasher } from '../../src/core/hash.js';
import type { PathState } from '../../src/core/model.js';
import { fold, foldJournal, parseJournal, type JournalRecord } from '../../src/store/journal.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { bundleStore, openStore, storePerTest } from './helpers.js';

const fixture = storePerTest();
let store: CheckpointStore;
afterEach(() => {
  vi.useRealTimers();
});
beforeEach(async () => {
  ({ store } = fixture);
  await loadHasher();
});

const absent: PathState = { type: 'absent' };
const link: PathState = { type: 'symlink', target: 'x' };

describe('fold', () => {
  test('first before wins, last after wins, incomplete marks, sorted by path', () => {
    const records: JournalRecord[] = [
      { op: 'before', path: 'b.txt', state: absent, callId: 'c1' },
      { op: 'after', path: 'b.txt', after: 'file:1111111111111111', afterMode: 0o644, callId: 'c1' },
      { op: 'before', path: 'b.txt', state: link, callId: 'c2' },
      { op: 'after', path: 'b.txt', after: 'file:2222222222222222', callId: 'c2' },
      { op: 'before', path: 'a.txt', state: link },
      { op: 'incomplete', path: 'a.txt' },
      { op: 'gap', gap: { reason: 'too-large', detail: 'big', path: 'z' } },
      { op: 'call', call: { callId: 'c1', sideEffect: 'filesystem', startedAt: 't0' } },
      { op: 'call', call: { callId: 'c1', sideEffect: 'filesystem', startedAt: 't0', endedAt: 't1' } },
      { op: 'meta', label: 'L', complete: false },
    ];
    const folded = foldJournal(records);
    expect(folded.entries).toEqual([
      { path: 'a.txt', before: link, incomplete: true },
      { path: 'b.txt', before: absent, after: 'file:2222222222222222', callId: 'c2' },
    ]);
    expect(folded.calls).toEqual([{ callId: 'c1', sideEffect: 'filesystem', startedAt: 't0', endedAt: 't1' }]);
    expect(folded.gaps).toEqual([{ reason: 'too-large', detail: 'big', path: 'z' }]);
    expect(folded.label).toBe('L');
    expect(folded.complete).toBe(false);
  });

  test('an after without a before becomes a gap, not an entry', () => {
    const folded = foldJournal([{ op: 'after', path: 'x', after: 'absent' }]);
    expect(folded.entries).toEqual([]);
    expect(folded.gaps).toMatchObject([{ path: 'x', reason: 'no-pre-image' }]);
  });

  test('property: one entry per path with a before, sorted, before = first recorded', () => {
    const pathArb = fc.constantFrom('a', 'b', 'c/d', 'e.txt');
    const recordArb: fc.Arbitrary<JournalRecord> = fc.oneof(
      fc.record({ op: fc.constant('before' as const), path: pathArb, state: fc.constantFrom(absent, link) }),
      fc.record({ op: fc.constant('after' as const), path: pathArb, after: fc.constantFrom('absent', 'file:0000000000000000') }),
    );
    fc.assert(
      fc.property(fc.array(recordArb, { maxLength: 30 }), (records) => {
        const entries = fold(records);
        const paths = entries.map((e) => e.path);
        expect(paths).toEqual([...new Set(paths)].sort());
        for (const entry of entries) {
          const first = records.find((r) => r.op === 'before' && r.path === entry.path);
          expect(first && first.op === 'before' ? first.state : undefined).toEqual(entry.before);
          const afters = records.filter((r) => r.op === 'after' && r.path === entry.path);
          const last = afters[afters.length - 1];
          expect(entry.after).toBe(last && last.op === 'after' ? last.after : undefined);
        }
      }),
    );
  });
});

describe('journal files', () => {
  test('an open checkpoint lists as incomplete and folds from its journal; seal replaces it', async () => {
    const writer = await store.openCheckpoint({ kind: 'turn', sessionId: 's1', label: 'first' });
    await writer.append({ op: 'before', path: 'a.txt', state: absent });
    await writer.append({ op: 'after', path: 'a.txt', after: 'file:1234123412341234', afterMode: 0o644 });
    const open = await store.manifest(writer.id);
    expect(open.complete).toBe(false);
    expect(open.entries).toHaveLength(1);
    expect(await store.list()).toMatchObject([{ id: writer.id, complete: false, entryCount: 1, sessionId: 's1', label: 'first' }]);
    const sealed = await writer.seal({ label: 'done' });
    expect(sealed).toMatchObject({ id: writer.id, complete: true, label: 'done', entryCount: 1, workspace: store.projectRoot });
    expect(await store.manifest(writer.id)).toEqual(sealed);
    await expect(readFile(path.join(store.root, 'checkpoints', `${writer.id}.journal`))).rejects.toThrow();
    await expect(writer.append({ op: 'incomplete', path: 'a.txt' })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
  });

  test('a torn last line is dropped; a damaged middle line becomes a gap', async () => {
    const writer = await store.openCheckpoint({ kind: 'call' });
    await writer.append({ op: 'before', path: 'a', state: absent });
    await writer.append({ op: 'before', path: 'b', state: absent });
    await writer.close();
    const file = path.join(store.root, 'checkpoints', `${writer.id}.journal`);
    await appendFile(file, '{"op":"before","path":"c","sta');
    let manifest = await store.manifest(writer.id);
    expect(manifest.entries.map((e) => e.path)).toEqual(['a', 'b']);
    expect(manifest.gaps).toEqual([]);
    expect(parseJournal(await readFile(file, 'utf8')).tornTail).toBe(true);

    const lines = (await readFile(file, 'utf8')).split('\n');
    lines[1] = (lines[1] as string).replace('"a"', '"x"');
    await writeFile(file, lines.join('\n'));
    manifest = await store.manifest(writer.id);
    expect(manifest.entries.map((e) => e.path)).toEqual(['b']);
    expect(manifest.gaps).toMatchObject([{ reason: 'journal-corrupt' }]);
  });

  test('a record appended "soon" reaches the journal within milliseconds, or before the next record, or at close, in call order', async () => {
    const writer = await store.openCheckpoint({ kind: 'turn' });
    const file = path.join(store.root, 'checkpoints', `${writer.id}.journal`);
    const lines = async (): Promise<string[]> => (await readFile(file, 'utf8')).trim().split('\n').slice(1).map((l) => (JSON.parse(l.slice(0, l.lastIndexOf('\t'))) as { op: string; after?: string }).after ?? '');
    await writer.append({ op: 'before', path: 'a', state: absent });
    await writer.append({ op: 'after', path: 'a', after: 'file:0000000000000001' });
    // The journal's own timer, faked: it fires at 20 ms, and the line is written then.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await writer.appendSoon({ op: 'after', path: 'a', after: 'file:0000000000000002' });
    expect(await lines()).toEqual(['', 'file:0000000000000001']);
    vi.advanceTimersByTime(19);
    expect(await lines()).toEqual(['', 'file:0000000000000001']);
    vi.advanceTimersByTime(1);
    expect(await lines()).toEqual(['', 'file:0000000000000001', 'file:0000000000000002']);
    vi.useRealTimers();
    // Before the next record: the journal keeps call order, so the last after still wins.
    await writer.appendSoon({ op: 'after', path: 'a', after: 'file:0000000000000003' });
    await writer.append({ op: 'after', path: 'a', after: 'file:0000000000000004' });
    expect((await lines()).slice(-2)).toEqual(['file:0000000000000003', 'file:0000000000000004']);
    await writer.appendSoon({ op: 'after', path: 'a', after: 'file:0000000000000005' });
    await writer.close();
    expect((await lines()).at(-1)).toBe('file:0000000000000005');
    expect((await store.manifest(writer.id)).entries[0]?.after).toBe('file:0000000000000005');
    await expect(writer.appendSoon({ op: 'after', path: '../x', after: 'absent' })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
  });

  test('a record appended "soon" is written when the process exits without closing the journal', async () => {
    const bundle = await bundleStore(fixture.box.dir);
    const child = path.join(fixture.box.dir, 'exit.cjs');
    await writeFile(
      child,
      `const { CheckpointStore } = require(${JSON.stringify(bundle)});
      (async () => {
        const store = await CheckpointStore.open(process.argv[2], { projectRoot: process.argv[3] });
        const writer = await store.openCheckpoint({ kind: 'turn' });
        await writer.append({ op: 'before', path: 'a', state: { type: 'absent' } });
        await writer.appendSoon({ op: 'after', path: 'a', after: 'file:00000000000000aa' });
        console.log(writer.id);
        process.exit(0);
      })();`,
    );
    await store.close();
    const out = execFileSync(process.execPath, [child, fixture.box.storeRoot, fixture.box.project], { encoding: 'utf8' }).trim();
    const reopened = await openStore(fixture.box);
    expect((await reopened.manifest(out)).entries[0]?.after).toBe('file:00000000000000aa');
    await reopened.close();
  });

  test('malformed records are refused', async () => {
    const writer = await store.openCheckpoint({ kind: 'turn' });
    await expect(writer.append({ op: 'before', path: '../x', state: absent })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await expect(writer.append({ op: 'nope' } as unknown as JournalRecord)).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await expect(store.openCheckpoint({ kind: 'weird' as 'turn' })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await writer.close();
  });

  test('unknown and malformed ids', async () => {
    await expect(store.manifest('nope')).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ID'));
    await expect(store.manifest('0000000000001-0000-00000000')).rejects.toSatisfy((e) => isCheckpointError(e, 'UNKNOWN_CHECKPOINT'));
  });
});

describe('a seal a power loss cut short (the manifest is not fsynced)', () => {
  test('an empty manifest beside its journal reads as the journal, prune keeps the journal, verify names the manifest; a whole one wins and prune takes the journal', async () => {
    const bundle = await bundleStore(fixture.box.dir);
    const child = path.join(fixture.box.dir, 'seal.cjs');
    // A real writer that dies after its seals, leaving a copy of each journal as it was just before.
    await writeFile(
      child,
      `const { CheckpointStore } = require(${JSON.stringify(bundle)});
      const fs = require('node:fs');
      (async () => {
        const store = await CheckpointStore.open(process.argv[2], { projectRoot: process.argv[3] });
        const ids = [];
        for (const name of ['torn', 'whole']) {
          const writer = await store.openCheckpoint({ kind: 'turn', label: name });
          await writer.append({ op: 'before', path: name + '.txt', state: { type: 'absent' } });
          await writer.append({ op: 'after', path: name + '.txt', after: 'absent' });
          const journal = process.argv[2] + '/checkpoints/' + writer.id + '.journal';
          fs.copyFileSync(journal, journal + '.kept');
          await writer.seal();
          ids.push(writer.id);
        }
        console.log(ids.join(' '));
        process.exit(0);
      })();`,
    );
    await store.close();
    const [torn, whole] = execFileSync(process.execPath, [child, fixture.box.storeRoot, fixture.box.project], { encoding: 'utf8' }).trim().split(' ') as [string, string];
    const checkpoints = path.join(fixture.box.storeRoot, 'checkpoints');
    const { rename, truncate, stat } = await import('node:fs/promises');
    for (const id of [torn, whole]) await rename(path.join(checkpoints, `${id}.journal.kept`), path.join(checkpoints, `${id}.journal`));
    // What a power loss after the seal's rename can leave of a manifest whose data never reached the disk.
    await truncate(path.join(checkpoints, `${torn}.json`), 0);
    const reopened = await openStore(fixture.box);
    try {
      const read = await reopened.manifest(torn);
      expect(read).toMatchObject({ id: torn, complete: false, label: 'torn' });
      expect(read.entries.map((e) => e.path)).toEqual(['torn.txt']);
      expect((await reopened.list()).map((m) => m.id)).toEqual([torn, whole]);
      expect((await reopened.verify()).problems.some((p) => p.path?.endsWith(`${torn}.json`))).toBe(true);
      await reopened.prune();
      await expect(stat(path.join(checkpoints, `${torn}.journal`))).resolves.toBeDefined();
      await expect(stat(path.join(checkpoints, `${whole}.journal`))).rejects.toThrow();
      expect((await reopened.manifest(whole)).complete).toBe(true);
    } finally {
      await reopened.close();
    }
  });
});
