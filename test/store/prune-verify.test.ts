import { spawn } from 'node:child_process';
import { readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { parseCheckpointId } from '../../src/core/id.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { ageStore, storedObject, storePerTest } from './helpers.js';

const fixture = storePerTest();
let store: CheckpointStore;
beforeEach(async () => {
  ({ store } = fixture);
});

/** Incompressible-ish unique bytes. */
function bytesFor(seed: number, size = 2000): Buffer {
  const out = Buffer.alloc(size);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

async function checkpointWith(seed: number): Promise<{ id: string; object: string }> {
  const ref = await store.putBytes(bytesFor(seed));
  const writer = await store.openCheckpoint({ kind: 'turn', label: `cp${seed}` });
  await writer.append({ op: 'before', path: `f${seed}.txt`, state: { type: 'file', ...ref, mode: 0o644 } });
  const manifest = await writer.seal();
  return { id: manifest.id, object: ref.object };
}

/** Makes every object look older than the prune grace period. */
async function ageObjects(): Promise<void> {
  await ageStore(store);
}

describe('prune', () => {
  test('retain removes the oldest; unreferenced objects go only after the grace period', async () => {
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await checkpointWith(i));
    const first = await store.prune({ retain: 2 });
    expect(first.removedCheckpoints).toEqual(made.slice(0, 3).map((m) => m.id));
    expect(first.cleared.every((c) => c.reason === 'retain')).toBe(true);
    // Fresh objects are protected by the grace period even though nothing references them.
    expect(first.removedObjects).toBe(0);
    expect((await store.list()).map((m) => m.id)).toEqual(made.slice(3).map((m) => m.id));

    await ageObjects();
    const second = await store.prune({ retain: 2 });
    expect(second.removedCheckpoints).toEqual([]);
    expect(second.removedObjects).toBe(3);
    expect(second.freedBytes).toBeGreaterThan(3 * 2000);
    for (const m of made.slice(0, 3)) expect(await store.hasObject(m.object)).toBe(false);
    for (const m of made.slice(3)) expect(Buffer.compare(await store.readObject(m.object), bytesFor(made.indexOf(m)))).toBe(0);
    expect((await store.verify()).ok).toBe(true);
  });

  test('keepDays removes old checkpoints; retain defaults to 100', async () => {
    const recent = await checkpointWith(1);
    const sealed = await readFile(path.join(store.root, 'checkpoints', `${recent.id}.json`), 'utf8');
    // newCheckpointId never goes backwards in one process, so an old id is written by hand.
    const oldId = parseCheckpointId(`${String(Date.now() - 3 * 86_400_000).padStart(13, '0')}-0000-00000000`);
    const oldManifest = { ...JSON.parse(sealed), id: oldId };
    await writeFile(path.join(store.root, 'checkpoints', `${oldId}.json`), JSON.stringify(oldManifest));
    expect((await store.list()).map((m) => m.id)).toEqual([oldId, recent.id]);
    expect(await store.prune()).toMatchObject({ removedCheckpoints: [] });
    const report = await store.prune({ keepDays: 1 });
    expect(report.cleared).toEqual([{ id: oldId, reason: 'keep-days' }]);
    expect(await store.hasObject(recent.object)).toBe(true);
  });

  test('maxStoreBytes removes the oldest until the store fits', async () => {
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await checkpointWith(100 + i));
    await ageObjects();
    const before = await store.storeSizeBytes();
    const report = await store.prune({ maxStoreBytes: before - 3000 });
    expect(report.cleared).toEqual([
      { id: made[0]?.id, reason: 'store-full' },
      { id: made[1]?.id, reason: 'store-full' },
    ]);
    expect(await store.storeSizeBytes()).toBeLessThanOrEqual(before - 3000);
    await expect(store.prune({ graceMs: -1 })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await expect(store.prune({ retain: -1 })).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
  });

  test('never removes a live writer journal; removes dead writers temp files', async () => {
    await checkpointWith(7);
    const writer = await store.openCheckpoint({ kind: 'call' });
    const ref = await store.putBytes(bytesFor(8));
    await writer.append({ op: 'before', path: 'live.txt', state: { type: 'file', ...ref, mode: 0o600 } });
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    const deadTemp = path.join(store.root, 'tmp', `.turnback-${String(dead.pid)}-abcd-1`);
    await writeFile(deadTemp, 'leftover');
    const mine = path.join(store.root, 'tmp', `.turnback-${process.pid}-ffff-1`);
    await writeFile(mine, 'in progress');
    await ageObjects();
    const report = await store.prune({ retain: 0 });
    expect(report.cleared).toHaveLength(1);
    expect(report.cleared[0]?.id).not.toBe(writer.id);
    expect(await store.hasObject(ref.object)).toBe(true);
    expect((await store.manifest(writer.id)).entries).toHaveLength(1);
    await expect(stat(deadTemp)).rejects.toThrow();
    await expect(stat(mine)).resolves.toBeTruthy();
    await writer.seal();
  });

  test('graceMs: 0 removes fresh unreferenced objects at once', async () => {
    const made = await checkpointWith(11);
    await store.dropCheckpoint(made.id);
    expect((await store.prune({ graceMs: 0 })).removedObjects).toBe(1);
    expect(await store.hasObject(made.object)).toBe(false);
  });

  test('dropCheckpoint removes one checkpoint', async () => {
    const made = await checkpointWith(9);
    await store.dropCheckpoint(made.id);
    await expect(store.manifest(made.id)).rejects.toSatisfy((e) => isCheckpointError(e, 'UNKNOWN_CHECKPOINT'));
    await expect(store.dropCheckpoint(made.id)).rejects.toSatisfy((e) => isCheckpointError(e, 'UNKNOWN_CHECKPOINT'));
    await expect(store.dropCheckpoint('bad')).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ID'));
  });
});

describe('verify', () => {
  test('ok on a healthy store, with stats; leftovers are not problems', async () => {
    await checkpointWith(1);
    await checkpointWith(2);
    const open = await store.openCheckpoint({ kind: 'turn' });
    await open.append({ op: 'before', path: 'x', state: { type: 'absent' } });
    await store.putBytes(Buffer.from('unreferenced'));
    await writeFile(path.join(store.root, 'tmp', '.turnback-1-x-1'), 'leftover');
    const report = await store.verify();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.stats.checkpoints).toBe(3);
    expect(report.stats.objects).toBe(3);
    expect(report.stats.bytes).toBeGreaterThan(4000);
    await open.close();
  });

  test('reports a missing and a corrupt object', async () => {
    // a: a large (loose) object, deleted; b: a packed object with a flipped byte.
    const bigRef = await store.putBytes(Buffer.concat(Array.from({ length: 150 }, (_, i) => bytesFor(1000 + i))));
    const writer = await store.openCheckpoint({ kind: 'turn', label: 'big' });
    await writer.append({ op: 'before', path: 'big.bin', state: { type: 'file', ...bigRef, mode: 0o644 } });
    const a = { id: (await writer.seal()).id, object: bigRef.object };
    const b = await checkpointWith(2);
    const fileOf = (key: string): string => path.join(store.root, 'objects', 'v1', key.slice(0, 2), key);
    await unlink(fileOf(a.object));
    const where = await storedObject(store, b.object);
    const pack = await readFile(where.file);
    pack[where.storedOffset + 10] = (pack[where.storedOffset + 10] as number) ^ 1;
    await writeFile(where.file, pack);
    const report = await store.verify();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'missing-object', id: a.id }),
        expect.objectContaining({ kind: 'corrupt-object', path: where.file }),
      ]),
    );
    await writeFile(path.join(store.root, 'checkpoints', `${a.id}.json`), '{');
    expect((await store.verify()).problems).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'manifest', id: a.id })]));
    expect(await readdir(path.join(store.root, 'tmp'))).toBeDefined();
  });

  test('runs named steps, each with its own counts: the step that found a problem says so', async () => {
    const bigRef = await store.putBytes(Buffer.concat(Array.from({ length: 150 }, (_, i) => bytesFor(2000 + i))));
    const writer = await store.openCheckpoint({ kind: 'turn', label: 'big' });
    await writer.append({ op: 'before', path: 'big.bin', state: { type: 'file', ...bigRef, mode: 0o644 } });
    await writer.seal();
    await checkpointWith(3);
    const healthy = await store.verify();
    expect(healthy.steps.map((step) => step.name)).toEqual(['layout', 'checkpoints', 'loose-objects', 'packs', 'references']);
    expect(healthy.steps.find((step) => step.name === 'checkpoints')).toEqual({ name: 'checkpoints', checked: 2, problems: 0 });
    expect(healthy.steps.find((step) => step.name === 'loose-objects')).toEqual({ name: 'loose-objects', checked: 1, problems: 0 });
    expect(healthy.steps.find((step) => step.name === 'references')).toEqual({ name: 'references', checked: 2, problems: 0 });
    await unlink(path.join(store.root, 'objects', 'v1', bigRef.object.slice(0, 2), bigRef.object));
    const damaged = await store.verify();
    expect(damaged.steps.filter((step) => step.problems > 0).map((step) => [step.name, step.problems])).toEqual([['references', 1]]);
  });
});
