import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  linkSync,
  openSync,
  readSync,
  unlinkSync,
} from 'node:fs';
import * as path from 'node:path';
import xxhash from 'xxhash-wasm';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { closeQuietly, descriptorsOfDropped, writeAllSync } from '../fs/file-system.js';
import { GRACE_MS, createExclusiveSync } from './layout.js';
import { isObjectKey } from './object-codec.js';

/**
 * Objects whose original size is at most this go into packs; larger ones stay loose files. The
 * bound is on the original size, so an object key alone says where its object lives, and it is
 * also the bound on every synchronous read and write the hot path does (a few hundred
 * microseconds at most, against ~80 µs for one thread-pool round trip). Below it, the 4 KiB
 * block and inode a loose file costs dominate the store's size; above it they are noise.
 */
export const PACK_OBJECT_MAX_BYTES: number = 256 * 1024;
/** A pack is sealed and a new one started once it holds this many bytes. */
export const PACK_ROLL_BYTES: number = 64 * 1024 * 1024;
/**
 * A dedupe hit in a pack not written within this window is not trusted to survive: the bytes are
 * appended again to the writer's own (fresh) pack instead. Prune only rewrites or deletes packs
 * older than the grace period, so a capture has `GRACE_MS - PACK_FRESH_MS` to record its reference.
 * A writer idle this long also rolls over to a new pack before appending.
 */
export const PACK_FRESH_MS: number = GRACE_MS / 2;

/** File magic of a pack (8 bytes). */
const PACK_MAGIC = Buffer.from('TBPACK1\n', 'latin1');
/** Magic of every record: "TBR1". */
const RECORD_MAGIC = 0x54425231;
/** magic u32 + stored length u32 + key length u8 (+ key + stored bytes) + xxh32 u32. */
const RECORD_HEAD = 9;
const RECORD_TAIL = 4;
const MAX_KEY_LENGTH = 40;
/** Largest stored (encoded) body of a record: the raw bytes plus the one header byte. */
const MAX_STORED_LENGTH = PACK_OBJECT_MAX_BYTES + 1;
/** The longest record a pack can hold: head, key, the largest stored object, checksum. */
export const MAX_RECORD_LENGTH: number = RECORD_HEAD + MAX_KEY_LENGTH + MAX_STORED_LENGTH + RECORD_TAIL;
const SCAN_WINDOW = Math.max(1024 * 1024, MAX_RECORD_LENGTH);
const INDEX_FORMAT = 'turnback-pack-index';
const PACK_NAME = /^pack-([0-9]{1,10})-([0-9a-f]{16})\.pack$/;

type Hasher = Awaited<ReturnType<typeof xxhash>>;
let hasher: Hasher | undefined;
let hasherPromise: Promise<Hasher> | undefined;

/** Loads the xxh32 used for record checksums. */
export async function loadPackHasher(): Promise<void> {
  if (hasher) return;
  hasherPromise ??= xxhash();
  hasher = await hasherPromise;
}

function checksum(bytes: Uint8Array): number {
  if (!hasher) throw new Error('turnback: loadPackHasher() must resolve first');
  return hasher.h32Raw(bytes) >>> 0;
}

/** Who writes a pack; read from its header. */
export interface PackHeader {
  pid: number;
  hostname: string;
  createdAt: string;
}

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
  /** Every record found, in file order. */
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
   * The pack's identity when it was sealed, after its last record (kept in its index): while the
   * pack is still that file, every record stands as its writer wrote it.
   */
  sealIdentity?: string;
}

/** Where one record lives. A key held by several records chains them through `next`. */
export interface PackLoc {
  key: string;
  pack: PackFile;
  /** Offset of the record's first byte. */
  offset: number;
  /** Whole record length. */
  length: number;
  next?: PackLoc;
  /**
   * The pack's `confirmEpoch` in which this record was read and found good (or written by this
   * process); `DAMAGED_RECORD` (copy-check.ts) once a read found it damaged.
   */
  confirmed?: number;
}

/** The name of a new pack written by this process. */
export function newPackName(): string {
  return `pack-${process.pid}-${randomBytes(8).toString('hex')}.pack`;
}

/** True for a well-formed pack file name (`pack-<pid>-<16 hex>.pack`). */
export function isPackName(name: string): boolean {
  return PACK_NAME.test(name);
}

