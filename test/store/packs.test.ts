import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, readdir, readFile, readlink, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { baseObjectKey } from '../../src/store/object-codec.js';
import { PACK_OBJECT_MAX_BYTES, encodeRecord, loadPackHasher } from '../../src/store/packs.js';
import { PackWriter } from '../../src/store/pack-writer.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { ageStore, incompressibleBytes, makeSandbox, openStore, storeBundlePerFile, storedObject, type Sandbox, storePerTest } from './helpers.js';
import { storeFile } from '../../src/capture/stable-read.js';

let box: Sandbox;
let store: CheckpointStore;
// The real store code, bundled once for the other processes.
const bundled = storeBundlePerFile();

beforeAll(async () => {
  await Promise.all([loadHasher(), loadPackHasher()]);
});
const fixture = storePerTest();
beforeEach(() => {
  ({ box, store } = fixture);
});

const bytesFor = incompressibleBytes;

const packsDir = (): string => path.join(store.root, 'objects', 'packs');
async function packNames(): Promise<{ packs: string[]; idx: string[] }> {
  const names = await readdir(packsDir());
  return { packs: names.filter((n) => n.endsWith('.pack')).sort(), idx: names.filter((n) => n.endsWith('.idx')).sort() };
}

/**
 * A child process that opens the store, stores `count` objects (seeded), prints each key as a
 * line, then prints `done` and waits (alive, its pack unsealed) until killed.
 */
function spawnWriter(seed: number, count: number): { child: ChildProcess; keys: Promise<string[]> } {
  const script = `
    const { CheckpointStore } = require(${JSON.stringify(bundled.path)});
    (async () => {
      const [storeRoot, projectRoot, seed, count] = process.argv.slice(1);
      const store = await CheckpointStore.open(storeRoot, { projectRoot });
      for (let i = 0; i < Number(count); i++) {
        const size = 100 + ((Number(seed) * 31 + i * 977) % 6000);
        const bytes = Buffer.alloc(size);
        let x = (Number(seed) * 1000 + i) >>> 0;
        for (let j = 0; j < size; j++) { x = (x * 1103515245 + 12345) >>> 0; bytes[j] = x >>> 24; }
        const ref = await store.putBytes(bytes);
        process.stdout.write(ref.object + '\\n');
      }
      process.stdout.write('done\\n');
      setInterval(() => undefined, 1000);
    })().catch((e) => { console.error(e); process.exit(1); });
  `;
  const child = spawn(process.execPath, ['-e', script, box.storeRoot, box.project, String(seed), String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const keys = new Promise<string[]>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.endsWith('done\n')) resolve(text.trim().split('\n').slice(0, -1));
    });
    child.once('exit', (code) => reject(new Error(`writer exited early: ${String(code)}`)));
  });
  keys.catch(() => undefined);
  return { child, keys };
}

