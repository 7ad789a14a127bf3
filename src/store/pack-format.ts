import { readSync } from 'node:fs';
import xxhash from 'xxhash-wasm';
import { isObjectKey } from './object-codec.js';

// The bytes of a pack file: its header, and its two kinds of record — one object (`TBR1`), or a
// solid block of several small objects compressed together (`TBB1`, layout version 3) — each
// with its xxh32. Pure encoding and parsing; reading packs from disk is packs.ts.

/**
 * Objects whose original size is at most this go into packs; larger ones stay loose files. The
 * bound is on the original size, so an object key alone says where its object lives, and it is
 * also the bound on every synchronous read and write the hot path does (a few hundred
 * microseconds at most, against ~80 µs for one thread-pool round trip). Below it, the 4 KiB
 * block and inode a loose file costs dominate the store's size; above it they are noise.
 */
export const PACK_OBJECT_MAX_BYTES: number = 256 * 1024;
/**
 * A block is compressed once the objects waiting for it hold this many bytes. Measured on
 * prettier's files ≤ 256 KiB (brotli): quality 5 in 256 KiB blocks 3.21 MB, 1 MiB 3.15 MB,
 * 4 MiB 3.09 MB; quality 6 in 2 MiB blocks 3.09 MB, 4 MiB 3.07 MB. One read of an object
 * decompresses its whole block: a few milliseconds at 2 MiB.
 */
export const BLOCK_TARGET_BYTES: number = 2 * 1024 * 1024;
/**
 * The largest object a block takes (a picture's copies only; other puts of objects over
 * {@link PACK_OBJECT_MAX_BYTES} stay loose files). Above 256 KiB a loose file's folder and block
 * rounding are small, but a file of that size beside the ones of its folder compresses with them:
 * prettier's five test snapshots of 313–382 KB each hold their folder's fixtures.
 */
export const BLOCK_MEMBER_MAX_BYTES: number = (1 << 22) - 1;
/** The most original bytes a block holds: the target plus one object that crossed it. */
export const BLOCK_MAX_RAW_BYTES: number = BLOCK_TARGET_BYTES + BLOCK_MEMBER_MAX_BYTES;
/** The most objects a block's count field can say (a u16): what a reader accepts. */
export const BLOCK_MAX_MEMBERS = 0xffff;
/**
 * A block is compressed once this many objects wait for it, whatever their size: a tree of tiny
 * files would otherwise keep tens of thousands waiting at once (a 100,000-file picture of 16–64 B
 * files measured 49 MB more peak memory with 65,535 a block).
 */
export const BLOCK_TARGET_MEMBERS = 4096;

/** File magic of a pack (8 bytes). */
export const PACK_MAGIC: Buffer = Buffer.from('TBPACK1\n', 'latin1');
/** Magic of a one-object record: "TBR1". */
const RECORD_MAGIC = 0x54425231;
/** Magic of a block record: "TBB1". */
const BLOCK_MAGIC = 0x54424231;
/** magic u32 + stored length u32 + key length u8 (+ key + stored bytes) + xxh32 u32. */
const RECORD_HEAD = 9;
const RECORD_TAIL = 4;
/** magic u32 + body length u32 + member count u16 + body encoding u8 + table length u32 (+ members + body) + xxh32 u32. */
export const BLOCK_HEAD = 15;
/**
 * A member in the table: the key's xxh64 (8 bytes), then a varint of its size times two plus one
 * when a suffix follows, then the suffix as a varint. 10.3 bytes a member on prettier (a fixed u32
 * of size and suffix was 12: 16 KiB more in the bench).
 */
const MEMBER_MAX_BYTES = 8 + 4 + 2;
const MAX_MEMBER_SUFFIX = 1023;
const MAX_KEY_LENGTH = 40;
/** Largest stored (encoded) body of a record: the raw bytes plus the one header byte. */
const MAX_STORED_LENGTH = PACK_OBJECT_MAX_BYTES + 1;
/** The longest one-object record: head, key, the largest stored object, checksum. */
export const MAX_RECORD_LENGTH: number = RECORD_HEAD + MAX_KEY_LENGTH + MAX_STORED_LENGTH + RECORD_TAIL;
/** The longest block record. */
export const MAX_BLOCK_LENGTH: number = BLOCK_HEAD + MEMBER_MAX_BYTES * BLOCK_MAX_MEMBERS + BLOCK_MAX_RAW_BYTES + RECORD_TAIL;
/** Body encoding of a block stored as it is (brotli would not have saved a byte). */
export const BLOCK_RAW = 0;
/** Body encoding of a block compressed with brotli. */
export const BLOCK_BROTLI = 2;

type Hasher = Awaited<ReturnType<typeof xxhash>>;
let hasher: Hasher | undefined;
let hasherPromise: Promise<Hasher> | undefined;

