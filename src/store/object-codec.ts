import { brotliCompress, brotliDecompressSync, constants as zlibConstants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { promisify } from 'node:util';
import { CheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';

// The object key codec and the stored encoding of an object (a header byte, then the bytes raw
// or as raw deflate), with the check every read makes against the key.

const brotliCompressAsync = promisify(brotliCompress) as (bytes: Uint8Array, options: { params: Record<number, number> }) => Promise<Buffer>;

/** Header byte of an object stored verbatim. */
export const RAW = 0;
/** Header byte of an object stored as raw deflate. */
export const DEFLATE = 1;
/** Header byte of an object stored as brotli (layout version 3: large objects). */
export const BROTLI = 2;
/** Objects smaller than this are never compressed: the header and the call cost more than they save. */
export const COMPRESS_MIN_BYTES = 1024;
/**
 * Brotli quality of blocks and large objects. Measured on prettier's files ≤ 256 KiB: quality 5
 * in 1 MiB blocks 3.15 MB, quality 6 in 2 MiB blocks 3.09 MB, quality 7 3.07 MB at about twice
 * quality 6's time; the whole store after the 21-picture bench 5,016 / 4,972 / 4,948 KiB. Quality
 * 6 costs about what deflate level 1 file by file did (it stored 5.86 MB), and it runs on the
 * thread pool, beside the picture's reads. prettier's 3 MB minified yarn release: 0.99 MB
 * (deflate level 1: 1.17 MB).
 */
const BROTLI_QUALITY = 6;
/**
 * The quality of what is compressed on the calling thread (small blocks): quality 6's encoder
 * keeps 4.2 MiB resident after its first use here, quality 5's 1.4 MiB (deflate level 1: 0.9),
 * and a small block loses little by it.
 */
const BROTLI_QUALITY_HERE = 5;

/**
 * Brotli options for `size` bytes: the window no larger than the input (the decoder's ring buffer
 * follows it); `here`: compressed on the calling thread (see {@link BROTLI_QUALITY_HERE}).
 */
export function brotliOptions(size: number, here = false): { params: Record<number, number> } {
  const window = Math.min(22, Math.max(16, Math.ceil(Math.log2(Math.max(size, 1)))));
  return {
    params: {
      [zlibConstants.BROTLI_PARAM_QUALITY]: here ? BROTLI_QUALITY_HERE : BROTLI_QUALITY,
      [zlibConstants.BROTLI_PARAM_LGWIN]: window,
      [zlibConstants.BROTLI_PARAM_SIZE_HINT]: size,
    },
  };
}

/** Decodes brotli `body` into at most `size + 1` bytes (a bomb costs that much, never more). */
export function brotliUnpack(body: Uint8Array, size: number): Buffer {
  return brotliDecompressSync(body, { maxOutputLength: Math.max(1, size + 1) });
}

const KEY_PATTERN = /^([0-9a-f]{16})-([0-9a-f]{1,13})(?:\.([1-9][0-9]{0,3}))?$/;

/** A stored object: its key plus the identity of its original bytes. */
export interface ObjectRef {
  /** Store key: `<xxh64>-<size hex>`, with a `.N` suffix after an xxh64 collision. */
  object: string;
  /** xxh64 of the original bytes (16 hex digits). */
  hash: string;
  /** Original size in bytes. */
  size: number;
}

/** The parts of a well-formed object key, or `undefined` when malformed. */
export function parseObjectKey(key: unknown): { hash: string; size: number; suffix: number } | undefined {
  if (typeof key !== 'string') return undefined;
  const match = KEY_PATTERN.exec(key);
  if (!match) return undefined;
  return { hash: match[1] as string, size: parseInt(match[2] as string, 16), suffix: match[3] === undefined ? 0 : Number(match[3]) };
}

/** True when `key` is a well-formed object key. */
export function isObjectKey(key: unknown): key is string {
  return parseObjectKey(key) !== undefined;
}

/** The key (without collision suffix) of content with this hash and size. */
export function baseObjectKey(hash: string, size: number): string {
  return `${hash}-${size.toString(16)}`;
}

/** Global pattern that finds object keys in arbitrary text (used to salvage references from unreadable manifests). */
export const OBJECT_KEY_SCAN: RegExp = /[0-9a-f]{16}-[0-9a-f]{1,13}(?:\.[1-9][0-9]{0,3})?/g;

/**
 * Decodes a stored object file into its original bytes. `size` is the size its key names: the
 * decoder stops one byte past it, so a deflate bomb in place of an object costs that much memory
 * and time, never gigabytes (the caller then reports the wrong size). Throws on an unknown header,
 * bad deflate data, or output past `size`.
 */
export function decodeObject(stored: Buffer, size: number): Buffer {
  if (stored.length === 0) throw new Error('empty object file');
  const header = stored[0];
  const body = stored.subarray(1);
  if (header === RAW) return body;
  if (header === DEFLATE) return inflateRawSync(body, { maxOutputLength: size + 1 });
  if (header === BROTLI) return brotliUnpack(body, size);
  throw new Error(`unknown object header ${String(header)}`);
}

/** Large objects are first test-compressed on a sample this big. */
const COMPRESS_SAMPLE_BYTES = 64 * 1024;

/**
 * True when a sample from the middle of `bytes` shrinks by at least 10%. Large files that do not
 * (media, archives, already-compressed data) would cost a full deflate pass for nothing: about
 * 50 ms per 10 MB of CPU on the capture path.
 */
function looksCompressible(bytes: Uint8Array): boolean {
  if (bytes.length <= COMPRESS_SAMPLE_BYTES * 2) return true;
  const start = Math.floor((bytes.length - COMPRESS_SAMPLE_BYTES) / 2);
  const sample = bytes.subarray(start, start + COMPRESS_SAMPLE_BYTES);
  return deflateRawSync(sample, deflateOptions(sample.length)).length * 10 <= sample.length * 9;
}

/** The stored encoding of a large object: header and body, brotli (on the thread pool) when that saves at least 10 %. */
export async function encodeObject(bytes: Uint8Array): Promise<[Uint8Array, Uint8Array]> {
  if (bytes.length >= COMPRESS_MIN_BYTES && looksCompressible(bytes)) {
    const packed = await brotliCompressAsync(bytes, brotliOptions(bytes.length));
    if (packed.length * 10 <= bytes.length * 9) return [HEADER_BROTLI, packed];
  }
  return [HEADER_RAW, bytes];
}

const HEADER_RAW = Uint8Array.of(RAW);
const HEADER_DEFLATE = Uint8Array.of(DEFLATE);
const HEADER_BROTLI = Uint8Array.of(BROTLI);

/** True when two byte arrays hold the same bytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** Synchronous encoding for small objects (≤ PACK_OBJECT_MAX_BYTES, so deflate stays well under a millisecond). */
export function encodeObjectSync(bytes: Uint8Array, compress = true): [Uint8Array, Uint8Array] {
  if (compress && bytes.length >= COMPRESS_MIN_BYTES) {
    const packed = deflateRawSync(bytes, deflateOptions(bytes.length));
    if (packed.length * 10 <= bytes.length * 9) return [HEADER_DEFLATE, packed];
  }
  return [HEADER_RAW, bytes];
}

/**
 * Level 1 with a window no larger than the input: zlib's default 32 KiB window and 128 KiB hash
 * table are allocated and cleared for every call, which made deflating a 2 KB object cost
 * 0.25-0.7 ms; sized to the input the output is the same and the call 5-10x cheaper. Raw inflate
 * (window 15) reads streams made with any smaller window, so stored objects do not change format.
 */
function deflateOptions(size: number): { level: number; windowBits: number; memLevel: number } {
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(Math.max(size, 1)))));
  return { level: 1, windowBits, memLevel: Math.min(8, Math.max(1, windowBits - 6)) };
}

/** Decodes and checks a stored object against its key; throws `INTEGRITY` on any mismatch. */
export async function checkObjectBytes(key: string, stored: Buffer, file: string): Promise<Buffer> {
  const parsed = parseObjectKey(key);
  if (!parsed) throw new CheckpointError('INVALID_ARGUMENT', `not an object key: ${key}`);
  await loadHasher();
  return checkObject(key, parsed, stored, file);
}

/** {@link checkObjectBytes} with the key already parsed and the hasher loaded. */
export function checkObject(key: string, parsed: { hash: string; size: number }, stored: Buffer, file: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = decodeObject(stored, parsed.size);
  } catch (error) {
    throw new CheckpointError('INTEGRITY', `object ${key} does not decode`, { path: file, expected: key, found: 'undecodable', cause: error });
  }
  if (bytes.length !== parsed.size) {
    throw new CheckpointError('INTEGRITY', `object ${key} has the wrong size`, { path: file, expected: String(parsed.size), found: String(bytes.length) });
  }
  const found = contentHash(bytes);
  if (found !== parsed.hash) {
    throw new CheckpointError('INTEGRITY', `object ${key} has the wrong hash`, { path: file, expected: parsed.hash, found });
  }
  return bytes;
}

