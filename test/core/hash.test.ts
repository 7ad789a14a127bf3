import { randomBytes } from 'node:crypto';
import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { contentHash, createContentHash, loadHasher } from '../../src/core/hash.js';

// contentHash hashes a large input in pieces (the wasm hasher's memory grows to what it is given
// and never shrinks): the digest must be xxh64 of the whole input, as hashing it at once gives.

const PIECE = 4 * 1024 * 1024;

describe('contentHash', () => {
  it('is xxh64 of the whole input on both sides of the piece size, and equals the streaming hash', async () => {
    await loadHasher();
    const reference = await xxhash();
    for (const size of [0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17]) {
      const bytes = randomBytes(size);
      const whole = reference.h64Raw(bytes).toString(16).padStart(16, '0');
      expect(contentHash(bytes), `${size} bytes`).toBe(whole);
      const streaming = createContentHash();
      for (let at = 0; at < size; at += 1_000_003) streaming.update(bytes.subarray(at, at + 1_000_003));
      expect(streaming.digest(), `${size} bytes streamed`).toBe(whole);
    }
  });
});
