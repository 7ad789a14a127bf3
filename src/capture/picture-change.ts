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

/** Notes `change` for `records`, a picture's map that is never changed from now on. */
export function noteChange(records: ReadonlyMap<string, PictureRecord>, change: PictureChange): void {
  changes.set(records, change);
}
