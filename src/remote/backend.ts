import { CheckpointError } from '../core/errors.js';

// The one narrow interface a store backend implements (issue #16): what the store keeps once it
// leaves the machine — content-addressed objects, manifests written once under unique names, the
// small state documents — as bytes under keys, listed by prefix, deleted. In the spirit of
// unstorage's drivers: a handful of methods, the optional abilities declared, and one
// conformance suite (test/remote/conformance.ts) that every backend passes. Nothing here knows
// about checkpoints; the layer above decides which key holds what.

/** A key: `/`-separated segments of letters, digits, `.`, `_` and `-`; never `.` or `..`. */
export type BackendKey = string;

/** One listed key. */
export interface BackendEntry {
  key: BackendKey;
  /** Bytes stored under it. */
  size: number;
  /** When it was last written or touched, in epoch milliseconds (the backend's clock). */
  modifiedAt: number;
}

/** What a backend can do beyond the methods every backend has. */
export interface BackendCapabilities {
  /**
   * {@link StoreBackend.create} is atomic across every writer of the backend, on every machine:
   * of two creates of one key at once, exactly one answers `created`. A backend that cannot
   * promise it (an S3 server that ignores conditional writes) refuses to open instead.
   */
  readonly atomicCreate: boolean;
  /** A write is on the backend's stable storage when its call returns (not only in a cache). */
  readonly durableWrites: boolean;
}

/** Options every call takes. */
export interface BackendCallOptions {
  /** Aborts the call: it rejects with the signal's reason, and a write may or may not have landed. */
  signal?: AbortSignal;
}

/** The interface of a store backend: bytes under keys. */
export interface StoreBackend {
  /** Where the backend keeps its keys, for messages: `file:///…` or `s3://bucket/prefix`. */
  readonly location: string;
  readonly capabilities: BackendCapabilities;
  /**
   * Stores `bytes` under `key` only when nothing is there yet: `created`, or `exists` with what
   * was there left untouched. Readers see the whole object or nothing, never a part.
   * @throws CheckpointError `INVALID_ARGUMENT` for a bad key; `REMOTE_UNAVAILABLE`, `REMOTE_REFUSED`.
   */
  create(key: BackendKey, bytes: Uint8Array, options?: BackendCallOptions): Promise<'created' | 'exists'>;
  /**
   * Stores `bytes` under `key`, replacing what was there (readers see the old or the new bytes,
   * never a mix). Only for the small state documents: objects and manifests are created once.
   */
  put(key: BackendKey, bytes: Uint8Array, options?: BackendCallOptions): Promise<void>;
  /** The bytes under `key`, or `undefined` when there is nothing. */
  get(key: BackendKey, options?: BackendCallOptions): Promise<Buffer | undefined>;
  /**
   * The bytes under `key` as they arrive, for an object too large to hold whole (a bundle), or
   * `undefined` when there is nothing. A failure part way through is thrown by the iteration, typed
   * as `get`'s are.
   */
  getStream(key: BackendKey, options?: BackendCallOptions): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** The size of what is under `key`, or `undefined` when there is nothing (no bytes read). */
  head(key: BackendKey, options?: BackendCallOptions): Promise<{ size: number } | undefined>;
  /**
   * Every key starting with `prefix` (`''`: all), in ascending byte order of the key, however
   * many there are (a backend that pages follows every page).
   */
  list(prefix: string, options?: BackendCallOptions): AsyncIterable<BackendEntry>;
  /**
   * Marks `key` as just written, without changing its bytes, so a prune that spares young keys
   * spares it (as git freshens an object it reuses); `false` when nothing is there.
   */
  touch(key: BackendKey, options?: BackendCallOptions): Promise<boolean>;
  /** Removes `key`; nothing there is fine. */
  delete(key: BackendKey, options?: BackendCallOptions): Promise<void>;
  /** Lets go of connections and handles; the backend is not used after. */
  close(): void;
}

/** Longest key a backend accepts (S3 allows 1,024 bytes, prefix included). */
export const MAX_KEY_LENGTH: number = 512;

const SEGMENT = /^[A-Za-z0-9._-]+$/;

/**
 * `key` when it is a valid {@link BackendKey}.
 * @throws CheckpointError `INVALID_ARGUMENT` naming what is wrong.
 */
export function checkKey(key: unknown): BackendKey {
  if (typeof key !== 'string' || key.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'a backend key must be a non-empty string');
  if (key.length > MAX_KEY_LENGTH) throw new CheckpointError('INVALID_ARGUMENT', `a backend key is at most ${MAX_KEY_LENGTH} characters`, { found: String(key.length) });
  for (const segment of key.split('/')) {
    if (!SEGMENT.test(segment) || segment === '.' || segment === '..') {
      throw new CheckpointError('INVALID_ARGUMENT', 'a backend key is `/`-separated segments of letters, digits, `.`, `_` and `-` (never `.` or `..`)', { path: key });
    }
  }
  return key;
}

/**
 * `prefix` when it is a valid list prefix: empty, or a key with or without a trailing `/`.
 * @throws CheckpointError `INVALID_ARGUMENT`.
 */
export function checkPrefix(prefix: unknown): string {
  if (prefix === '') return '';
  if (typeof prefix !== 'string') throw new CheckpointError('INVALID_ARGUMENT', 'a list prefix must be a string');
  checkKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  return prefix;
}