function childBytes(seed: number, i: number): Buffer {
  const size = 100 + ((seed * 31 + i * 977) % 6000);
  const bytes = Buffer.alloc(size);
  let x = (seed * 1000 + i) >>> 0;
  for (let j = 0; j < size; j++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[j] = x >>> 24;
  }
  return bytes;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function checkpointOf(keys: { object: string; hash: string; size: number }[]): Promise<string> {
  const writer = await store.openCheckpoint({ kind: 'turn' });
  for (const [i, ref] of keys.entries()) await writer.append({ op: 'before', path: `f${i}`, state: { type: 'file', ...ref, mode: 0o644 } });
  return (await writer.seal()).id;
}

describe('packs', () => {
  test('small objects round trip through a pack: live, sealed with an index, and scanned without one', async () => {
    const sizes = [0, 1, 100, 1023, 1024, 5000, 70_000, PACK_OBJECT_MAX_BYTES, PACK_OBJECT_MAX_BYTES + 1];
    const contents = sizes.map((size, i) => (i % 2 === 0 ? bytesFor(i, size) : Buffer.from('compressible text\n'.repeat(size + 1)).subarray(0, size)));
    const refs: { object: string; hash: string; size: number }[] = [];
    for (const bytes of contents) refs.push(await store.putBytes(bytes));
    const check = async (s: CheckpointStore): Promise<void> => {
      for (const [i, ref] of refs.entries()) expect(Buffer.compare(await s.readObject(ref.object), contents[i] as Buffer)).toBe(0);
    };
    await check(store);
    // Only the object over the threshold is a loose file.
    const loose = (await store.listObjects()).filter((info) => info.offset === undefined).map((info) => info.key);
    expect(loose).toEqual([refs.at(-1)?.object]);
    await store.close();
    const names = await packNames();
    expect(names.packs).toHaveLength(1);
    expect(names.idx).toEqual([(names.packs[0] as string).replace(/\.pack$/, '.idx')]);
    const reopened = await openStore(box);
    await check(reopened);
    await reopened.close();
    // Without the index the pack is scanned record by record.
    await unlink(path.join(packsDir(), names.idx[0] as string));
    const scanned = await openStore(box);
    await check(scanned);
    expect((await scanned.verify()).problems).toEqual([]);
    await scanned.close();
  });

  test("another process's objects are found, deduplicated, and its live pack is never pruned", async () => {
    await store.putBytes(Buffer.from('index loaded before the child writes'));
    const { child, keys } = spawnWriter(7, 20);
    try {
      const written = await keys;
      expect(written).toHaveLength(20);
      for (const [i, key] of written.entries()) {
        expect(await store.hasObject(key)).toBe(true);
        expect(Buffer.compare(await store.readObject(key), childBytes(7, i))).toBe(0);
      }
      // The same bytes stored here dedupe against the child's pack.
      expect((await store.putBytes(childBytes(7, 3))).object).toBe(written[3]);
      expect((await store.listObjects()).filter((info) => info.key === written[3])).toHaveLength(1);
      // Even aged past the grace period, a live writer's pack is left alone.
      const { packs } = await packNames();
      const old = new Date(Date.now() - 60 * 60_000);
      for (const name of packs) await utimes(path.join(packsDir(), name), old, old);
      await store.prune({ retain: 0 });
      for (const [i, key] of written.entries()) expect(Buffer.compare(await store.readObject(key), childBytes(7, i))).toBe(0);
      const childPack = packs.find((n) => n.startsWith(`pack-${String(child.pid)}-`)) as string;
      expect((await packNames()).idx).not.toContain(childPack.replace(/\.pack$/, '.idx'));
    } finally {
      await kill(child);
    }
    // Once it is dead its pack is sealed (and, with nothing referenced and aged, removed).
    const report = await store.prune({ retain: 0 });
    expect(report.removedObjects).toBeGreaterThanOrEqual(20);
    expect((await store.verify()).problems).toEqual([]);
  });

  test('a second store instance in the same process never seals or prunes a pack still being written', async () => {
    const first = await store.putBytes(bytesFor(1, 3000));
    const { packs } = await packNames();
    const old = new Date(Date.now() - 60 * 60_000);
    for (const name of packs) await utimes(path.join(packsDir(), name), old, old);
    const other = await openStore(box);
    await other.prune({ retain: 0, graceMs: 0 });
    expect((await packNames()).idx).toEqual([]);
    const second = await store.putBytes(bytesFor(2, 3000));
    expect(Buffer.compare(await other.readObject(first.object), bytesFor(1, 3000))).toBe(0);
    expect(Buffer.compare(await other.readObject(second.object), bytesFor(2, 3000))).toBe(0);
    expect((await other.verify()).problems).toEqual([]);
    await other.close();
  });

  test('a torn pack tail after a crash is ignored, verify passes, prune cuts it and seals the pack', async () => {
    const { child, keys } = spawnWriter(3, 30);
    const written = await keys;
    await kill(child);
    const { packs } = await packNames();
    const childPack = path.join(packsDir(), packs.find((n) => n.startsWith(`pack-${String(child.pid)}-`)) as string);
    const committed = (await stat(childPack)).size;
    // A write cut short: the first half of a valid record (a crash mid-append, or a full disk).
    const record = encodeRecord(baseObjectKey(contentHash(Buffer.from('torn')), 4000), Uint8Array.of(0), bytesFor(99, 4000));
    await appendFile(childPack, record.subarray(0, 2000));
    const reader = await openStore(box);
    for (const [i, key] of written.entries()) expect(Buffer.compare(await reader.readObject(key), childBytes(3, i))).toBe(0);
    expect((await reader.verify()).problems).toEqual([]);
    // Reference half of them so prune keeps those.
    const kept = written.slice(0, 15).map((key, i) => ({ object: key, hash: key.slice(0, 16), size: childBytes(3, i).length }));
    const writer = await reader.openCheckpoint({ kind: 'turn' });
    for (const [i, ref] of kept.entries()) await writer.append({ op: 'before', path: `k${i}`, state: { type: 'file', ...ref, mode: 0o600 } });
    await writer.seal();
    await reader.prune();
    expect((await stat(childPack)).size).toBe(committed);
    expect((await packNames()).idx).toContain(path.basename(childPack).replace(/\.pack$/, '.idx'));
    expect((await reader.verify()).problems).toEqual([]);
    for (const [i, key] of written.entries()) expect(Buffer.compare(await reader.readObject(key), childBytes(3, i))).toBe(0);
    await reader.close();
  });

  test('a collision with a packed impostor gets the next suffix; a damaged copy falls back to a good one', async () => {
    const mine = Buffer.from('the content being stored, packed');
    const key = baseObjectKey(contentHash(mine), mine.length);
    const impostor = Buffer.from('x'.repeat(mine.length));
    // Another writer's pack holding different bytes under the same key (what an xxh64 collision would give).
    const forged = PackWriter.create(packsDir());
    forged.append(key, encodeRecord(key, Uint8Array.of(0), impostor));
    forged.seal(() => path.join(store.root, 'tmp', `.turnback-${process.pid}-forge-1`));
    const fresh = await openStore(box);
    const ref = await fresh.putBytes(mine);
    expect(ref.object).toBe(`${key}.1`);
    expect(Buffer.compare(await fresh.readObject(ref.object), mine)).toBe(0);
    expect((await fresh.putBytes(mine)).object).toBe(`${key}.1`);
    await expect(fresh.readObject(key)).rejects.toSatisfy((e) => isCheckpointError(e, 'INTEGRITY'));
    // Two copies of one key, one damaged: the good one is returned, the damage never is.
    const twin = PackWriter.create(packsDir());
    const good = encodeRecord(`${key}.1`, Uint8Array.of(0), mine);
    const bad = Buffer.from(good);
    bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0xff;
    twin.append(`${key}.1`, bad);
    twin.seal(() => path.join(store.root, 'tmp', `.turnback-${process.pid}-forge-2`));
    const other = await openStore(box);
    expect(Buffer.compare(await other.readObject(`${key}.1`), mine)).toBe(0);
    const report = await other.verify();
    expect(report.problems).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'corrupt-object', path: twin.pack.path })]));
    await Promise.all([fresh.close(), other.close()]);
  });

  test('prune deletes garbage packs, repacks mostly-garbage ones, and keeps every referenced object', async () => {
    const refs: { object: string; hash: string; size: number }[] = [];
    for (let i = 0; i < 30; i++) refs.push(await store.putBytes(bytesFor(i, 1500 + i * 10)));
    await store.close();
    // A second pack with nothing referenced at all.
    for (let i = 100; i < 110; i++) await store.putBytes(bytesFor(i, 800));
    await store.close();
    const referenced = refs.slice(0, 6);
    await checkpointOf(referenced);
    await ageStore(store);
    expect((await packNames()).packs).toHaveLength(2);
    const report = await store.prune();
    expect(report.removedObjects).toBe(24 + 10);
    for (const [i, ref] of referenced.entries()) expect(Buffer.compare(await store.readObject(ref.object), bytesFor(i, 1500 + i * 10))).toBe(0);
    for (const ref of refs.slice(6)) expect(await store.hasObject(ref.object)).toBe(false);
    // Both old packs are gone; the survivors were rewritten into this process's pack.
    const { packs } = await packNames();
    expect(packs).toHaveLength(1);
    expect((await store.listObjects()).map((info) => info.key).sort()).toEqual(referenced.map((r) => r.object).sort());
    expect((await store.verify()).problems).toEqual([]);
    // A fresh reader agrees.
    await store.close();
    const reader = await openStore(box);
    for (const ref of referenced) expect(await reader.hasObject(ref.object)).toBe(true);
    await reader.close();
  });

  test('a mostly referenced pack is kept as is; a fresh one is never touched', async () => {
    const refs: { object: string; hash: string; size: number }[] = [];
    for (let i = 0; i < 10; i++) refs.push(await store.putBytes(bytesFor(i, 2000)));
    await checkpointOf(refs.slice(0, 8));
    await store.close();
    const before = await packNames();
    expect((await store.prune()).removedObjects).toBe(0); // fresh: grace period
    await ageStore(store);
    expect((await store.prune()).removedObjects).toBe(0); // 80% live: not worth rewriting
    expect(await packNames()).toEqual(before);
    const file = path.join(packsDir(), before.packs[0] as string);
    expect((await readFile(file)).length).toBeGreaterThan(10 * 2000);
  });

  test('a file stored raw on the fast path is compressed when prune rewrites its pack', async () => {
    const file = path.join(box.project, 'notes.txt');
    const text = Buffer.from('a line of text that compresses well\n'.repeat(200));
    await writeFile(file, text);
    const ref = await storeFile(store, file, undefined, { compress: false });
    expect((await storedObject(store, ref.object)).stored[0]).toBe(0);
    for (let i = 0; i < 10; i++) await store.putBytes(bytesFor(900 + i, 2000)); // garbage
    await checkpointOf([ref]);
    await ageStore(store);
    expect((await store.prune()).removedObjects).toBe(10);
    // Rewritten into a block of this process's pack, compressed with brotli.
    const where = await storedObject(store, ref.object);
    expect(where.block).toEqual({ encoding: 2, members: 1 });
    expect(where.stored.length).toBeLessThan(text.length / 5);
    expect(Buffer.compare(await store.readObject(ref.object), text)).toBe(0);
    // The compressed and the raw encodings of the same bytes are the same object.
    expect((await storeFile(store, file, undefined, { compress: false })).object).toBe(ref.object);
  });

  test('many small sealed packs (one per short-lived process) are merged by prune', async () => {
    const refs: { object: string; hash: string; size: number }[] = [];
    for (let i = 0; i < 17; i++) {
      const s = await openStore(box);
      refs.push(await s.putBytes(bytesFor(500 + i, 3000)));
      await s.close();
    }
    await checkpointOf(refs);
    await ageStore(store);
    expect((await packNames()).packs).toHaveLength(17);
    expect((await store.prune()).removedObjects).toBe(0);
    expect((await packNames()).packs).toHaveLength(1);
    for (const [i, ref] of refs.entries()) expect(Buffer.compare(await store.readObject(ref.object), bytesFor(500 + i, 3000))).toBe(0);
    expect((await store.verify()).problems).toEqual([]);
  });

  test('reads keep one descriptor per pack, closed with the store and after verify', async () => {
    const refs = [];
    for (let i = 0; i < 40; i++) refs.push(await store.putBytes(bytesFor(1000 + i, 3000)));
    await store.close();
    const packOf = async (): Promise<string[]> => {
      const links = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return links.filter((l) => l.startsWith(path.join(store.root, 'objects')) && l.endsWith('.pack'));
    };
    const reader = await openStore(box);
    for (const ref of refs) expect((await reader.readObject(ref.object)).length).toBe(3000);
    expect(await packOf()).toHaveLength(1);
    expect((await reader.verify()).ok).toBe(true);
    expect(await packOf()).toHaveLength(1);
    await reader.close();
    expect(await packOf()).toEqual([]);
  });

  test('abandoned journal writers and stores close their descriptors without a DEP0137 warning', async () => {
    const script = `
      const fs = require('node:fs');
      const { CheckpointStore } = require(${JSON.stringify(bundled.path)});
      (async () => {
        const [storeRoot, projectRoot] = process.argv.slice(1);
        const fds = () => fs.readdirSync('/proc/self/fd').length;
        let store = await CheckpointStore.open(storeRoot, { projectRoot });
        await store.putBytes(Buffer.from('warm up'));
        const before = fds();
        for (let i = 0; i < 40; i++) {
          const writer = await store.openCheckpoint({ kind: 'turn' }); // never sealed or closed
          await writer.append({ op: 'before', path: 'a', state: { type: 'absent' } });
        }
        for (let i = 0; i < 5; i++) { const s = await CheckpointStore.open(storeRoot, { projectRoot }); await s.putBytes(Buffer.from('x' + i)); }
        const during = fds();
        for (let i = 0; i < 6; i++) { global.gc(); await new Promise((r) => setImmediate(r)); }
        process.stdout.write(JSON.stringify({ before, during, after: fds() }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const child = spawn(process.execPath, ['--expose-gc', '--trace-warnings', '-e', script, box.storeRoot, box.project], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(err).not.toMatch(/DEP0137/);
    const counts = JSON.parse(out) as { before: number; during: number; after: number };
    expect(counts.during).toBeGreaterThanOrEqual(counts.before + 40);
    // All but the last writer or two (which the engine may still hold in a frame) were closed.
    expect(counts.after).toBeLessThanOrEqual(counts.before + 4);
  });

  test('property: random puts (one by one and in batches), seals, reopens and prunes keep every referenced object byte-exact', async () => {
    const pool = [0, 10, 900, 1024, 3000, 20_000, PACK_OBJECT_MAX_BYTES, 600_000].flatMap((size, i) => [bytesFor(i, size), Buffer.from('abc\n'.repeat(size + 1)).subarray(0, size)]);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('put' as const), item: fc.nat(pool.length - 1) }),
      fc.record({ kind: fc.constant('batch-put' as const), item: fc.nat(pool.length - 1) }),
      fc.record({ kind: fc.constant('end-batch' as const) }),
      fc.record({ kind: fc.constant('checkpoint' as const) }),
      fc.record({ kind: fc.constant('forget' as const) }),
      fc.record({ kind: fc.constant('seal' as const) }),
      fc.record({ kind: fc.constant('reopen' as const) }),
      fc.record({ kind: fc.constant('prune' as const), aged: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const local = await makeSandbox();
        let s = await openStore(local);
        const bytesOf = new Map<string, Buffer>();
        let pending: { object: string; hash: string; size: number }[] = [];
        const checkpoints: { id: string; keys: string[] }[] = [];
        // A batch's keys may be referenced only once it ended: they wait in `batched` until then.
        let batch = s.openBatch();
        let batched: { object: string; hash: string; size: number }[] = [];
        const endBatch = async (): Promise<void> => {
          expect([...(await s.endBatch(batch)).keys()]).toEqual([]);
          pending.push(...batched);
          batched = [];
          batch = s.openBatch();
        };
        try {
          for (const o of ops) {
            if (o.kind === 'put') {
              const bytes = pool[o.item] as Buffer;
              const ref = await s.putBytes(bytes);
              bytesOf.set(ref.object, bytes);
              pending.push(ref);
            } else if (o.kind === 'batch-put') {
              const bytes = pool[o.item] as Buffer;
              const ref = await s.putHashed(bytes, contentHash(bytes), { batch });
              bytesOf.set(ref.object, bytes);
              batched.push(ref);
            } else if (o.kind === 'end-batch') {
              await endBatch();
            } else if (o.kind === 'checkpoint') {
              const writer = await s.openCheckpoint({ kind: 'turn' });
              for (const [i, ref] of pending.entries()) await writer.append({ op: 'before', path: `p${i}`, state: { type: 'file', ...ref, mode: 0o644 } });
              checkpoints.push({ id: (await writer.seal()).id, keys: pending.map((r) => r.object) });
              pending = [];
            } else if (o.kind === 'forget') {
              const first = checkpoints.shift();
              if (first) await s.dropCheckpoint(first.id);
            } else if (o.kind === 'seal') {
              await s.close();
            } else if (o.kind === 'reopen') {
              await endBatch();
              await s.close();
              s = await openStore(local);
              batch = s.openBatch();
            } else {
              // What a batch holds is named by nothing until it ends: end it before objects may go.
              if (o.aged) await endBatch();
              if (o.aged) await ageStore(s);
              // Unreferenced puts since the last checkpoint may go when aged: stop tracking them.
              if (o.aged) pending = [];
              await s.prune();
            }
            for (const cp of checkpoints) {
              for (const key of cp.keys) expect(Buffer.compare(await s.readObject(key), bytesOf.get(key) as Buffer)).toBe(0);
            }
          }
          await endBatch();
          for (const ref of pending) expect(Buffer.compare(await s.readObject(ref.object), bytesOf.get(ref.object) as Buffer)).toBe(0);
          expect((await s.verify()).problems).toEqual([]);
        } finally {
          await s.close();
          await local.cleanup();
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
