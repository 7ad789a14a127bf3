import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gitBlobId, gitBlobIdOf, gitObjectKey, isGitBlob, isGitObjectKey } from '../../src/core/git-blob.js';

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
  it('isGitObjectKey says what gitBlobIdOf finds, for keys of every shape near a git key', () => {
    const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-fA-F]{${length}}$`));
    const near = fc.oneof(
      fc.oneof(hex(40), hex(64), hex(39), hex(41), hex(63), hex(65)).map((id) => `git:${id}`),
      fc.tuple(hex(40), fc.constantFrom('', '\n', 'x', ' ')).map(([id, tail]) => `git:${id}${tail}`),
      fc.tuple(fc.constantFrom('Git:', 'git;', ' git:', 'git', ''), hex(40)).map(([head, id]) => `${head}${id}`),
      fc.string(),
      fc.constantFrom<unknown>(undefined, null, 7, { object: 'git:' }),
    );
    fc.assert(
      fc.property(near, (key) => {
        expect(isGitObjectKey(key)).toBe(gitBlobIdOf(key) !== undefined);
      }),
      { seed: Number(process.env.TURNBACK_TEST_SEED ?? 2030), numRuns: 500 },
    );
  });
});
