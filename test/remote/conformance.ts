import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { BackendEntry, StoreBackend } from '../../src/remote/backend.js';
import { testSeed } from '../helpers/seed.js';

// The one conformance suite every store backend passes (issue #16): the directory backend, and
// the S3 backend against a real S3 API server (Ceph's RADOS Gateway). Each test gets a backend
// of its own, empty.

async function listed(backend: StoreBackend, prefix: string): Promise<BackendEntry[]> {
  const out: BackendEntry[] = [];
  for await (const entry of backend.list(prefix)) out.push(entry);
  return out;
}

/** Keys made of 1–3 segments of the allowed characters. */
const keyArbitrary = fc
  .array(fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,11}$/).filter((s) => s !== '.' && s !== '..'), { minLength: 1, maxLength: 3 })
  .map((segments) => segments.join('/'));

/**
 * Runs the conformance suite against the backends `fresh` makes (a new, empty one per test).
 * `slow`: a backend over the network, where the property runs take fewer cases.
 */
export function backendConformance(name: string, fresh: () => Promise<StoreBackend>, options: { slow?: boolean } = {}): void {
  const runs = options.slow === true ? 12 : 60;
  describe(`${name}: the store backend conformance suite`, () => {
    it('create, get and head round-trip any bytes under any valid key; a second create leaves the first bytes', async () => {
      const backend = await fresh();
      await fc.assert(
        fc.asyncProperty(keyArbitrary, fc.uint8Array({ maxLength: 4096 }), fc.uint8Array({ minLength: 1, maxLength: 64 }), async (key, bytes, other) => {
          // A key that is a folder of an earlier key (or the other way round) is a separate key on S3, not on a disk: keep them apart.
          const unique = `${key}/${randomBytes(4).toString('hex')}`;
          expect(await backend.create(unique, bytes)).toBe('created');
          expect(await backend.create(unique, other)).toBe('exists');
          expect(Buffer.compare((await backend.get(unique)) as Buffer, Buffer.from(bytes))).toBe(0);
          expect(await backend.head(unique)).toEqual({ size: bytes.length });
        }),
        { seed: testSeed(16_001), numRuns: runs },
      );
    });

    it('of many creates of one key at once exactly one lands, and its bytes are what is read', async () => {
      const backend = await fresh();
      for (let round = 0; round < 3; round++) {
        const key = `race/${round}`;
        const payloads = Array.from({ length: 8 }, (_, i) => Buffer.from(`writer ${i} of round ${round} `.repeat(50 + i)));
        const answers = await Promise.all(payloads.map((bytes) => backend.create(key, bytes)));
        expect(answers.filter((a) => a === 'created')).toHaveLength(1);
        const winner = payloads[answers.indexOf('created')] as Buffer;
        expect(((await backend.get(key)) as Buffer).equals(winner)).toBe(true);
      }
    });

    it('put replaces whole; missing keys read as nothing; delete is idempotent; a deleted key can be created again', async () => {
      const backend = await fresh();
      expect(await backend.get('state/absent.json')).toBeUndefined();
      expect(await backend.head('state/absent.json')).toBeUndefined();
      await backend.delete('state/absent.json');
      await backend.put('state/doc.json', Buffer.from('{"v":1}'));
      await backend.put('state/doc.json', Buffer.from('{"v":2,"longer":true}'));
      expect((await backend.get('state/doc.json'))?.toString()).toBe('{"v":2,"longer":true}');
      expect(await backend.create('state/doc.json', Buffer.from('no'))).toBe('exists');
      await backend.delete('state/doc.json');
      await backend.delete('state/doc.json');
      expect(await backend.get('state/doc.json')).toBeUndefined();
      expect(await backend.create('state/doc.json', Buffer.from('again'))).toBe('created');
      expect((await backend.get('state/doc.json'))?.toString()).toBe('again');
    });

    it('lists every key under a prefix in byte order, past one page (1,000 keys on S3), a partial segment included', async () => {
      const backend = await fresh();
      const keys: string[] = [];
      for (let i = 0; i < 1005; i++) keys.push(`objects/${(i * 7919) % 1009}`.padEnd(12, 'x'));
      keys.push('objects-other/1', 'manifests/A.json', 'manifests/B.json', 'objects/ab/deeper');
      const unique = [...new Set(keys)];
      for (let i = 0; i < unique.length; i += 50) await Promise.all(unique.slice(i, i + 50).map((key) => backend.create(key, Buffer.from(key))));
      const all = await listed(backend, '');
      expect(all.map((e) => e.key)).toEqual([...unique].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      expect(all.every((e) => e.size === Buffer.byteLength(e.key))).toBe(true);
      const objects = (await listed(backend, 'objects/')).map((e) => e.key);
      expect(objects).toHaveLength(unique.filter((k) => k.startsWith('objects/')).length);
      // A prefix that ends inside a segment matches keys whose segment starts with it.
      expect((await listed(backend, 'objects')).length).toBe(objects.length + 1);
      expect((await listed(backend, 'manifests/A')).map((e) => e.key)).toEqual(['manifests/A.json']);
      expect(await listed(backend, 'nothing-here/')).toEqual([]);
    });

    it('an object over 5 MiB (multipart on S3) round-trips, and its second create is refused', async () => {
      const backend = await fresh();
      const big = randomBytes(5 * 1024 * 1024 + 123_457);
      expect(await backend.create('objects/big', big)).toBe('created');
      expect(((await backend.get('objects/big')) as Buffer).equals(big)).toBe(true);
      expect(await backend.head('objects/big')).toEqual({ size: big.length });
      expect(await backend.create('objects/big', Buffer.from('small'))).toBe('exists');
      expect(((await backend.get('objects/big')) as Buffer).equals(big)).toBe(true);
      // Streamed, the same bytes, in more than one piece; nothing there streams as nothing.
      const pieces: Buffer[] = [];
      for await (const piece of (await backend.getStream('objects/big')) ?? []) pieces.push(Buffer.from(piece));
      expect(pieces.length).toBeGreaterThan(1);
      expect(Buffer.concat(pieces).equals(big)).toBe(true);
      expect(await backend.getStream('objects/not-there')).toBeUndefined();
    });

    it('bad keys and prefixes are typed errors that write nothing', async () => {
      const backend = await fresh();
      const bad: unknown[] = ['', '/lead', 'trail/', 'a//b', 'a/./b', 'a/../b', '..', 'sp ace', 'nul\u0000', 'é', 'x'.repeat(513), 7, null, undefined];
      for (const key of bad) {
        for (const call of [() => backend.create(key as string, Buffer.from('x')), () => backend.put(key as string, Buffer.from('x')), () => backend.get(key as string), () => backend.head(key as string), () => backend.delete(key as string)]) {
          const error = await call().then(() => undefined, (e: unknown) => e);
          expect(isCheckpointError(error, 'INVALID_ARGUMENT'), `${JSON.stringify(key)}`).toBe(true);
        }
      }
      for (const prefix of ['/x', 'a//', '../', 5]) {
        const error = await listed(backend, prefix as string).then(() => undefined, (e: unknown) => e);
        expect(isCheckpointError(error, 'INVALID_ARGUMENT'), `${JSON.stringify(prefix)}`).toBe(true);
      }
      expect(await listed(backend, '')).toEqual([]);
    });

    it('touch keeps the bytes and reports what is missing; listings carry sizes and times', async () => {
      const backend = await fresh();
      const startedAt = Date.now();
      expect(await backend.touch('objects/none')).toBe(false);
      await backend.create('objects/t', Buffer.from('kept as it is'));
      const [before] = await listed(backend, 'objects/t');
      expect(await backend.touch('objects/t')).toBe(true);
      const [after] = await listed(backend, 'objects/t');
      expect((await backend.get('objects/t'))?.toString()).toBe('kept as it is');
      expect(after?.size).toBe(13);
      expect(after?.modifiedAt).toBeGreaterThanOrEqual(before?.modifiedAt ?? Number.POSITIVE_INFINITY);
      // The backend's clock, within a minute of this one's (S3 keeps whole seconds).
      expect(Math.abs((after?.modifiedAt ?? 0) - startedAt)).toBeLessThan(60_000);
    });

    it('an aborted signal stops a call before it writes', async () => {
      const backend = await fresh();
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      await expect(backend.create('objects/aborted', Buffer.from('x'), { signal: controller.signal })).rejects.toThrow();
      await expect(backend.put('state/aborted', Buffer.from('x'), { signal: controller.signal })).rejects.toThrow();
      expect(await listed(backend, '')).toEqual([]);
    });
  });
}
