import { randomBytes } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { closeQuietly, descriptorsOfDropped } from '../fs/file-system.js';
import { GRACE_MS } from './layout.js';
import { blockHeadBytes, MAX_BLOCK_LENGTH, MAX_RECORD_LENGTH, parseBlockHead, parseRecord, readHeader, storedBytesOf, type BlockTable, type PackHeader } from './pack-format.js';

// Pack files on disk: what the index knows of one (`PackFile`, `PackLoc`), the scan that brings
// it up to date, and the checked read of one record. The byte format is pack-format.ts.

export { PACK_OBJECT_MAX_BYTES, encodeRecord, loadPackHasher, type PackHeader } from './pack-format.js';

/** A pack is sealed and a new one started once it holds this many bytes. */
export const PACK_ROLL_BYTES: number = 64 * 1024 * 1024;
/**
 * A dedupe hit in a pack not written within this window is not trusted to survive: the bytes are
 * appended again to the writer's own (fresh) pack instead. Prune only rewrites or deletes packs
 * older than the grace period, so a capture has `GRACE_MS - PACK_FRESH_MS` to record its reference.
 * A writer idle this long also rolls over to a new pack before appending.
 */
export const PACK_FRESH_MS: number = GRACE_MS / 2;

const SCAN_WINDOW = Math.max(1024 * 1024, MAX_RECORD_LENGTH, MAX_BLOCK_LENGTH);
const PACK_NAME = /^pack-([0-9]{1,10})-([0-9a-f]{16})\.pack$/;

/** One pack file as the in-memory index knows it. */
export interface PackFile {
  name: string;
  /** Absolute path of the `.pack` file. */
  path: string;
  /** Absolute path of its `.idx` file (present once sealed). */
  idxPath: string;
  header: PackHeader | undefined;
  /** True once an index file exists: nothing is appended any more. */
  sealed: boolean;
  /** Offset up to which records are known (start of the first unknown or torn record). */
  scannedTo: number;
  /** Last known mtime. */
  mtimeMs: number;
  /** A descriptor kept open for reads by {@link readRecord}; closed by {@link closeReads}. */
  readFd?: number;
  /** Offset of a damaged record that stopped the scan (records after it are unknown). */
  corruptAt?: number;
  /** What was wrong at `corruptAt`. */
  corruptDetail?: string;
  /** True when bytes past `scannedTo` form an incomplete record (a crash or an append in progress). */
  tornTail: boolean;
  /** Every object found, in file order (a block's members one after another). */
  records: PackLoc[];
  /** Removed from disk (by a prune): locations in it are dead. */
  gone: boolean;
  /**
   * The pack file's identity (inode, size, ctime, mtime) when its records were last confirmed
   * (see `ObjectStore.copyCheck`); a change means someone wrote to it, and every record is
   * confirmed again.
   */
  confirmedIdentity?: string;
  /** Bumped whenever `confirmedIdentity` changes: a record confirmed in an older epoch is not any more. */
  confirmEpoch?: number;
  /** The copy-check round that last looked at the pack's identity. */
  confirmRound?: number;
  /**
   * The pack file's identity (copy-check.ts `packIdentity`) when this process last looked at it:
   * at its load, at each copy check's look over every pack, and after each of this process's own
   * appends. A look that finds another identity ends the store's copy epoch (pack-index.ts).
   */
  lookIdentity?: string;
  /**
   * The pack's identity when it was sealed, after its last record (kept in its index): while the
   * pack is still that file, every record stands as its writer wrote it.
   */
  sealIdentity?: string;
}

/** A block record: shared by its members, which are confirmed (and found damaged) together. */
export interface PackBlock {
  /** Offset of the record's first byte. */
  offset: number;
  /** Whole record length. */
  length: number;
  /** Sum of the members' sizes. */
  rawLength: number;
  /** Bytes of its member table (its index line names them). */
  tableLength: number;
  /** As `PackLoc.confirmed`, for the whole block. */
  confirmed?: number;
}

/** Where one object lives. A key held by several records chains them through `next`. */
export interface PackLoc {
  key: string;
  pack: PackFile;
  /** Offset of the record's first byte (for a block member: the block's). */
  offset: number;
  /** Whole record length (for a block member: the block's). */
  length: number;
  next?: PackLoc;
  /**
   * The pack's `confirmEpoch` in which this record was read and found good (or written by this
   * process); `DAMAGED_RECORD` (copy-check.ts) once a read found it damaged. A block member
   * keeps this on its {@link PackBlock}.
   */
  confirmed?: number;
  /** For a member of a block: the block, and where its bytes start within the decoded body. */
  block?: PackBlock;
  start?: number;
}