/** Encodes one record: key plus the stored object bytes (encoding byte first), with a checksum. */
export function encodeRecord(key: string, encoding: Uint8Array, body: Uint8Array, scratch?: Buffer): Buffer {
  const keyLength = Buffer.byteLength(key, 'latin1');
  const storedLength = encoding.length + body.length;
  const total = RECORD_HEAD + keyLength + storedLength + RECORD_TAIL;
  // `scratch`: a reusable buffer for the synchronous hot path (the record is written, then dropped).
  const record = scratch !== undefined && scratch.length >= total ? scratch.subarray(0, total) : Buffer.allocUnsafe(total);
  record.writeUInt32LE(RECORD_MAGIC, 0);
  record.writeUInt32LE(storedLength, 4);
  record.writeUInt8(keyLength, 8);
  record.write(key, RECORD_HEAD, 'latin1');
  record.set(encoding, RECORD_HEAD + keyLength);
  record.set(body, RECORD_HEAD + keyLength + encoding.length);
  record.writeUInt32LE(checksum(record.subarray(0, total - RECORD_TAIL)), total - RECORD_TAIL);
  return record;
}

type Parsed = { kind: 'ok'; key: string; length: number } | { kind: 'short' } | { kind: 'bad'; detail: string };

/** Parses the record at `buffer[at..end)`. `short`: it does not fit (torn, or past the window). */
function parseRecord(buffer: Buffer, at: number, end: number): Parsed {
  if (end - at < RECORD_HEAD) return { kind: 'short' };
  if (buffer.readUInt32LE(at) !== RECORD_MAGIC) return { kind: 'bad', detail: 'bad record magic' };
  const storedLength = buffer.readUInt32LE(at + 4);
  const keyLength = buffer[at + 8] as number;
  if (keyLength === 0 || keyLength > MAX_KEY_LENGTH || storedLength === 0 || storedLength > MAX_STORED_LENGTH) {
    return { kind: 'bad', detail: 'bad record lengths' };
  }
  const length = RECORD_HEAD + keyLength + storedLength + RECORD_TAIL;
  if (end - at < length) return { kind: 'short' };
  const sum = buffer.readUInt32LE(at + length - RECORD_TAIL);
  if (checksum(buffer.subarray(at, at + length - RECORD_TAIL)) !== sum) return { kind: 'bad', detail: 'record checksum mismatch' };
  const key = buffer.toString('latin1', at + RECORD_HEAD, at + RECORD_HEAD + keyLength);
  if (!isObjectKey(key)) return { kind: 'bad', detail: 'bad object key in record' };
  return { kind: 'ok', key, length };
}

/** Encodes a pack file header. */
/** The header line of a new pack. */
export function encodeHeader(header: PackHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.allocUnsafe(PACK_MAGIC.length + 4 + json.length + 4);
  PACK_MAGIC.copy(out, 0);
  out.writeUInt32LE(json.length, PACK_MAGIC.length);
  json.copy(out, PACK_MAGIC.length + 4);
  out.writeUInt32LE(checksum(json), PACK_MAGIC.length + 4 + json.length);
  return out;
}

