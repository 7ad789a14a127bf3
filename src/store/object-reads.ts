import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { contentHash } from '../core/hash.js';
import { readMember } from './block-codec.js';
import { markDamaged } from './copy-check.js';
import type { LooseObjects } from './loose-objects.js';
import { bytesEqual, checkObject, decodeObject, parseObjectKey } from './object-codec.js';
import { BLOCK_MEMBER_MAX_BYTES, PACK_OBJECT_MAX_BYTES } from './pack-format.js';
import type { PackIndex } from './pack-index.js';
import { readRecord, type PackLoc } from './packs.js';
import type { PendingBlocks } from './pending-blocks.js';

// Reading packed objects back: one copy checked against its key, every copy of a key compared,
// and a copy compared byte for byte with bytes being stored (dedupe). Every read re-checks the
// record's checksum, the object's size and its hash; what fails is marked damaged.

/** Where an object store's reads look: its pack index, its loose objects, its blocks still waiting. */
export interface ObjectSources {
  packs: PackIndex;
  loose: LooseObjects;
  pending: PendingBlocks;
  /** Loads the hashers and the pack index (once). */
  load(): Promise<void>;
}

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
      markDamaged(loc);
      return 'damaged';
    }
    throw error;
  }
  if (loc.block === undefined) {
    try {
      stored = decodeObject(stored, bytes.length);
    } catch {
      markDamaged(loc);
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
        if (isCheckpointError(error, 'INTEGRITY')) markDamaged(loc);
        firstError ??= error;
      }
    }
  }
  if (good !== undefined) return good;
  if (gone === copies) return 'gone';
  throw firstError;
}

/**
 * The original bytes of an object, after checking size and hash against its key (and, for a
 * packed object, the record's checksum). When several packs hold the key (two processes stored
 * the same bytes), every copy is checked and they must agree: a cross-process xxh64 collision
 * is an `INTEGRITY` error, never another file's bytes.
 *
 * @throws CheckpointError `INTEGRITY` when missing, undecodable, or the size/hash differ
 *   (never returns wrong bytes); `INVALID_ARGUMENT` for a malformed key.
 */
export async function readStoredObject(from: ObjectSources, key: string): Promise<Buffer> {
  const parsed = parseObjectKey(key);
  if (!parsed) throw new CheckpointError('INVALID_ARGUMENT', `not an object key: ${JSON.stringify(String(key).slice(0, 80))}`);
  if (parsed.size > PACK_OBJECT_MAX_BYTES && parsed.size <= BLOCK_MEMBER_MAX_BYTES) return readLarge(from, key, parsed);
  if (parsed.size <= PACK_OBJECT_MAX_BYTES) {
    await from.load();
    if (from.pending.state(key) !== undefined) await from.pending.settle();
    // Other processes' packs are looked for at most once a second while the key is known, and
    // at once when it is not (or its pack is gone): a restore of a thousand files must not
    // list the packs folder a thousand times.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (attempt === 0) from.packs.refreshSoon();
      else from.packs.refresh();
      const head = from.packs.head(key);
      if (!head) {
        if (attempt === 0) continue;
        break;
      }
      const result = readPacked(key, parsed, head);
      if (result !== 'gone') return result;
    }
  }
  return from.loose.read(key, parsed);
}

/**
 * An object over {@link PACK_OBJECT_MAX_BYTES} that may be a block member (a picture's copy)
 * or a loose file: the pack index first, then the file, then the packs listed again.
 */
async function readLarge(from: ObjectSources, key: string, parsed: { hash: string; size: number }): Promise<Buffer> {
  await from.load();
  if (from.pending.state(key) !== undefined) await from.pending.settle();
  from.packs.refreshSoon();
  for (let attempt = 0; ; attempt++) {
    // A damaged packed copy does not hide a good loose one (a key's copies hold the same bytes).
    let packedError: unknown;
    const head = from.packs.head(key);
    if (head !== undefined) {
      try {
        const result = readPacked(key, parsed, head);
        if (result !== 'gone') return result;
      } catch (error) {
        if (isCheckpointError(error, 'INTEGRITY') && error.found === 'ambiguous') throw error;
        packedError = error;
      }
    }
    try {
      return await from.loose.read(key, parsed);
    } catch (error) {
      if (!isCheckpointError(error, 'INTEGRITY') || error.found !== 'missing') throw error;
      if (packedError !== undefined) throw packedError;
      if (attempt > 0) throw error;
      from.packs.refresh();
    }
  }
}

/** True when an object exists under `key` (content not checked; see `readObject`). */
export async function hasStoredObject(from: ObjectSources, key: string): Promise<boolean> {
  const parsed = parseObjectKey(key);
  if (!parsed) return false;
  if (parsed.size <= BLOCK_MEMBER_MAX_BYTES) {
    await from.load();
    if (from.pending.state(key) !== undefined) await from.pending.settle();
    if (hasPacked(from.packs, key)) return true;
    // A large object is mostly a loose file: its folder is looked at before the packs are listed again.
    if (parsed.size > PACK_OBJECT_MAX_BYTES && (await from.loose.has(key))) return true;
    from.packs.refresh();
    if (hasPacked(from.packs, key)) return true;
  }
  return from.loose.has(key);
}

function hasPacked(packs: PackIndex, key: string): boolean {
  for (let loc = packs.head(key); loc; loc = loc.next) if (!loc.pack.gone) return true;
  return false;
}
