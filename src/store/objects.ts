import { constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { DIR_MODE, FILE_MODE, GRACE_MS, type StoreLayout } from './layout.js';

const deflateRawAsync = promisify(deflateRaw);

/** Header byte of an object stored verbatim. */
const RAW = 0;
/** Header byte of an object stored as raw deflate. */
const DEFLATE = 1;
/** Objects smaller than this are never compressed: the header and the call cost more than they save. */
const COMPRESS_MIN_BYTES = 1024;
/** Above this size compression runs on the thread pool instead of blocking the event loop. */
const COMPRESS_SYNC_MAX_BYTES = 1024 * 1024;
/** Collision suffixes beyond this mean something is badly wrong (or hostile); stop. */
const MAX_SUFFIX = 1000;

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

/** What {@link ObjectStore.putFile} returns: the object plus the file's permission bits. */
export interface FileObjectRef extends ObjectRef {
  /** Permission bits (`mode & 0o7777`) read with the bytes. */
  mode: number;
}

/**
 * What the caller believes a file looks like (from a scan). Any field that differs from what is
 * read makes `putFile` throw `CONFLICT` instead of storing bytes the caller did not mean.
 */
export interface PutFileExpectation {
  size?: number;
  mtimeMs?: number;
  hash?: string;
}

/** An object file as listed for gc and verify. */
export interface ObjectFileInfo {
  key: string;
  /** Absolute path. */
  path: string;
  /** Bytes on disk (after compression). */
  diskSize: number;
  mtimeMs: number;
}

const EMPTY = new Uint8Array(0);

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

/** Decodes a stored object file into its original bytes. Throws on an unknown header or bad deflate data. */
export function decodeObject(stored: Buffer): Buffer {
  if (stored.length === 0) throw new Error('empty object file');
  const header = stored[0];
  const body = stored.subarray(1);
  if (header === RAW) return body;
  if (header === DEFLATE) return inflateRawSync(body);
  throw new Error(`unknown object header ${String(header)}`);
}

async function encodeObject(bytes: Uint8Array): Promise<[Uint8Array, Uint8Array]> {
  if (bytes.length >= COMPRESS_MIN_BYTES) {
    // Level 1: most of the gain for text at a fraction of the CPU. Kept only when it saves >= 10%.
    const packed = bytes.length <= COMPRESS_SYNC_MAX_BYTES ? deflateRawSync(bytes, { level: 1 }) : await deflateRawAsync(bytes, { level: 1 });
    if (packed.length * 10 <= bytes.length * 9) return [HEADER_DEFLATE, packed];
  }
  return [HEADER_RAW, bytes];
}

const HEADER_RAW = Uint8Array.of(RAW);
const HEADER_DEFLATE = Uint8Array.of(DEFLATE);

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/**
 * Content-addressed, write-once object storage under `objects/v1/<2 hex>/<key>`.
 *
 * Durability: objects are NOT fsynced (this is the capture hot path). A new object is written to a
 * temp file and linked into place, so a process crash never leaves a torn object under a final
 * key; a power loss may, and `verify` (and every read, which re-checks size and hash) catches it.
 */
export class ObjectStore {
  private readonly fs: FileSystem;
  private readonly layout: StoreLayout;
  private readonly knownDirs = new Set<string>();
  private readonly inFlight = new Map<string, { bytes: Uint8Array; promise: Promise<ObjectRef> }>();
  private spare: Promise<string | undefined> | undefined;
  private closed = false;

  constructor(fs: FileSystem, layout: StoreLayout) {
    this.fs = fs;
    this.layout = layout;
  }

  /**
   * Stores `bytes` (write-once) and returns its key. A key that already exists is confirmed byte
   * for byte, because xxh64 is not collision resistant; different bytes go to the next free
   * `.N` suffix.
   */
  async putBytes(bytes: Uint8Array): Promise<ObjectRef> {
    await loadHasher();
    return this.putHashed(bytes, contentHash(bytes));
  }

  /** `prepared`: a temp file already holding the encoded bytes; consumed (linked or removed) here. */
  private async putHashed(bytes: Uint8Array, hash: string, prepared?: Promise<string>): Promise<ObjectRef> {
    const base = baseObjectKey(hash, bytes.length);
    const pending = this.inFlight.get(base);
    if (pending) {
      if (bytesEqual(pending.bytes, bytes)) {
        if (prepared) prepared.then((temp) => this.fs.unlink(temp)).catch(() => undefined);
        return pending.promise;
      }
      // Same key, different bytes (a collision) racing in this process: go after it.
      await pending.promise.catch(() => undefined);
      return this.putHashed(bytes, hash, prepared);
    }
    const promise = this.store(bytes, hash, base, prepared);
    this.inFlight.set(base, { bytes, promise });
    try {
      return await promise;
    } finally {
      this.inFlight.delete(base);
    }
  }

  private async store(bytes: Uint8Array, hash: string, base: string, prepared?: Promise<string>): Promise<ObjectRef> {
    let temp: string | undefined;
    try {
      if (prepared) temp = await prepared;
      // Write first, compare on EEXIST: a first capture (the common case) pays no existence probe.
      for (let suffix = 0; suffix <= MAX_SUFFIX; ) {
        const key = suffix === 0 ? base : `${base}.${suffix}`;
        const target = this.layout.objectPath(key);
        temp ??= await this.writeTemp(bytes);
        if (await this.linkInto(temp, target)) return { object: key, hash, size: bytes.length };
        const existing = await this.readForCompare(target);
        if (existing === undefined) continue; // removed meanwhile: try the same key again
        if (existing !== null && bytesEqual(existing, bytes)) return { object: key, hash, size: bytes.length };
        suffix += 1;
      }
      throw new CheckpointError('IO', `too many colliding objects for ${base}`);
    } catch (error) {
      throw asCheckpointError(error, 'cannot store object');
    } finally {
      // Not awaited: nothing depends on it, and a leftover temp file is removed by prune.
      if (temp !== undefined) this.fs.unlink(temp).catch(() => undefined);
    }
  }

  /**
   * Reads a stored object for dedupe comparison: `undefined` when absent, `null` when it does not
   * decode. An old object about to be reused gets its mtime refreshed so a concurrent prune's
   * grace period protects it until the new reference is written.
   */
  private async readForCompare(target: string): Promise<Buffer | null | undefined> {
    let handle: FileHandle;
    try {
      handle = await this.fs.open(target, 'r');
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const stats = await handle.stat();
      const stored = await readExactly(handle, stats.size);
      const now = Date.now();
      if (now - stats.mtimeMs > GRACE_MS / 2) await handle.utimes(now / 1000, now / 1000);
      try {
        return stored === undefined ? null : decodeObject(stored);
      } catch {
        return null;
      }
    } finally {
      await handle.close();
    }
  }

  private async writeTemp(bytes: Uint8Array): Promise<string> {
    const [header, body] = await encodeObject(bytes);
    const temp = await this.takeTemp();
    try {
      // 'r+' on the empty file we created exclusively (tmp/ is 0700 and ours): no truncation needed.
      const handle = await this.fs.open(temp, 'r+');
      try {
        await handle.writev([header, body]);
      } catch (error) {
        await handle.close().catch(() => undefined);
        throw error;
      }
      // The bytes are in the file once writev returns; linking need not wait for close.
      handle.close().catch(() => undefined);
    } catch (error) {
      this.fs.unlink(temp).catch(() => undefined);
      throw error;
    }
    return temp;
  }

  /**
   * A fresh, empty temp file created exclusively. Creating an inode is by far the most expensive
   * step of a put (hundreds of microseconds on a busy ext4, against tens for opening an existing
   * file), so the next one is always being created in the background and the hot path usually
   * just takes it. Only a path is kept between calls, never an open descriptor.
   */
  private async takeTemp(): Promise<string> {
    const spare = this.spare;
    this.spare = undefined;
    const taken = (spare ? await spare : undefined) ?? (await this.createTemp());
    if (!this.closed) this.spare = this.createTemp().catch(() => undefined);
    return taken;
  }

  private async createTemp(): Promise<string> {
    const temp = this.layout.tempPath();
    await this.fs.writeFile(temp, EMPTY, { flag: 'wx', mode: FILE_MODE });
    return temp;
  }

  /** Removes the spare temp file. Puts after this still work, without a spare. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = await this.spare;
    this.spare = undefined;
    if (spare) await this.fs.unlink(spare).catch(() => undefined);
  }

  /** Links `temp` to `target` without overwriting; false when `target` exists. */
  private async linkInto(temp: string, target: string): Promise<boolean> {
    const dir = path.dirname(target);
    if (!this.knownDirs.has(dir)) {
      await this.fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
      this.knownDirs.add(dir);
    }
    try {
      await this.fs.link(temp, target);
      return true;
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'EEXIST') return false;
      if (code === 'ENOENT') {
        this.knownDirs.delete(dir);
        await this.fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
        this.knownDirs.add(dir);
        return this.linkInto(temp, target);
      }
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
        // File systems without hard links: check, then rename. The window only matters for a
        // concurrent xxh64 collision, which the next read's hash check would still catch.
        try {
          await this.fs.lstat(target);
          return false;
        } catch (statError) {
          if (errnoCode(statError) !== 'ENOENT') throw statError;
        }
        await this.fs.copyFile(temp, target, fsConstants.COPYFILE_EXCL);
        return true;
      }
      throw error;
    }
  }

  /**
   * Stores the current bytes of the regular file at `absPath`, refusing symlinks and anything
   * that changes while it is read.
   *
   * @throws CheckpointError `CONFLICT` when the file is not a regular file (any more), vanished,
   *   differs from `expected`, or changed size or mtime during the read; `IO` otherwise.
   */
  async putFile(absPath: string, expected?: PutFileExpectation): Promise<FileObjectRef> {
    let handle: FileHandle;
    try {
      // O_NOFOLLOW: never read through a symlink. O_NONBLOCK: a FIFO swapped in must not hang us.
      handle = await this.fs.open(absPath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') {
        throw new CheckpointError('CONFLICT', `file is gone or is no longer a regular file: ${absPath}`, { path: absPath, cause: error });
      }
      throw asCheckpointError(error, 'cannot open file', absPath);
    }
    let prepared: Promise<string> | undefined;
    try {
      const before = await handle.stat();
      if (!before.isFile()) {
        throw new CheckpointError('CONFLICT', `not a regular file: ${absPath}`, { path: absPath });
      }
      if (expected?.size !== undefined && expected.size !== before.size) {
        throw new CheckpointError('CONFLICT', `file size changed: ${absPath}`, { path: absPath, expected: String(expected.size), found: String(before.size) });
      }
      if (expected?.mtimeMs !== undefined && expected.mtimeMs !== before.mtimeMs) {
        throw new CheckpointError('CONFLICT', `file was modified: ${absPath}`, { path: absPath, expected: String(expected.mtimeMs), found: String(before.mtimeMs) });
      }
      const bytes = await readExactly(handle, before.size);
      if (bytes === undefined) throw new CheckpointError('CONFLICT', `file shrank while it was read: ${absPath}`, { path: absPath });
      // The change check (second fstat) runs while the temp object is written: one round trip fewer.
      const afterStat = handle.stat();
      afterStat.catch(() => undefined);
      await loadHasher();
      const hash = contentHash(bytes);
      if (expected?.hash !== undefined && expected.hash !== hash) {
        throw new CheckpointError('CONFLICT', `file content changed: ${absPath}`, { path: absPath, expected: expected.hash, found: hash });
      }
      prepared = this.writeTemp(bytes);
      prepared.catch(() => undefined);
      const after = await afterStat;
      if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
        throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
      }
      const ready = prepared;
      prepared = undefined;
      const ref = await this.putHashed(bytes, hash, ready);
      return { ...ref, mode: before.mode & 0o7777 };
    } catch (error) {
      throw asCheckpointError(error, 'cannot read file', absPath);
    } finally {
      // Not awaited: closing in the background takes a round trip off the hot path.
      handle.close().catch(() => undefined);
      if (prepared) prepared.then((temp) => this.fs.unlink(temp)).catch(() => undefined);
    }
  }

  /**
   * The original bytes of an object, after checking size and hash against its key.
   *
   * @throws CheckpointError `INTEGRITY` when missing, undecodable, or the size/hash differ
   *   (never returns wrong bytes); `INVALID_ARGUMENT` for a malformed key.
   */
  async readObject(key: string): Promise<Buffer> {
    const parsed = parseObjectKey(key);
    if (!parsed) throw new CheckpointError('INVALID_ARGUMENT', `not an object key: ${JSON.stringify(String(key).slice(0, 80))}`);
    const file = this.layout.objectPath(key);
    let stored: Buffer;
    try {
      stored = await this.fs.readFile(file);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') {
        throw new CheckpointError('INTEGRITY', `object ${key} is missing`, { path: file, expected: key, found: 'missing', cause: error });
      }
      throw asCheckpointError(error, `cannot read object ${key}`, file);
    }
    await loadHasher();
    return checkObject(key, parsed, stored, file);
  }

  /** True when an object file exists under `key` (content not checked; see `readObject`). */
  async hasObject(key: string): Promise<boolean> {
    if (!isObjectKey(key)) return false;
    try {
      return (await this.fs.lstat(this.layout.objectPath(key))).isFile();
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return false;
      throw asCheckpointError(error, `cannot inspect object ${key}`);
    }
  }

  /** Every object file in the store (well-formed names only), with its disk size and mtime. */
  async listObjects(): Promise<ObjectFileInfo[]> {
    const result: ObjectFileInfo[] = [];
    let fanouts: string[];
    try {
      fanouts = await this.fs.readdir(this.layout.objectsDir);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return result;
      throw asCheckpointError(error, 'cannot list objects', this.layout.objectsDir);
    }
    for (const fanout of fanouts.sort()) {
      if (!/^[0-9a-f]{2}$/.test(fanout)) continue;
      const dir = path.join(this.layout.objectsDir, fanout);
      let names: string[];
      try {
        names = await this.fs.readdir(dir);
      } catch (error) {
        if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') continue;
        throw asCheckpointError(error, 'cannot list objects', dir);
      }
      for (const name of names.sort()) {
        if (!isObjectKey(name) || !name.startsWith(fanout)) continue;
        const file = path.join(dir, name);
        try {
          const stats = await this.fs.lstat(file);
          if (stats.isFile()) result.push({ key: name, path: file, diskSize: stats.size, mtimeMs: stats.mtimeMs });
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot inspect object', file);
        }
      }
    }
    return result;
  }
}

/** Decodes and checks a stored object against its key; throws `INTEGRITY` on any mismatch. */
export async function checkObjectBytes(key: string, stored: Buffer, file: string): Promise<Buffer> {
  const parsed = parseObjectKey(key);
  if (!parsed) throw new CheckpointError('INVALID_ARGUMENT', `not an object key: ${key}`);
  await loadHasher();
  return checkObject(key, parsed, stored, file);
}

function checkObject(key: string, parsed: { hash: string; size: number }, stored: Buffer, file: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = decodeObject(stored);
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

/** Reads exactly `size` bytes from the start; `undefined` when the file turns out shorter or longer. */
async function readExactly(handle: FileHandle, size: number): Promise<Buffer | undefined> {
  // A file that grew after fstat is caught by the caller's second fstat, so no EOF probe here.
  const buffer = Buffer.allocUnsafe(size);
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesRead } = await handle.read(buffer, offset, buffer.length - offset, offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return offset === size ? buffer.subarray(0, size) : undefined;
}