/** Reads a pack header from an open descriptor: the header and where records start, or undefined. */
function readHeader(fd: number, size: number): { header: PackHeader; end: number } | undefined {
  const head = Buffer.alloc(Math.min(size, 4096));
  const got = readSync(fd, head, 0, head.length, 0);
  if (got < PACK_MAGIC.length + 8 || !head.subarray(0, PACK_MAGIC.length).equals(PACK_MAGIC)) return undefined;
  const jsonLength = head.readUInt32LE(PACK_MAGIC.length);
  const start = PACK_MAGIC.length + 4;
  if (start + jsonLength + 4 > got) return undefined;
  const json = head.subarray(start, start + jsonLength);
  if (checksum(json) !== head.readUInt32LE(start + jsonLength)) return undefined;
  try {
    const value = JSON.parse(json.toString('utf8')) as Partial<PackHeader>;
    if (!Number.isInteger(value.pid) || typeof value.hostname !== 'string' || typeof value.createdAt !== 'string') return undefined;
    return { header: value as PackHeader, end: start + jsonLength + 4 };
  } catch {
    return undefined;
  }
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

/**
 * Brings `pack` up to date from disk, synchronously: the header on first sight, then every
 * complete record after `scannedTo`. Stops at a torn tail (kept for the next call: a live
 * writer may be completing it) or at a damaged record (`corruptAt`). Calls `found` per new record.
 * Returns false when the pack file is gone.
 *
 * Reads are bounded by the pack's growth since the last call; the first scan of a big pack
 * without an index reads it once, in 1 MiB windows.
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
          const loc: PackLoc = { key: parsed.key, pack, offset: position + at, length: parsed.length };
          pack.records.push(loc);
          found(loc);
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

/** The stored object bytes of one record, re-checked against its checksum and key. */
export function readRecord(loc: PackLoc): Buffer {
  const pack = loc.pack;
  let fd = pack.readFd;
  if (fd === undefined) {
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
  }
  const buffer = Buffer.allocUnsafe(loc.length);
  let got = 0;
  try {
    while (got < loc.length) {
      const n = readSync(fd, buffer, got, loc.length - got, loc.offset + got);
      if (n === 0) break;
      got += n;
    }
  } catch (error) {
    closeReads(pack);
    throw error;
  }
  const parsed = parseRecord(buffer, 0, got);
  if (parsed.kind !== 'ok' || parsed.length !== loc.length || parsed.key !== loc.key) {
    const detail = parsed.kind === 'bad' ? parsed.detail : parsed.kind === 'short' ? 'record truncated' : 'record does not match the index';
    throw new CheckpointError('INTEGRITY', `object ${loc.key} is damaged in its pack: ${detail}`, {
      path: loc.pack.path,
      expected: loc.key,
      found: `${detail} at offset ${loc.offset}`,
    });
  }
  const keyLength = buffer[8] as number;
  return buffer.subarray(RECORD_HEAD + keyLength, loc.length - RECORD_TAIL);
}

/**
 * Index file bytes for a sealed pack: header line, one line per record, checksum line. Built in
 * chunks with a streaming checksum, so sealing a pack of 100,000 records never holds the whole
 * text (and its line array) in memory at once.
 */
export function formatIndex(pack: PackFile): Buffer[] {
  if (!hasher) throw new Error('turnback: loadPackHasher() must resolve first');
  const sum = hasher.create32();
  const chunks: Buffer[] = [];
  const add = (text: string): void => {
    const chunk = Buffer.from(text, 'latin1');
    sum.update(chunk);
    chunks.push(chunk);
  };
  // The seal identity is a fifth field, which readers of the four-field line ignore.
  add(`${INDEX_FORMAT} 1 ${pack.name} ${pack.scannedTo}${pack.sealIdentity !== undefined ? ` ${pack.sealIdentity}` : ''}\n`);
  let text = '';
  for (let i = 0; i < pack.records.length; i++) {
    const loc = pack.records[i] as PackLoc;
    text += `${loc.key} ${loc.offset} ${loc.length}\n`;
    if (i % INDEX_CHUNK_RECORDS === INDEX_CHUNK_RECORDS - 1) {
      add(text);
      text = '';
    }
  }
  if (text !== '') add(text);
  chunks.push(Buffer.from(`${(sum.digest() >>> 0).toString(16)}\n`, 'latin1'));
  return chunks;
}

const INDEX_CHUNK_RECORDS = 4096;

/** The shape of a pack identity (copy-check.ts `packIdentity`). */
const IDENTITY = /^[0-9]+:[0-9]+:[0-9.e+-]+:[0-9.e+-]+$/;

/** Parses an index file; undefined when it does not check out (the pack is scanned instead). */
export function parseIndex(text: string, pack: PackFile): { end: number; sealIdentity?: string; entries: { key: string; offset: number; length: number }[] } | undefined {
  const cut = text.lastIndexOf('\n', text.length - 2);
  if (cut < 0 || !text.endsWith('\n')) return undefined;
  const body = text.slice(0, cut + 1);
  if (checksum(Buffer.from(body, 'latin1')).toString(16) !== text.slice(cut + 1, -1)) return undefined;
  const lines = body.split('\n');
  lines.pop();
  const head = (lines.shift() ?? '').split(' ');
  if (head[0] !== INDEX_FORMAT || head[1] !== '1' || head[2] !== pack.name) return undefined;
  const end = Number(head[3]);
  if (!Number.isSafeInteger(end) || end < 0) return undefined;
  const entries: { key: string; offset: number; length: number }[] = [];
  for (const line of lines) {
    const [key, offset, length] = line.split(' ');
    const o = Number(offset);
    const l = Number(length);
    if (!isObjectKey(key) || !Number.isSafeInteger(o) || !Number.isSafeInteger(l) || l <= 0 || o + l > end) return undefined;
    entries.push({ key, offset: o, length: l });
  }
  const sealIdentity = head[4];
  return sealIdentity !== undefined && IDENTITY.test(sealIdentity) ? { end, sealIdentity, entries } : { end, entries };
}

/**
 * Writes `<pack>.idx` whole and without overwriting (temp + link): a crash leaves no half index,
 * and of two sealers (the writer and a prune that judged it dead) the first wins, both having
 * described the same records. Returns false when an index already existed.
 */
export function writeIndex(pack: PackFile, tempPath: string): boolean {
  return createExclusiveSync({ openSync, closeSync, linkSync, unlinkSync }, tempPath, pack.idxPath, (fd) => {
    for (const chunk of formatIndex(pack)) writeAllSync(fd, chunk);
  });
}
