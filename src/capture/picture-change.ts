import type { PictureRecord } from './picture.js';

// What a picture's map changed from the map it was built over: noted by the picture (picture.ts),
// read by every consumer of consecutive pictures that would otherwise pass over every record.

/**
 * What a picture's map changed from the map it was built over ({@link pictureChange}): every path
 * whose record may not be `from`'s own object (a new record, one gone, or one not reused).
 */
export interface PictureChange {
  from: ReadonlyMap<string, PictureRecord>;
  paths: readonly string[];
}

const changes = new WeakMap<ReadonlyMap<string, PictureRecord>, PictureChange>();

/**
 * The change a picture's map holds against the map its picture was built over (the cache it
 * reused): the consumers of consecutive pictures (the delta against the persisted base, the stat
 * cache's save, the coverage counts) take it instead of a pass over every record. `undefined` when
 * not known.
 */
export function pictureChange(records: ReadonlyMap<string, PictureRecord>): PictureChange | undefined {
  return changes.get(records);
}

/**
 * Notes `change` for `records`, a picture's map that is never changed from now on. A change naming
 * more than half of the map is not kept: a pass over the map costs at most twice as much as one over
 * the change, and its list would be held as long as the map (a first picture over an empty cache
 * names every path: 250,000 strings, some of them copies of the records' own).
 */
export function noteChange(records: ReadonlyMap<string, PictureRecord>, change: PictureChange): void {
  if (change.paths.length > Math.max(MIN_KEPT_CHANGE, records.size / 2)) return;
  changes.set(records, change);
}

/** Below this many paths a change is always kept (a small map's whole pass is cheap either way). */
const MIN_KEPT_CHANGE = 64;
