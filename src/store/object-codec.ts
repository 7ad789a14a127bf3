import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { promisify } from 'node:util';
import { CheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';

// The object key codec and the stored encoding of an object (a header byte, then the bytes raw
// or as raw deflate), with the check every read makes against the key.

const deflateRawAsync = promisify(deflateRaw);

/** Header byte of an object stored verbatim. */
export const RAW = 0;
/** Header byte of an object stored as raw deflate. */
export const DEFLATE = 1;
/** Objects smaller than this are never compressed: the header and the call cost more than they save. */
export const COMPRESS_MIN_BYTES = 1024;
/** Above this size compression runs on the thread pool instead of blocking the event loop. */
const COMPRESS_SYNC_MAX_BYTES = 1024 * 1024;

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

/** The stored encoding of `bytes`: header and body, deflated when that saves at least 10 %. */
export async function encodeObject(bytes: Uint8Array): Promise<[Uint8Array, Uint8Array]> {
  if (bytes.length >= COMPRESS_MIN_BYTES && looksCompressible(bytes)) {
    // Level 1: most of the gain for text at a fraction of the CPU. Kept only when it saves >= 10%.
    const packed = bytes.length <= COMPRESS_SYNC_MAX_BYTES ? deflateRawSync(bytes, deflateOptions(bytes.length)) : await deflateRawAsync(bytes, deflateOptions(bytes.length));
    if (packed.length * 10 <= bytes.length * 9) return [HEADER_DEFLATE, packed];
  }
  return [HEADER_RAW, bytes];
}

const HEADER_RAW = Uint8Array.of(RAW);
const HEADER_DEFLATE = Uint8Array.of(DEFLATE);

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

