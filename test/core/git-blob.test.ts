import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gitBlobId, gitBlobIdOf, gitObjectKey, isGitBlob } from '../../src/core/git-blob.js';

describe('git blob ids', () => {
  it('match git hash-object for seeded contents, and only the exact bytes pass the check', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (array) => {
        const bytes = Buffer.from(array);
        const id = execFileSync('git', ['hash-object', '--stdin'], { input: bytes, encoding: 'utf8' }).trim();
        expect(gitBlobId(bytes)).toBe(id);
        expect(isGitBlob(bytes, id)).toBe(true);
        expect(isGitBlob(Buffer.concat([bytes, Buffer.from('x')]), id)).toBe(false);
      }),
      { seed: Number(process.env.TURNBACK_TEST_SEED ?? 77), numRuns: 25 },
    );
  });
  it('keys: git:<40 or 64 hex digits> only', () => {
    const id = 'a'.repeat(40);
    expect(gitBlobIdOf(gitObjectKey(id))).toBe(id);
    expect(gitBlobIdOf(`git:${'b'.repeat(64)}`)).toBe('b'.repeat(64));
    for (const bad of ['git:abc', `git:${'g'.repeat(40)}`, `${'a'.repeat(16)}-10`, 7, undefined]) expect(gitBlobIdOf(bad)).toBeUndefined();
  });
});
