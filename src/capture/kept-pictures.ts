import type { ResolvedCoverage } from './coverage.js';
import type { IgnoreStack } from './coverage.js';
import type { PictureRecord } from './picture.js';
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

const kept = new Map<string, KeptPictures>();

/** The key of a keeper's project: its store, its root and the coverage rules (as data). */
export function keptPicturesKey(storeRoot: string, projectRoot: string, coverage: ResolvedCoverage): string {
  return `${storeRoot}\u0000${projectRoot}\u0000${JSON.stringify(coverage)}`;
}

/** Leaves `state` for the next keeper of `key`, dropping the oldest project past the bound. */
export function keepPictures(key: string, state: KeptPictures): void {
  kept.delete(key);
  kept.set(key, state);
  for (const oldKey of kept.keys()) {
    if (kept.size <= MAX_KEPT) break;
    kept.delete(oldKey);
  }
}

/** Takes what a closed keeper of `key` left, if anything (no other keeper finds it after). */
export function takeKeptPictures(key: string): KeptPictures | undefined {
  const state = kept.get(key);
  kept.delete(key);
  return state;
}