/** What holds a location's confirmation: its block, or the record itself. */
export function confirmationOf(loc: PackLoc): { confirmed?: number } {
  return loc.block ?? loc;
}

/** The bytes of the pack an object accounts for: its record, or its share of its block. */
export function diskShare(loc: PackLoc, size: number): number {
  const block = loc.block;
  if (block === undefined) return loc.length;
  return block.rawLength === 0 ? 0 : Math.ceil((block.length * size) / block.rawLength);
}

/** The name of a new pack written by this process. */
export function newPackName(): string {
  return `pack-${process.pid}-${randomBytes(8).toString('hex')}.pack`;
}

/** True for a well-formed pack file name (`pack-<pid>-<16 hex>.pack`). */
export function isPackName(name: string): boolean {
  return PACK_NAME.test(name);
}

/** The header of the pack at `file`, or undefined when missing or unreadable. */
export function readPackHeader(file: string): PackHeader | undefined {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    return readHeader(fd, fstatSync(fd).size)?.header;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** A fresh, unscanned view of the pack at `file`. */
export function packFile(dir: string, name: string): PackFile {
  const file = path.join(dir, name);
  return {
    name,
    path: file,
    idxPath: `${file.slice(0, -'.pack'.length)}.idx`,
    header: undefined,
    sealed: false,
    scannedTo: 0,
    mtimeMs: 0,
    tornTail: false,
    records: [],
    gone: false,
  };
}

/** The locations of a block's members, in block order, appended to its pack's records. */
export function blockMembers(pack: PackFile, offset: number, length: number, table: Pick<BlockTable, 'members' | 'rawLength' | 'tableLength'>, confirmed?: number): PackLoc[] {
  const block: PackBlock = { offset, length, rawLength: table.rawLength, tableLength: table.tableLength, ...(confirmed !== undefined ? { confirmed } : {}) };
  const locs: PackLoc[] = [];
  let start = 0;
  for (const member of table.members) {
    const loc: PackLoc = { key: member.key, pack, offset, length, block, start };
    pack.records.push(loc);
    locs.push(loc);
    start += member.size;
  }
  return locs;
}

/**
 * Brings `pack` up to date from disk, synchronously: the header on first sight, then every
 * complete record after `scannedTo`. Stops at a torn tail (kept for the next call: a live
 * writer may be completing it) or at a damaged record (`corruptAt`). Calls `found` per new
 * object (each member of a block). Returns false when the pack file is gone.
 *
 * Reads are bounded by the pack's growth since the last call; the first scan of a big pack
 * without an index reads it once, in windows of a few MiB.
 */
export function scanPack(pack: PackFile, found: (loc: PackLoc) => void): boolean {
  let fd: number;
  try {
    fd = openSync(pack.path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return false;
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    pack.mtimeMs = Math.max(pack.mtimeMs, stats.mtimeMs);
    const size = stats.size;
    if (pack.scannedTo === 0) {
      const header = readHeader(fd, size);
      if (!header) {
        // Headerless: a crash between create and header write, or damage. Nothing indexable.
        if (size > 0) {
          pack.corruptAt = 0;
          pack.corruptDetail = 'missing or damaged pack header';
        }
        pack.tornTail = size > 0;
        return true;
      }
      pack.header = header.header;
      pack.scannedTo = header.end;
    }
    if (pack.corruptAt !== undefined) return true;
    let position = pack.scannedTo;
    const window = Buffer.allocUnsafe(Math.min(SCAN_WINDOW, Math.max(0, size - position)));
    pack.tornTail = false;
    while (position < size) {
      const want = Math.min(window.length, size - position);
      let got = 0;
      while (got < want) {
        const n = readSync(fd, window, got, want - got, position + got);
        if (n === 0) break;
        got += n;
      }
      let at = 0;
      for (;;) {
        const parsed = parseRecord(window, at, got);
        if (parsed.kind === 'ok') {
          if (parsed.block !== undefined) {
            for (const loc of blockMembers(pack, position + at, parsed.length, parsed.block)) found(loc);
          } else {
            const loc: PackLoc = { key: parsed.key, pack, offset: position + at, length: parsed.length };
            pack.records.push(loc);
            found(loc);
          }
          at += parsed.length;
          continue;
        }
        if (parsed.kind === 'bad') {
          pack.corruptAt = position + at;
          pack.corruptDetail = parsed.detail;
          pack.scannedTo = position + at;
          return true;
        }
        break;
      }
      position += at;
      pack.scannedTo = position;
      if (at === 0 || got < want) {
        // The record at `position` does not fit in what the file holds: a torn (or in-progress) tail.
        if (position < size) pack.tornTail = true;
        break;
      }
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Read descriptors of packs dropped without {@link closeReads} are closed when collected. */
const unclosedReads = descriptorsOfDropped;

/** Closes the descriptor {@link readRecord} keeps for a pack, if any. Idempotent. */
export function closeReads(pack: PackFile): void {
  const fd = pack.readFd;
  if (fd === undefined) return;
  pack.readFd = undefined;
  unclosedReads.unregister(pack);
  closeQuietly(fd);
}

/** The read descriptor of a pack, opened on first use. */
function readDescriptor(loc: PackLoc): number {
  const pack = loc.pack;
  if (pack.readFd !== undefined) return pack.readFd;
  let fd: number;
  try {
    fd = openSync(pack.path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') {
      throw new CheckpointError('INTEGRITY', `object ${loc.key} is missing (its pack is gone)`, { path: pack.path, expected: loc.key, found: 'missing', cause: error });
    }
    throw error;
  }
  // Kept for the next read of this pack (a restore reads hundreds of records from one pack):
  // records are written once and never change, so the descriptor always reads the same bytes.
  pack.readFd = fd;
  unclosedReads.register(pack, fd, pack);
  return fd;
}

/** Reads `length` bytes at `offset` of a pack (fewer at its end). */
export function readPackBytes(loc: PackLoc, offset: number, length: number): Buffer {
  const fd = readDescriptor(loc);
  const buffer = Buffer.allocUnsafe(length);
  let got = 0;
  try {
    while (got < length) {
      const n = readSync(fd, buffer, got, length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
  } catch (error) {
    closeReads(loc.pack);
    throw error;
  }
  return got === length ? buffer : buffer.subarray(0, got);
}

/**
 * The record at `loc` read and checked against its checksum and its place in the index: for a
 * one-object record its stored bytes (encoding byte first), for a block the whole record and
 * its table.
 */
export function readRecord(loc: PackLoc): Buffer;
export function readRecord(loc: PackLoc, asBlock: true): { record: Buffer; table: BlockTable };
export function readRecord(loc: PackLoc, asBlock?: true): Buffer | { record: Buffer; table: BlockTable } {
  const buffer = readPackBytes(loc, loc.offset, loc.length);
  const parsed = parseRecord(buffer, 0, buffer.length);
  const mismatch =
    parsed.kind !== 'ok' || parsed.length !== loc.length || (loc.block === undefined ? parsed.key !== loc.key : parsed.block === undefined || !parsed.block.members.some((m) => m.key === loc.key));
  if (mismatch) {
    const detail = parsed.kind === 'bad' ? parsed.detail : parsed.kind === 'short' ? 'record truncated' : 'record does not match the index';
    throw new CheckpointError('INTEGRITY', `object ${loc.key} is damaged in its pack: ${detail}`, {
      path: loc.pack.path,
      expected: loc.key,
      found: `${detail} at offset ${loc.offset}`,
    });
  }
  if (asBlock === true) {
    if (parsed.block === undefined) throw new CheckpointError('INTEGRITY', `object ${loc.key}: a block was expected at offset ${loc.offset}`, { path: loc.pack.path, expected: loc.key, found: 'record' });
    return { record: buffer, table: parsed.block };
  }
  return storedBytesOf(buffer);
}

/**
 * The table of the block at `offset` (`length` bytes, `count` members, a table of `tableLength`
 * bytes), read from the pack without its body: what an index load needs. `undefined` when it does
 * not read as one.
 */
export function readBlockTable(pack: PackFile, offset: number, length: number, count: number, tableLength: number): BlockTable | undefined {
  const want = blockHeadBytes(tableLength);
  const probe: PackLoc = { key: '', pack, offset, length };
  let head: Buffer;
  try {
    head = readPackBytes(probe, offset, want);
  } catch (error) {
    if (error instanceof CheckpointError) return undefined;
    throw error;
  }
  const parsed = parseBlockHead(head, 0, head.length);
  if (parsed.kind !== 'ok' || parsed.length !== length || parsed.table.members.length !== count) return undefined;
  return parsed.table;
}