/** Loads the xxh32 used for record checksums. */
export async function loadPackHasher(): Promise<void> {
  if (hasher) return;
  hasherPromise ??= xxhash();
  hasher = await hasherPromise;
}

/** The xxh32 of `bytes`; {@link loadPackHasher} must have resolved. */
export function checksum(bytes: Uint8Array): number {
  if (!hasher) throw new Error('turnback: loadPackHasher() must resolve first');
  return hasher.h32Raw(bytes) >>> 0;
}

/** A streaming xxh32 (for index files written in chunks); {@link loadPackHasher} must have resolved. */
export function streamingChecksum(): { update(bytes: Uint8Array): unknown; digest(): number } {
  if (!hasher) throw new Error('turnback: loadPackHasher() must resolve first');
  return hasher.create32();
}

/** Who writes a pack; read from its header. */
export interface PackHeader {
  pid: number;
  hostname: string;
  createdAt: string;
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

/** A member of a block: its key and original size, in block order (offsets follow from the sizes). */
export interface BlockMemberKey {
  key: string;
  size: number;
}

/**
 * True when `key` can be a block member: its 8-byte form gives the very same key back (block
 * members are written in binary, so a key with a leading zero in its size could not be).
 */
export function isBlockableKey(key: string): boolean {
  // Once per object a picture copies: no regular expression, no allocation beyond the split.
  if (!OBJECT_KEY.test(key)) return false;
  const dot = key.indexOf('.', 17);
  const sizeHex = dot < 0 ? key.slice(17) : key.slice(17, dot);
  const size = parseInt(sizeHex, 16);
  const suffix = dot < 0 ? 0 : Number(key.slice(dot + 1));
  return size <= BLOCK_MEMBER_MAX_BYTES && suffix <= MAX_MEMBER_SUFFIX && size.toString(16) === sizeHex;
}

/** The shape of an object key (object-codec.ts), tested without a match. */
const OBJECT_KEY = /^[0-9a-f]{16}-[0-9a-f]{1,13}(?:\.[1-9][0-9]{0,3})?$/;

/** Writes `value` (a safe integer ≥ 0) as a little-endian base-128 varint at `at`; returns the next offset. */
function writeVarint(buffer: Buffer, at: number, value: number): number {
  let rest = value;
  while (rest >= 0x80) {
    buffer[at++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  buffer[at++] = rest;
  return at;
}

/** The varint at `at` (at most 4 bytes: 2^28) and the offset after it; `undefined` past `end` or longer. */
function readVarint(buffer: Buffer, at: number, end: number): [number, number] | undefined {
  let value = 0;
  for (let shift = 0, p = at; p < end && shift < 28; shift += 7, p++) {
    const byte = buffer[p] as number;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, p + 1];
  }
  return undefined;
}

/** The suffix of a canonical key (0 without one). */
const suffixOf = (key: string): number => {
  const dot = key.indexOf('.', 17);
  return dot < 0 ? 0 : Number(key.slice(dot + 1));
};

/**
 * Encodes a block record: the members' keys, then `body` (the members' bytes one after another,
 * raw or compressed as `encoding` says), then the checksum of all of it.
 */
export function encodeBlock(members: readonly BlockMemberKey[], encoding: number, body: Uint8Array): Buffer {
  const table = Buffer.allocUnsafe(MEMBER_MAX_BYTES * members.length);
  let tableLength = 0;
  for (const member of members) {
    // Keys are canonical (isBlockableKey): the hash, then the size the member says, then any suffix.
    const key = member.key;
    const suffix = suffixOf(key);
    table.write(key.slice(0, 16), tableLength, 8, 'hex');
    tableLength = writeVarint(table, tableLength + 8, member.size * 2 + (suffix > 0 ? 1 : 0));
    if (suffix > 0) tableLength = writeVarint(table, tableLength, suffix);
  }
  const total = BLOCK_HEAD + tableLength + body.length + RECORD_TAIL;
  const record = Buffer.allocUnsafe(total);
  record.writeUInt32LE(BLOCK_MAGIC, 0);
  record.writeUInt32LE(body.length, 4);
  record.writeUInt16LE(members.length, 8);
  record.writeUInt8(encoding, 10);
  record.writeUInt32LE(tableLength, 11);
  table.copy(record, BLOCK_HEAD, 0, tableLength);
  record.set(body, BLOCK_HEAD + tableLength);
  record.writeUInt32LE(checksum(record.subarray(0, total - RECORD_TAIL)), total - RECORD_TAIL);
  return record;
}

/** What a block record's head and member table say. */
export interface BlockTable {
  members: BlockMemberKey[];
  /** Sum of the members' sizes: the length of the decoded body. */
  rawLength: number;
  encoding: number;
  /** Bytes of the member table. */
  tableLength: number;
  /** Offset of the body within the record (the head and the table before it). */
  bodyAt: number;
  bodyLength: number;
}

/** The bytes of a block's head and table, from its index line: what an index load reads of it. */
export function blockHeadBytes(tableLength: number): number {
  return BLOCK_HEAD + tableLength;
}

/** A parsed record: one object (`key`) or a block (`block`). */
export type Parsed =
  | { kind: 'ok'; length: number; key: string; block?: undefined }
  | { kind: 'ok'; length: number; key?: undefined; block: BlockTable }
  | { kind: 'short' }
  | { kind: 'bad'; detail: string };

/**
 * Parses the record at `buffer[at..end)`, checksum included. `short`: it does not fit (torn, or
 * past the window).
 */
export function parseRecord(buffer: Buffer, at: number, end: number): Parsed {
  if (end - at < 4) return { kind: 'short' };
  const magic = buffer.readUInt32LE(at);
  if (magic === BLOCK_MAGIC) return parseBlock(buffer, at, end);
  if (magic !== RECORD_MAGIC) return { kind: 'bad', detail: 'bad record magic' };
  if (end - at < RECORD_HEAD) return { kind: 'short' };
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

function parseBlock(buffer: Buffer, at: number, end: number): Parsed {
  const head = parseBlockHead(buffer, at, end);
  if (head.kind !== 'ok') return head;
  const length = head.length;
  if (end - at < length) return { kind: 'short' };
  if (checksum(buffer.subarray(at, at + length - RECORD_TAIL)) !== buffer.readUInt32LE(at + length - RECORD_TAIL)) return { kind: 'bad', detail: 'block checksum mismatch' };
  return { kind: 'ok', length, block: head.table };
}

/**
 * The head and member table of the block record at `buffer[at..end)`, without its checksum (an
 * index load reads only this much of each block; every read of a member checks the whole record).
 */
export function parseBlockHead(buffer: Buffer, at: number, end: number): { kind: 'ok'; length: number; table: BlockTable } | { kind: 'short' } | { kind: 'bad'; detail: string } {
  if (end - at < BLOCK_HEAD) return { kind: 'short' };
  if (buffer.readUInt32LE(at) !== BLOCK_MAGIC) return { kind: 'bad', detail: 'bad block magic' };
  const bodyLength = buffer.readUInt32LE(at + 4);
  const count = buffer.readUInt16LE(at + 8);
  const encoding = buffer[at + 10] as number;
  if (count === 0 || bodyLength === 0 || bodyLength > BLOCK_MAX_RAW_BYTES || (encoding !== BLOCK_RAW && encoding !== BLOCK_BROTLI)) {
    return { kind: 'bad', detail: 'bad block head' };
  }
  const tableLength = buffer.readUInt32LE(at + 11);
  if (tableLength < 9 * count || tableLength > MEMBER_MAX_BYTES * count) return { kind: 'bad', detail: 'bad block table length' };
  const bodyAt = BLOCK_HEAD + tableLength;
  if (end - at < bodyAt) return { kind: 'short' };
  const members: BlockMemberKey[] = new Array<BlockMemberKey>(count);
  let rawLength = 0;
  const tableEnd = at + bodyAt;
  let p = at + BLOCK_HEAD;
  for (let i = 0; i < count; i++) {
    const hash = p + 8 <= tableEnd ? buffer.toString('hex', p, p + 8) : undefined;
    const sized = hash === undefined ? undefined : readVarint(buffer, p + 8, tableEnd);
    if (sized === undefined) return { kind: 'bad', detail: 'bad block table' };
    const [doubled, next] = sized;
    const size = Math.floor(doubled / 2);
    p = next;
    let suffix = 0;
    if (doubled % 2 === 1) {
      const read = readVarint(buffer, p, tableEnd);
      if (read === undefined || read[0] === 0 || read[0] > MAX_MEMBER_SUFFIX) return { kind: 'bad', detail: 'bad block table' };
      [suffix, p] = read;
    }
    if (size > BLOCK_MEMBER_MAX_BYTES) return { kind: 'bad', detail: 'bad block member size' };
    members[i] = { key: `${hash as string}-${size.toString(16)}${suffix === 0 ? '' : `.${suffix}`}`, size };
    rawLength += size;
  }
  if (p !== tableEnd) return { kind: 'bad', detail: 'bad block table' };
  if (rawLength > BLOCK_MAX_RAW_BYTES || (encoding === BLOCK_RAW && rawLength !== bodyLength)) return { kind: 'bad', detail: 'bad block lengths' };
  return { kind: 'ok', length: bodyAt + bodyLength + RECORD_TAIL, table: { members, rawLength, encoding, tableLength, bodyAt, bodyLength } };
}

/** The stored bytes of a one-object record (encoding byte first) within the record. */
export function storedBytesOf(record: Buffer): Buffer {
  const keyLength = record[8] as number;
  return record.subarray(RECORD_HEAD + keyLength, record.length - RECORD_TAIL);
}

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
export function readHeader(fd: number, size: number): { header: PackHeader; end: number } | undefined {
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
