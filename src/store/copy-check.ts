import { fstatSync, statSync } from 'node:fs';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import type { LooseObjects } from './loose-objects.js';
import { parseObjectKey } from './object-codec.js';
import type { PackIndex } from './pack-index.js';
import { BLOCK_MEMBER_MAX_BYTES } from './pack-format.js';
import { confirmationOf, readRecord, type PackFile, type PackLoc } from './packs.js';

// The copy check of a picture (issue #27): before a picture references a stored copy again
// without reading its file, the copy must have been seen good. See `ObjectStore.copyCheck`.

/** `PackLoc.confirmed` of a record a read found damaged: never referenced again. */
export const DAMAGED_RECORD = -1;

/** Records found damaged in this process so far (any store): each ends every copy epoch. */
let damagedMarks = 0;

/** Marks the record at `loc` (its block, for a member) damaged: never referenced again. */
export function markDamaged(loc: PackLoc): void {
  confirmationOf(loc).confirmed = DAMAGED_RECORD;
  damagedMarks += 1;
}

/** How many records this process has found damaged (see `PackIndex.copyEpoch`). */
export function damageMarks(): number {
  return damagedMarks;
}

/** What a pack file is on disk now (inode, size, ctime, mtime), or undefined when it is gone. */
export function packIdentity(file: string, fd?: number): string | undefined {
  try {
    const stats = fd !== undefined ? fstatSync(fd) : statSync(file);
    return `${stats.ino}:${stats.size}:${stats.ctimeMs}:${stats.mtimeMs}`;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * True when some stored copy of `key` is good: one of its pack records ({@link confirmRecord}),
 * or its loose file (`LooseObjects.confirm`, then told to `onLoose`). Runs once per file a
 * picture reuses, unless the picture's copies were all seen good in the store's current copy epoch.
 */
export function confirmCopy(key: string, round: number, packs: PackIndex, loose: LooseObjects, ownPack: PackFile | undefined, onLoose?: (key: string) => void): boolean {
  // The index first: a packed key needs no parse.
  let head = packs.head(key);
  const parsed = head === undefined ? parseObjectKey(key) : undefined;
  if (head === undefined) {
    if (parsed === undefined) return false;
    if (parsed.size <= BLOCK_MEMBER_MAX_BYTES) {
      packs.refreshSoon();
      head = packs.head(key);
    }
  }
  if (head !== undefined) {
    for (let loc: PackLoc | undefined = head; loc; loc = loc.next) if (confirmRecord(loc, round, ownPack)) return true;
    return false;
  }
  if (parsed === undefined || !loose.confirm(key, parsed)) return false;
  onLoose?.(key);
  return true;
}

/**
 * True when the record at `loc` is good: confirmed in its pack's current epoch (read back and
 * checksummed, written by this process, or sealed with the identity the pack still has), or read
 * and checksummed now. The pack's identity is looked at once per check `round`: a change since it
 * was last seen (someone wrote to the file) starts a new epoch, in which every record is read again.
 * `ownPack`: this process's pack, whose write descriptor is not the read one.
 */
export function confirmRecord(loc: PackLoc, round: number, ownPack: PackFile | undefined): boolean {
  const pack = loc.pack;
  // A block's members are confirmed (or found damaged) together: one read of the block for all.
  const holder = confirmationOf(loc);
  if (pack.gone || holder.confirmed === DAMAGED_RECORD) return false;
  if (pack.confirmRound !== round) {
    pack.confirmRound = round;
    const identity = packIdentity(pack.path, pack === ownPack ? undefined : pack.readFd);
    if (identity === undefined) return false;
    if (identity !== pack.confirmedIdentity) {
      pack.confirmedIdentity = identity;
      pack.confirmEpoch = (pack.confirmEpoch ?? 0) + 1;
    }
  }
  const epoch = pack.confirmEpoch ?? 0;
  if (holder.confirmed === epoch) return true;
  try {
    if (loc.block !== undefined) readRecord(loc, true);
    else readRecord(loc);
  } catch (error) {
    if (!isCheckpointError(error, 'INTEGRITY')) throw error;
    if (error.found !== 'missing') markDamaged(loc);
    return false;
  }
  holder.confirmed = epoch;
  return true;
}
