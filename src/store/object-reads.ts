import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { contentHash } from '../core/hash.js';
import { readMember } from './block-codec.js';
import { DAMAGED_RECORD } from './copy-check.js';
import { bytesEqual, checkObject, decodeObject } from './object-codec.js';
import { confirmationOf, readRecord, type PackLoc } from './packs.js';

// Reading packed objects back: one copy checked against its key, every copy of a key compared,
// and a copy compared byte for byte with bytes being stored (dedupe). Every read re-checks the
// record's checksum, the object's size and its hash; what fails is marked damaged.

/** How one known copy of a key compares with bytes being stored. */
export type CopyVerdict = 'equal' | 'different' | 'damaged' | 'gone';

/**
 * The original bytes of the copy at `loc`, checked against the key's size and hash.
 * @throws CheckpointError `INTEGRITY` (`found: 'missing'` when its pack is gone).
 */
export function readCopy(key: string, parsed: { hash: string; size: number }, loc: PackLoc): Buffer {
  if (loc.block === undefined) return checkObject(key, parsed, readRecord(loc), loc.pack.path);
  const bytes = readMember(loc, parsed.size);
  if (bytes.length !== parsed.size) {
    throw new CheckpointError('INTEGRITY', `object ${key} has the wrong size`, { path: loc.pack.path, expected: String(parsed.size), found: String(bytes.length) });
  }
  const found = contentHash(bytes);
  if (found !== parsed.hash) throw new CheckpointError('INTEGRITY', `object ${key} has the wrong hash`, { path: loc.pack.path, expected: parsed.hash, found });
  // A copy: the decoded block stays cached for the next member, and a caller may write into what it is given.
  return Buffer.from(bytes);
}

/**
 * Compares the copy at `loc` with `bytes` (a dedupe candidate): a copy that does not read back
 * is marked damaged, and is never referenced again.
 */
export function compareCopy(loc: PackLoc, bytes: Uint8Array): CopyVerdict {
  if (loc.pack.gone) return 'gone';
  let stored: Buffer;
  try {
    // A block member comes back decoded; a record's stored bytes are decoded below.
    stored = loc.block === undefined ? readRecord(loc) : readMember(loc, bytes.length);
  } catch (error) {
    if (isCheckpointError(error, 'INTEGRITY') && error.found === 'missing') return 'gone';
    if (isCheckpointError(error, 'INTEGRITY')) {
      confirmationOf(loc).confirmed = DAMAGED_RECORD;
      return 'damaged';
    }
    throw error;
  }
  if (loc.block === undefined) {
    try {
      stored = decodeObject(stored, bytes.length);
    } catch {
      confirmationOf(loc).confirmed = DAMAGED_RECORD;
      return 'damaged';
    }
  }
  return bytesEqual(stored, bytes) ? 'equal' : 'different';
}

/**
 * The bytes of `key` from its copies in packs (`head` and the copies chained after it): when
 * several packs hold the key (two processes stored the same bytes), every copy is checked and
 * they must agree — a cross-process xxh64 collision is an `INTEGRITY` error, never another
 * file's bytes. `'gone'` when every copy's pack was removed meanwhile.
 */
export function readPacked(key: string, parsed: { hash: string; size: number }, head: PackLoc): Buffer | 'gone' {
  let good: Buffer | undefined;
  let firstError: unknown;
  let gone = 0;
  let copies = 0;
  for (let loc: PackLoc | undefined = head; loc; loc = loc.next) {
    copies += 1;
    try {
      const bytes = readCopy(key, parsed, loc);
      if (good === undefined) good = bytes;
      else if (!bytesEqual(good, bytes)) {
        throw new CheckpointError('INTEGRITY', `object ${key} has two different contents (an xxh64 collision between processes)`, {
          path: loc.pack.path,
          expected: key,
          found: 'ambiguous',
        });
      }
    } catch (error) {
      if (isCheckpointError(error, 'INTEGRITY') && error.found === 'ambiguous') throw error;
      if (isCheckpointError(error, 'INTEGRITY') && error.found === 'missing') gone += 1;
      else {
        // Remembered: a later picture copies the file again instead of pointing at this record.
        if (isCheckpointError(error, 'INTEGRITY')) confirmationOf(loc).confirmed = DAMAGED_RECORD;
        firstError ??= error;
      }
    }
  }
  if (good !== undefined) return good;
  if (gone === copies) return 'gone';
  throw firstError;
}
