import type { CallBaseline } from './baseline.js';
import type { ResolvedCoverage } from './coverage.js';
import type { IgnoreStack } from './coverage.js';
import type { Picture, PictureRecord } from './picture.js';
import type { PictureBase, PersistedRecords } from './picture-persist.js';
import type { ScanMemo } from './scan-memo.js';
import type { WatchedPictures } from './watched-picture.js';

// What a closed picture keeper leaves for the next keeper of the same project in the same process
// (the command server opens an observer per command): its last picture, the scan memo and ignore
// stack that picture was taken with, and the picture base it is persisted against. A keeper adopts
// them only while the store's stat cache and scan index are still the documents that keeper wrote
// or read last — checked by file identity — so another process's pictures in between send the
// next keeper back to the store, as a fresh process goes. Taken, never shared: two keepers of one
// project at once find it once.

/** Entries taken at most once, the oldest dropped past `max` (both maps below are of this kind). */
class TakenOnce<V> {
  readonly #entries = new Map<string, V>();
  constructor(readonly max: number) {}

  /** Leaves `value` under `key`, newest last, dropping the oldest past the bound. */
  keep(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    for (const oldKey of this.#entries.keys()) {
      if (this.#entries.size <= this.max) break;
      this.#entries.delete(oldKey);
    }
  }

  /** Takes what `key` holds, if anything (no one finds it after). */
  take(key: string): V | undefined {
    const value = this.#entries.get(key);
    this.#entries.delete(key);
    return value;
  }
}

/** One closed keeper's state. */
export interface KeptPictures {
  /** The identity of the stat cache and the scan index documents it matches. */
  readonly identities: readonly [string | undefined, string | undefined];
  readonly records: ReadonlyMap<string, PictureRecord>;
  readonly ignoreEpoch: number | undefined;
  readonly base: PictureBase | undefined;
  readonly lastDelta: { records: ReadonlyMap<string, PictureRecord>; base: PictureBase | undefined; delta: PersistedRecords } | undefined;
  readonly memo: ScanMemo;
  readonly ignores: IgnoreStack;
  readonly scanIndexSaved: { revision: number; at: number; tracked: string | undefined };
  /** The token of its last picture, when the process watches the project. */
  readonly watched: WatchedPictures;
}

/** Projects kept at most: each holds a tree's records (about 1 KB a file). */
const MAX_KEPT = 4;

const kept = new TakenOnce<KeptPictures>(MAX_KEPT);

/** The key of a keeper's project: its store, its root and the coverage rules (as data). */
export function keptPicturesKey(storeRoot: string, projectRoot: string, coverage: ResolvedCoverage): string {
  return `${storeRoot}\u0000${projectRoot}\u0000${JSON.stringify(coverage)}`;
}

/** Leaves `state` for the next keeper of `key`, dropping the oldest project past the bound. */
export function keepPictures(key: string, state: KeptPictures): void {
  kept.keep(key, state);
}

/** Takes what a closed keeper of `key` left, if anything (no other keeper finds it after). */
export function takeKeptPictures(key: string): KeptPictures | undefined {
  return kept.take(key);
}

// A call's before picture, kept by the process that wrote the call's baseline, for its after event
// in the same process (an agent's hooks served by one server: each event opens an observer of
// its own, so the call is not open in the observer that ends it). The after event takes it
// instead of reading the baseline's picture base back from the store, so unchanged records are
// the before picture's own objects and the diff compares identities. Taken only for the very
// document written — its file identity (a document is replaced by rename, see
// `stateIdentity`) and its contents' stamp — else the store is read, as another process would.

/** The before picture of a call whose baseline this process wrote. */
export interface KeptCallPicture {
  /** The baseline document's identity right after it was written. */
  readonly identity: string;
  /** The baseline as written: a document read back must be this one. */
  readonly baseline: CallBaseline;
  /** The picture the baseline was written from (treat as read-only). */
  readonly picture: Pick<Picture, 'records' | 'unchecked' | 'partial' | 'gaps' | 'ignoredPaths' | 'ignoreEpoch'>;
}

/**
 * Call pictures kept at most. Each is usually the map the keeper holds anyway (a call's picture
 * is the project's newest), so one costs little; a call whose after event never comes is dropped
 * past the bound.
 */
const MAX_CALL_PICTURES = 8;

const callPictures = new TakenOnce<KeptCallPicture>(MAX_CALL_PICTURES);

/** The key of a call's kept picture: its store and the baseline's state document name. */
export function keptCallKey(storeRoot: string, stateName: string): string {
  return `${storeRoot}\u0000${stateName}`;
}

/** Keeps the before picture of the call whose baseline is `key`, dropping the oldest past the bound. */
export function keepCallPicture(key: string, entry: KeptCallPicture): void {
  callPictures.keep(key, entry);
}

/** Takes the kept before picture of `key`, if any (no one finds it after). */
export function takeCallPicture(key: string): KeptCallPicture | undefined {
  return callPictures.take(key);
}

/** Forgets the kept before picture of `key` (its call was dropped or ended here). */
export function dropCallPicture(key: string): void {
  callPictures.take(key);
}
