import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, readdirSync } from 'node:fs';
import { utimes, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { DIR_MODE, FILE_MODE, GRACE_MS, type StoreLayout } from './layout.js';
import { baseObjectKey, bytesEqual, checkObject, decodeObject, encodeObject, isObjectKey, type ObjectRef } from './object-codec.js';
import { PACK_OBJECT_MAX_BYTES } from './packs.js';

/** Collision suffixes beyond this mean something is badly wrong (or hostile); stop. */
export const MAX_SUFFIX = 1000;

/** An object (loose file or pack record) as listed for gc and verify. */
export interface ObjectFileInfo {
  key: string;
  /** Absolute path. */
  path: string;
  /** Bytes on disk (after compression). */
  diskSize: number;
  mtimeMs: number;
  /** For a packed object: the pack's file name. */
  pack?: string;
  /** For a packed object: the record's offset in its pack. */
  offset?: number;
  /** For a packed object: the length of the record holding it (its block's, for a block member). */
  recordLength?: number;
}

/**
 * Loose objects: one file per object under `objects/v1/<2 hex>/<key>`, written to a temp file and
 * linked into place (never overwritten). Objects above the pack threshold live here, as do the
 * small objects of a layout-1 store, which stay readable.
 */
export class LooseObjects {
  private readonly knownDirs = new Set<string>();
  private readonly inFlight = new Map<string, { bytes: Uint8Array; promise: Promise<ObjectRef> }>();
  /**
   * True when `objects/v1/` holds fan-out folders: a layout-1 store may have small loose objects,
   * so a put that misses the pack index also probes the loose path. A store created with packs
   * never writes small loose objects, and skips that failed `open` per new object.
   */
  private folders = true;
  private foldersCheckedAt = 0;
  /** Loose objects read back and found good (or written here), by key: the file's identity then. */
  private readonly confirmed = new Map<string, string>();

  constructor(
    private readonly fs: FileSystem,
    private readonly layout: StoreLayout,
    /**
     * Runs `fn` under the store lock. Used only when a dedupe hit lands on an old loose object,
     * so that refreshing its mtime cannot race a prune deleting it.
     */
    private readonly withLock: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {}

  /**
   * Stores `bytes` (whose xxh64 is `hash`) as a loose object; concurrent puts of one key share one
   * write. `elsewhere` says what other copies of a key hold (a picture's block in a pack may hold
   * a large object too): `equal` (the key is these bytes already), `taken` (other bytes, or a
   * damaged copy: never this key), `free`. A key never names two different contents.
   */
  async put(bytes: Uint8Array, hash: string, elsewhere?: (key: string) => 'equal' | 'taken' | 'free'): Promise<ObjectRef> {
    const base = baseObjectKey(hash, bytes.length);
    const pending = this.inFlight.get(base);
    if (pending) {
      if (bytesEqual(pending.bytes, bytes)) return pending.promise;
      // Same key, different bytes (a collision) racing in this process: go after it.
      await pending.promise.catch(() => undefined);
      return this.put(bytes, hash, elsewhere);
    }
    const promise = this.store(bytes, hash, base, elsewhere);
    this.inFlight.set(base, { bytes, promise });
    try {
      return await promise;
    } finally {
      this.inFlight.delete(base);
    }
  }

  /** Stores a large object as a loose file: temp file, `link` into place (never overwriting). */
  private async store(bytes: Uint8Array, hash: string, base: string, elsewhere?: (key: string) => 'equal' | 'taken' | 'free'): Promise<ObjectRef> {
    let temp: string | undefined;
    try {
      // Write first, compare on EEXIST: a first capture (the common case) pays no existence probe.
      for (let suffix = 0; suffix <= MAX_SUFFIX; ) {
        const key = suffix === 0 ? base : `${base}.${suffix}`;
        const other = elsewhere?.(key);
        if (other === 'equal') return { object: key, hash, size: bytes.length };
        if (other === 'taken') {
          suffix += 1;
          continue;
        }
        const target = this.layout.objectPath(key);
        temp ??= await this.writeTemp(bytes, hash);
        if (await this.linkInto(temp, target)) {
          // Checked as a temp file before the link (writeTemp): a picture need not read it back.
          await this.noteConfirmed(key, target);
          return { object: key, hash, size: bytes.length };
        }
        const existing = await this.readForCompare(target, bytes.length);
        if (existing === undefined) continue; // removed meanwhile: try the same key again
        if (existing !== null && bytesEqual(existing, bytes)) return { object: key, hash, size: bytes.length };
        suffix += 1;
      }
      throw new CheckpointError('IO', `too many colliding objects for ${base}`);
    } catch (error) {
      throw asCheckpointError(error, 'cannot store object');
    } finally {
      // A leftover temp file is removed by prune.
      if (temp !== undefined) await this.fs.unlink(temp).catch(() => undefined);
    }
  }

  /**
   * Reads a loose object for dedupe comparison: `undefined` when absent, `null` when it does not
   * decode. An old object about to be reused gets its mtime refreshed, under the store lock so a
   * concurrent prune cannot delete it between its age check and its unlink.
   */
  private async readForCompare(target: string, size: number): Promise<Buffer | null | undefined> {
    let handle: FileHandle;
    try {
      handle = await this.fs.open(target, 'r');
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    let stored: Buffer | undefined;
    let mtimeMs: number;
    try {
      const stats = await handle.stat();
      mtimeMs = stats.mtimeMs;
      stored = await readExactly(handle, stats.size);
    } finally {
      await handle.close();
    }
    if (Date.now() - mtimeMs > GRACE_MS / 2) {
      const kept = await this.withLock(async () => {
        try {
          const now = Date.now() / 1000;
          await utimes(target, now, now);
          return true;
        } catch (error) {
          if (errnoCode(error) === 'ENOENT') return false;
          throw error;
        }
      });
      if (!kept) return undefined;
    }
    try {
      return stored === undefined ? null : decodeObject(stored, size);
    } catch {
      return null;
    }
  }

  /**
   * Writes the encoded object to a temp file and confirms it before anyone can link it: every
   * byte written (a short write on a full disk is retried until it fails with its errno), then
   * the file read back, its size, decoding and hash checked against the key. A stump is never
   * published as a whole object.
   */
  private async writeTemp(bytes: Uint8Array, hash: string): Promise<string> {
    const [header, body] = await encodeObject(bytes);
    const stored = header.length + body.length;
    const temp = this.layout.tempPath();
    const handle = await this.fs.open(temp, 'wx', FILE_MODE);
    try {
      for (const part of [header, body]) {
        for (let done = 0; done < part.length; ) {
          const { bytesWritten } = await handle.write(part, done, part.length - done);
          if (bytesWritten === 0) throw Object.assign(new Error('no space left on device (write wrote nothing)'), { code: 'ENOSPC' });
          done += bytesWritten;
        }
      }
      await handle.close();
      const written = await this.fs.readFile(temp);
      if (written.length !== stored) throw new CheckpointError('IO', `object temp file has ${written.length} of ${stored} bytes`, { path: temp });
      checkObject(baseObjectKey(hash, bytes.length), { hash, size: bytes.length }, written, temp);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await this.fs.unlink(temp).catch(() => undefined);
      throw error;
    }
    return temp;
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
        // File systems without hard links: check, then copy. The window only matters for a
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

  private async noteConfirmed(key: string, target: string): Promise<void> {
    try {
      this.confirmed.set(key, identityOf(await this.fs.lstat(target)));
    } catch {
      // Unconfirmed: the next picture that reuses it reads it back.
    }
  }

  /**
   * True when loose object `key` is good: decoded and hashed now, or earlier in this process while
   * its file was the same (inode, size, ctime, mtime). Synchronous: it runs inside a picture's walk.
   * Call `loadHasher` first.
   */
  confirm(key: string, parsed: { hash: string; size: number }): boolean {
    const file = this.layout.objectPath(key);
    let fd: number;
    try {
      fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch {
      return false;
    }
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) return false;
      const identity = identityOf(stats);
      if (this.confirmed.get(key) === identity) return true;
      this.confirmed.delete(key);
      const stored = readExactlySync(fd, stats.size);
      if (stored === undefined) return false;
      checkObject(key, parsed, stored, file);
      this.confirmed.set(key, identity);
      return true;
    } catch {
      return false;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * A loose copy of a key a pack could hold (a small one of layout version 1, or a large one a
   * picture's block may take), read for dedupe; `null` when undecodable.
   */
  readForDedupe(key: string, size: number): { bytes: Buffer; mtimeMs: number } | null | undefined {
    if (!this.mayHoldSmall()) return undefined;
    let fd: number;
    try {
      fd = openSync(this.layout.objectPath(key), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw error;
    }
    try {
      const stats = fstatSync(fd);
      // Stored bytes are the object's plus a header (or fewer): anything much larger is not it.
      if (!stats.isFile() || stats.size > Math.max(PACK_OBJECT_MAX_BYTES, size) * 2) return null;
      const stored = readExactlySync(fd, stats.size);
      if (stored === undefined) return null;
      try {
        return { bytes: decodeObject(stored, size), mtimeMs: stats.mtimeMs };
      } catch {
        return null;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Whether small loose objects may exist (re-checked at most once a second). */
  private mayHoldSmall(): boolean {
    const now = Date.now();
    if (now - this.foldersCheckedAt >= 1000) {
      this.foldersCheckedAt = now;
      try {
        this.folders = readdirSync(this.layout.objectsDir).length > 0;
      } catch {
        this.folders = true;
      }
    }
    return this.folders;
  }

  /**
   * The original bytes of loose object `key`, checked against it.
   * @throws CheckpointError `INTEGRITY` when missing or damaged.
   */
  async read(key: string, parsed: { hash: string; size: number }): Promise<Buffer> {
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

  /** True when a loose object file exists under `key` (content not checked). */
  async has(key: string): Promise<boolean> {
    try {
      return (await this.fs.lstat(this.layout.objectPath(key))).isFile();
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return false;
      throw asCheckpointError(error, `cannot inspect object ${key}`);
    }
  }

  /** Loose object files only. */
  async list(): Promise<ObjectFileInfo[]> {
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

/** What a loose object file is on disk: a write, a truncation or a replacement changes it. */
function identityOf(stats: { ino: number; size: number; ctimeMs: number; mtimeMs: number }): string {
  return `${stats.ino}:${stats.size}:${stats.ctimeMs}:${stats.mtimeMs}`;
}

/** Reads exactly `size` bytes from the start of `fd`; `undefined` when the file turns out shorter. Bounded by the callers to small files. */
export function readExactlySync(fd: number, size: number, scratch?: Buffer): Buffer | undefined {
  const buffer = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, buffer, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return offset === size ? buffer : undefined;
}

/** Reads exactly `size` bytes from the start; `undefined` when the file turns out shorter or longer. */
export async function readExactly(handle: FileHandle, size: number): Promise<Buffer | undefined> {
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
