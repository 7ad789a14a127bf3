import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { ASYNC_COMPRESS_BYTES, encodeDocument, encodeDocumentAsync } from '../../src/store/document-codec.js';
import { loadHasher } from '../../src/core/hash.js';
import { ageStore, openStore, storePerTest, type Sandbox } from './helpers.js';

// Layout 3 stores a large JSON document (a state document, a manifest) compressed with the hash
// of its text; a small one stays plain JSON. A compressed document that does not decode is never
// half read, and while one is in the store prune removes no object: what it names is unknown.

let box: Sandbox;
let store: CheckpointStore;
const fixture = storePerTest();
beforeEach(() => {
  ({ box, store } = fixture);
});

const large = { records: Array.from({ length: 2000 }, (_, i) => ({ path: `src/file-${i}.ts`, size: i * 7, hash: (i * 2654435761).toString(16).padStart(16, '0') })) };

/** Flips a byte in the middle of a file. */
async function damage(file: string): Promise<void> {
  const bytes = await readFile(file);
  const at = bytes.length >> 1;
  bytes[at] = (bytes[at] as number) ^ 0x10;
  await writeFile(file, bytes);
}

/** A sealed checkpoint naming `count` objects, each stored first. */
async function checkpointWith(count: number): Promise<{ id: string; objects: string[] }> {
  const writer = await store.openCheckpoint({ kind: 'turn' });
  const objects: string[] = [];
  for (let i = 0; i < count; i++) {
    const ref = await store.putBytes(Buffer.from(`content of file ${i}\n`.repeat(3)));
    objects.push(ref.object);
    await writer.append({ op: 'before', path: `dir/with/a/long/enough/name/file-${i}.txt`, state: { type: 'file', ...ref, mode: 0o644 } });
  }
  return { id: (await writer.seal()).id, objects };
}

describe('compressed documents', () => {
  test('a large state document is stored compressed and reads back; a small one stays plain JSON', async () => {
    await store.writeState('picture-cache', large, { durable: false });
    await store.writeState('small', { a: 1 });
    const bytes = await readFile(path.join(store.root, 'state', 'picture-cache.json'));
    expect(bytes[0]).toBe(0);
    expect(bytes.length).toBeLessThan(JSON.stringify(large).length / 3);
    expect(await store.readState('picture-cache')).toEqual(large);
    expect(JSON.parse(await readFile(path.join(store.root, 'state', 'small.json'), 'utf8'))).toEqual({ a: 1 });
  });

  test('a long document compressed on the thread pool is byte for byte the one compressed on the calling thread', async () => {
    await loadHasher();
    for (const text of [JSON.stringify(large), JSON.stringify({ ...large, more: large.records }), 'x'.repeat(ASYNC_COMPRESS_BYTES - 1), '{"a":1}']) {
      expect((await encodeDocumentAsync(text)).equals(encodeDocument(text))).toBe(true);
    }
    expect(JSON.stringify(large).length).toBeGreaterThan(ASYNC_COMPRESS_BYTES);
  });

  test('a damaged compressed state document reads as CORRUPT_MANIFEST; prune then removes no object; verify names it', async () => {
    const garbage = await store.putBytes(Buffer.from('referenced by nothing\n'));
    await store.writeState('picture-cache', large, { durable: false });
    await damage(path.join(store.root, 'state', 'picture-cache.json'));
    await expect(store.readState('picture-cache')).rejects.toSatisfy((e) => isCheckpointError(e, 'CORRUPT_MANIFEST'));
    await ageStore(store);
    store = await openStore(box);
    const report = await store.prune();
    expect(report.removedObjects).toBe(0);
    expect(await store.hasObject(garbage.object)).toBe(true);
    const verify = await store.verify();
    expect(verify.problems.some((problem) => problem.path?.endsWith('picture-cache.json') && /does not decode/.test(problem.detail))).toBe(true);
    await store.close();
  });

  test('a large manifest is stored compressed and reads back; a damaged one is CORRUPT_MANIFEST, named by verify, and keeps every object', async () => {
    const { id, objects } = await checkpointWith(80);
    const file = path.join(store.root, 'checkpoints', `${id}.json`);
    expect((await readFile(file))[0]).toBe(0);
    expect((await store.manifest(id)).entries.map((entry) => entry.path)).toHaveLength(80);
    expect((await store.list()).map((meta) => meta.id)).toEqual([id]);
    await damage(file);
    const reopened = await openStore(box);
    try {
      await expect(reopened.manifest(id)).rejects.toSatisfy((e) => isCheckpointError(e, 'CORRUPT_MANIFEST'));
      expect((await reopened.verify()).problems.some((problem) => problem.kind === 'manifest' && problem.id === id)).toBe(true);
    } finally {
      await reopened.close();
    }
    await ageStore(store);
    const later = await openStore(box);
    try {
      await later.prune();
      for (const object of objects) expect(await later.hasObject(object)).toBe(true);
    } finally {
      await later.close();
    }
  });
});
