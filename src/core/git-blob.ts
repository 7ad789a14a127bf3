import { createHash } from 'node:crypto';
import { flatConcat } from './flat-string.js';

// Files recorded by their git blob id rather than a copy in the store: a clean tracked file the
// copy budget would leave without a copy. The key and the check of the bytes against it live
// here, below both the store (which reads such an object from git) and the restore (which
// checks what it writes back).

const GIT_KEY = /^git:([0-9a-f]{40}|[0-9a-f]{64})$/;

/** Every git object key in a text (a document read as text, as prune reads it): global, so use with `match`. */
export const GIT_KEY_SCAN: RegExp = /git:(?:[0-9a-f]{64}|[0-9a-f]{40})(?![0-9a-f])/g;

/** The store key of a file whose bytes are git's blob `id` (40 hex digits for SHA-1, 64 for SHA-256). */
export function gitObjectKey(id: string): string {
  // Flat: a picture holds one such key per file resting on git (a cons string is 32 bytes more).
  return flatConcat('git:', id);
}

/** The blob id inside a git object key, or `undefined` for any other key. */
export function gitBlobIdOf(key: unknown): string | undefined {
  // Asked of every record of every picture: most keys are the store's own, told apart by their first letters.
  if (typeof key !== 'string' || !key.startsWith('git:')) return undefined;
  return GIT_KEY.exec(key)?.[1];
}

/**
 * True when `key` is a git object key ({@link gitBlobIdOf} would find an id), told without making
 * the id: a sweep asks it of every unchanged record.
 */
export function isGitObjectKey(key: unknown): key is string {
  return typeof key === 'string' && key.startsWith('git:') && GIT_KEY.test(key);
}

/** git's id of a blob holding `bytes`: SHA-1 (or SHA-256 for a 64-digit id) of `blob <size>\0` and the bytes. */
export function gitBlobId(bytes: Buffer, algorithm: 'sha1' | 'sha256' = 'sha1'): string {
  return createHash(algorithm).update(`blob ${bytes.length}\u0000`).update(bytes).digest('hex');
}

/** True when `bytes` are exactly the blob `id`. */
export function isGitBlob(bytes: Buffer, id: string): boolean {
  return gitBlobId(bytes, id.length === 64 ? 'sha256' : 'sha1') === id;
}
