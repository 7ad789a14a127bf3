import { mkdir, readFile, readdir, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import xxhash from 'xxhash-wasm';
import * as path from 'node:path';
import fc from 'fast-check';
import { beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { BROTLI, baseObjectKey, decodeObject, parseObjectKey } from '../../src/store/object-codec.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { ageStore, openStore, storedObject, type Sandbox, storePerTest } from './helpers.js';
import { storeFile, storeFileSync } from '../../src/capture/stable-read.js';

const fixture = storePerTest();
let box: Sandbox;
let store: CheckpointStore;
beforeEach(async () => {
  ({ box, store } = fixture);
  await loadHasher();
});

function objectFile(key: string): string {
  return path.join(store.root, 'objects', 'v1', key.slice(0, 2), key);
}

describe('objects', () => {
  test('random byte arrays round trip and dedupe to the same key', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 5000 }), async (bytes) => {
        const ref = await store.putBytes(bytes);
        expect(ref.size).toBe(bytes.length);
        expect(ref.hash).toBe(contentHash(bytes));
        expect(ref.object).toBe(baseObjectKey(ref.hash, bytes.length));
        const back = await store.readObject(ref.object);
        expect(Buffer.compare(back, Buffer.from(bytes))).toBe(0);
        const again = await store.putBytes(Buffer.from(bytes));
        expect(again.object).toBe(ref.object);
      }),
      { numRuns: 60 },
    );
  });

  test('compressible content is stored deflated, random content raw', async () => {
    const text = Buffer.from('hello turnback\n'.repeat(2000));
    const random = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + ((i * i) >> 3)) & 0xff));
    const small = Buffer.from('x'.repeat(500));
    const textRef = await store.putBytes(text);
    const randomRef = await store.putBytes(random);
    const smallRef = await store.putBytes(small);
    const storedText = (await storedObject(store, textRef.object)).stored;
    expect(storedText[0]).toBe(1);
    expect(storedText.length).toBeLessThan(text.length / 10);
    const storedSmall = (await storedObject(store, smallRef.object)).stored;
    expect(storedSmall[0]).toBe(0);
    expect(storedSmall.length).toBe(small.length + 1);
    expect(Buffer.compare(decodeObject(storedText, text.length), text)).toBe(0);
    expect(Buffer.compare(await store.readObject(textRef.object), text)).toBe(0);
    expect(Buffer.compare(await store.readObject(randomRef.object), random)).toBe(0);
  });

  test('concurrent puts of the same bytes share one object', async () => {
    const bytes = Buffer.from('same content '.repeat(300));
    const refs = await Promise.all(Array.from({ length: 8 }, () => store.putBytes(bytes)));
    expect(new Set(refs.map((r) => r.object)).size).toBe(1);
    expect((await store.listObjects()).length).toBe(1);
  });

  test('a hash collision on an existing key gets the next suffix and reads back its own bytes', async () => {
    const mine = Buffer.from('the content being stored');
    const key = baseObjectKey(contentHash(mine), mine.length);
    // Fabricate a different object already sitting under the same key (same size, other bytes).
    const impostor = Buffer.from('another content, same size'.slice(0, mine.length).padEnd(mine.length, '!'));
    expect(Buffer.compare(impostor, mine)).not.toBe(0);
    await mkdir(path.dirname(objectFile(key)), { recursive: true });
    await writeFile(objectFile(key), Buffer.concat([Buffer.of(0), impostor]));
    const ref = await store.putBytes(mine);
    expect(ref.object).toBe(`${key}.1`);
    expect(parseObjectKey(ref.object)).toEqual({ hash: contentHash(mine), size: mine.length, suffix: 1 });
    expect(Buffer.compare(await store.readObject(ref.object), mine)).toBe(0);
    // The same content again finds its suffixed copy.
    expect((await store.putBytes(mine)).object).toBe(`${key}.1`);
    // The impostor under the bare key is never returned as if it were ours.
    await expect(store.readObject(key)).rejects.toSatisfy((e) => isCheckpointError(e, 'INTEGRITY'));
  });

  test('a tampered pack record reads as INTEGRITY, never as wrong bytes', async () => {
    const bytes = Buffer.from('abcdefghij'.repeat(10));
    const ref = await store.putBytes(bytes);
    const where = await storedObject(store, ref.object);
    expect(path.basename(path.dirname(where.file))).toBe('packs');
    const original = await readFile(where.file);
    // A flipped byte: the record checksum catches it.
    const flippedPack = Buffer.from(original);
    const last = where.storedOffset + where.stored.length - 1;
    flippedPack[last] = (flippedPack[last] as number) ^ 0xff;
    await writeFile(where.file, flippedPack);
    const flipped = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(flipped, 'INTEGRITY')).toBe(true);
    expect(flipped).toMatchObject({ expected: ref.object, path: where.file });
    // A forged record whose checksum was recomputed: the content hash still catches it.
    const { h32Raw } = await xxhash();
    const sumAt = where.recordOffset + where.recordLength - 4;
    flippedPack.writeUInt32LE(h32Raw(flippedPack.subarray(where.recordOffset, sumAt)) >>> 0, sumAt);
    await writeFile(where.file, flippedPack);
    const forged = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(forged, 'INTEGRITY')).toBe(true);
    expect(forged).toMatchObject({ expected: ref.hash });
    // A truncated pack: the record is short.
    await writeFile(where.file, original);
    await truncate(where.file, where.storedOffset + 20);
    const truncated = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(truncated, 'INTEGRITY')).toBe(true);
    expect(String((truncated as Error).message)).toMatch(/truncated/);
  });

  test('a tampered loose object reads as INTEGRITY, never as wrong bytes', async () => {
    const bytes = Buffer.from('abcdefghij'.repeat(30_000));
    const ref = await store.putBytes(bytes);
    const file = objectFile(ref.object);
    const stored = await readFile(file);
    expect(stored[0]).toBe(BROTLI);
    const raw = Buffer.concat([Buffer.of(0), bytes]);
    raw[raw.length - 1] = (raw[raw.length - 1] as number) ^ 0xff;
    await writeFile(file, raw);
    const flipped = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(flipped, 'INTEGRITY')).toBe(true);
    expect(flipped).toMatchObject({ expected: ref.hash });
    await writeFile(file, raw.subarray(0, 20));
    const truncated = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(truncated, 'INTEGRITY')).toBe(true);
    expect(truncated).toMatchObject({ expected: String(bytes.length), found: '19' });
  });

  test('a deflate bomb in place of an object is INTEGRITY after decoding at most the size its key names', async () => {
    const bytes = Buffer.from('0123456789'.repeat(40_000));
    const ref = await store.putBytes(bytes);
    // 512 MiB of zeros, deflated (streamed, one zero MiB at a time) to about half a megabyte,
    // where a 400 KB object should be.
    const { createDeflateRaw } = await import('node:zlib');
    const deflate = createDeflateRaw({ level: 9 });
    const parts: Buffer[] = [];
    deflate.on('data', (chunk: Buffer) => parts.push(chunk));
    const zeros = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 512; i++) if (!deflate.write(zeros)) await new Promise((resolve) => deflate.once('drain', resolve));
    await new Promise((resolve) => deflate.end(resolve));
    const bomb = Buffer.concat(parts);
    expect(bomb.length).toBeLessThan(1024 * 1024);
    await writeFile(objectFile(ref.object), Buffer.concat([Buffer.of(1), bomb]));
    const before = process.memoryUsage().rss;
    const error = await store.readObject(ref.object).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'INTEGRITY')).toBe(true);
    expect(error).toMatchObject({ found: 'undecodable' });
    // Decoding stopped one byte past the key's size: nowhere near the gigabyte the bomb holds.
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    expect(decodeObject(Buffer.concat([Buffer.of(0), bytes]), bytes.length)).toEqual(bytes);
  });

  test('a missing object is INTEGRITY with its path', async () => {
    const key = baseObjectKey('0123456789abcdef', 10);
    const error = await store.readObject(key).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'INTEGRITY')).toBe(true);
    expect((error as { path: string }).path).toBe(objectFile(key));
    expect(await store.hasObject(key)).toBe(false);
    await expect(store.readObject('../../etc/passwd')).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
  });

  test('putFile stores a file with its mode and refuses symlinks and stale expectations', async () => {
    const file = path.join(box.project, 'a.txt');
    await writeFile(file, 'file body\n', { mode: 0o640 });
    const info = await stat(file);
    const ref = await storeFile(store, file, { size: info.size, mtimeMs: info.mtimeMs });
    expect(ref.mode).toBe(info.mode & 0o7777);
    expect((await store.readObject(ref.object)).toString()).toBe('file body\n');
    expect(await store.hasObject(ref.object)).toBe(true);
    await expect(storeFile(store, file, { size: 3 })).rejects.toSatisfy((e) => isCheckpointError(e, 'CONFLICT'));
    await expect(storeFile(store, file, { hash: '0000000000000000' })).rejects.toSatisfy((e) => isCheckpointError(e, 'CONFLICT'));
    const { symlink } = await import('node:fs/promises');
    await symlink(file, path.join(box.project, 'link'));
    await expect(storeFile(store, path.join(box.project, 'link'))).rejects.toSatisfy((e) => isCheckpointError(e, 'CONFLICT'));
    await expect(storeFile(store, path.join(box.project, 'missing'))).rejects.toSatisfy((e) => isCheckpointError(e, 'CONFLICT'));
    await expect(storeFile(store, box.project)).rejects.toSatisfy((e) => isCheckpointError(e, 'CONFLICT'));
    await expect(storeFile(store, 'relative.txt')).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
  });

  test('putFileSync trusts a fresh stat for the time before the read, and refuses any file that differs from it', async () => {
    const file = path.join(box.project, 'b.txt');
    await writeFile(file, 'twelve bytes', { mode: 0o600 });
    const info = await stat(file);
    const expected = { size: info.size, mtimeMs: info.mtimeMs };
    // The first put loads the store; after it the synchronous path is open.
    const viaPromise = await storeFile(store, file, expected);
    const ref = storeFileSync(store, file, expected);
    expect(ref).toEqual(viaPromise);
    expect(ref?.mode).toBe(0o600);
    const old = new Date(info.mtimeMs);
    // Grew or shrank with the recorded mtime put back: the size seen after the read tells. The
    // same size with other bytes shows in the mtime (not put back here).
    await writeFile(file, 'twelve bytes and more');
    await utimes(file, old, old);
    expect(() => storeFileSync(store, file, expected)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    await writeFile(file, 'short');
    await utimes(file, old, old);
    expect(() => storeFileSync(store, file, expected)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    await writeFile(file, 'TWELVE BYTES');
    expect(() => storeFileSync(store, file, expected)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    expect(() => storeFileSync(store, box.project, { size: 4096, mtimeMs: 1 })).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    const { symlink } = await import('node:fs/promises');
    await symlink(file, path.join(box.project, 'link-b'));
    expect(() => storeFileSync(store, path.join(box.project, 'link-b'), expected)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    // Over the pack limit: not taken here, left to putFile.
    const big = path.join(box.project, 'big.bin');
    await writeFile(big, Buffer.alloc(300 * 1024, 1));
    const bigInfo = await stat(big);
    expect(storeFileSync(store, big, { size: bigInfo.size, mtimeMs: bigInfo.mtimeMs })).toBeUndefined();
    expect(() => storeFileSync(store, 'relative.txt')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  test('a dedupe hit on an old pack stores a fresh copy so a concurrent prune keeps it', async () => {
    const bytes = Buffer.from('reused content');
    const ref = await store.putBytes(bytes);
    await ageStore(store);
    const packs = async (): Promise<string[]> => (await readdir(path.join(store.root, 'objects', 'packs'))).filter((n) => n.endsWith('.pack'));
    expect(await packs()).toHaveLength(1);
    const reopened = await openStore(box);
    expect((await reopened.putBytes(bytes)).object).toBe(ref.object);
    // The old pack (older than the grace period) may be pruned; the new copy lives in a fresh pack.
    expect(await packs()).toHaveLength(2);
    expect((await reopened.prune()).removedObjects).toBe(0);
    expect(Buffer.compare(await reopened.readObject(ref.object), bytes)).toBe(0);
    // A fresh pack's hit is referenced as is (no copy).
    expect((await reopened.putBytes(bytes)).object).toBe(ref.object);
    expect((await reopened.listObjects()).filter((info) => info.key === ref.object)).toHaveLength(1);
    await reopened.close();
  });

  test('a dedupe hit on an old loose object refreshes its mtime so a concurrent prune keeps it', async () => {
    const bytes = Buffer.from('reused large content\n'.repeat(20_000));
    const ref = await store.putBytes(bytes);
    const old = new Date(Date.now() - 60 * 60_000);
    await utimes(objectFile(ref.object), old, old);
    expect((await store.putBytes(bytes)).object).toBe(ref.object);
    expect((await stat(objectFile(ref.object))).mtimeMs).toBeGreaterThan(old.getTime() + 30 * 60_000);
    expect((await store.prune()).removedObjects).toBe(0);
  });

  test('a large object whose sample does not compress is stored raw, and reads back', async () => {
    const noise = Buffer.allocUnsafe(2 * 1024 * 1024);
    let x = 0x9e3779b9;
    for (let i = 0; i < noise.length; i += 4) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      noise.writeInt32LE(x | 0, i);
    }
    const ref = await store.putBytes(noise);
    const stored = await readFile(objectFile(ref.object));
    expect(stored[0]).toBe(0);
    expect(stored.length).toBe(noise.length + 1);
    expect(Buffer.compare(await store.readObject(ref.object), noise)).toBe(0);
  });

  test('large objects (compressed off the event loop) round trip', async () => {
    const big = Buffer.from('0123456789abcdef\n'.repeat(100_000));
    const ref = await store.putBytes(big);
    expect((await readFile(objectFile(ref.object)))[0]).toBe(BROTLI);
    expect(Buffer.compare(await store.readObject(ref.object), big)).toBe(0);
  });

  test('objects, packs, indexes and folders get owner-only modes', async () => {
    const big = await store.putBytes(Buffer.from('secret\n'.repeat(50_000)));
    expect((await stat(objectFile(big.object))).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(objectFile(big.object)))).mode & 0o777).toBe(0o700);
    const small = await store.putBytes(Buffer.from('secret'));
    const pack = (await storedObject(store, small.object)).file;
    await store.close();
    expect((await stat(pack)).mode & 0o777).toBe(0o600);
    expect((await stat(pack.replace(/\.pack$/, '.idx'))).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(pack))).mode & 0o777).toBe(0o700);
  });
});
