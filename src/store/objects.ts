import { closeSync, constants as fsConstants, fstatSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, statSync, truncateSync } from 'node:fs';
import { utimes, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { CheckpointError, asCheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { DIR_MODE, FILE_MODE, GRACE_MS, type StoreLayout } from './layout.js';
import {
  PACK_FRESH_MS,
  PACK_OBJECT_MAX_BYTES,
  PACK_ROLL_BYTES,
  MAX_RECORD_LENGTH,
  PackWriter,
  encodeRecord,
  isPackName,
  loadPackHasher,
  packFile,
  parseIndex,
  readRecord,
  closeReads,
  scanPack,
  writeIndex,
  type PackFile,
  type PackLoc,
} from './packs.js';

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

/** Decodes a stored object file into its original bytes. Throws on an unknown header or bad deflate data. */
export function decodeObject(stored: Buffer): Buffer {
  if (stored.length === 0) throw new Error('empty object file');
  const header = stored[0];
  const body = stored.subarray(1);
  if (header === RAW) return body;
  if (header === DEFLATE) return inflateRawSync(body);
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

async function encodeObject(bytes: Uint8Array): Promise<[Uint8Array, Uint8Array]> {
  if (bytes.length >= COMPRESS_MIN_BYTES && looksCompressible(bytes)) {
    // Level 1: most of the gain for text at a fraction of the CPU. Kept only when it saves >= 10%.
    const packed = bytes.length <= COMPRESS_SYNC_MAX_BYTES ? deflateRawSync(bytes, deflateOptions(bytes.length)) : await deflateRawAsync(bytes, deflateOptions(bytes.length));
    if (packed.length * 10 <= bytes.length * 9) return [HEADER_DEFLATE, packed];
  }
  return [HEADER_RAW, bytes];
}

const HEADER_RAW = Uint8Array.of(RAW);
const HEADER_DEFLATE = Uint8Array.of(DEFLATE);

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** Options of {@link ObjectStore.putFile}. */
export interface PutFileOptions {
  /**
   * Deflate the object when that saves ≥ 10 %. `false` stores a small object raw: on the
   * latency-critical first touch of a file, constructing and running a zlib stream is most of
   * the store's cost (measured 0.25–0.5 ms of +0.5–0.7 ms for 10 KB on the CI VM), while the
   * few files an agent touches per turn weigh little on disk; a later repack by prune
   * compresses them. Pictures, which store thousands of files, keep compressing.
   * @default true
   */
  compress?: boolean;
}

/** Synchronous encoding for small objects (≤ PACK_OBJECT_MAX_BYTES, so deflate stays well under a millisecond). */
function encodeObjectSync(bytes: Uint8Array, compress = true): [Uint8Array, Uint8Array] {
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

/** Options of {@link ObjectStore}. */
export interface ObjectStoreOptions {
  /**
   * Runs `fn` under the store lock. Used only when a dedupe hit lands on an old loose (large)
   * object, so that refreshing its mtime cannot race a prune deleting it.
   */
  withLock?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** How one known copy of a key compares with bytes being stored. */
type CopyVerdict = 'equal' | 'different' | 'damaged' | 'gone';

/**
 * Content-addressed, write-once object storage.
 *
 * Objects of at most {@link PACK_OBJECT_MAX_BYTES} (original size) are records appended to a pack
 * file this process owns (`objects/packs/pack-<pid>-<random>.pack`), written synchronously: a
 * put of a small file is a handful of system calls and no inode. Larger objects are loose files
 * under `objects/v1/<2 hex>/<key>` (temp file + `link`, never overwritten), as in layout
 * version 1, whose loose objects of any size stay readable.
 *
 * An in-memory index (key → pack, offset, length) serves reads, existence checks and dedupe;
 * packs of other processes are picked up by re-listing `objects/packs/` (on every read, on a
 * miss, and at most once a second during puts).
 *
 * Durability: nothing here is fsynced (this is the capture hot path). A process crash leaves at
 * most one torn record at the tail of its pack, which every scan ignores; every read re-checks
 * the record checksum, the size and the hash, so damage is an `INTEGRITY` error, never wrong bytes.
 */
export class ObjectStore {
  private readonly fs: FileSystem;
  private readonly layout: StoreLayout;
  private readonly withLock: <T>(fn: () => Promise<T>) => Promise<T>;
  private readonly knownDirs = new Set<string>();
  private readonly inFlight = new Map<string, { bytes: Uint8Array; promise: Promise<ObjectRef> }>();
  /** key → newest known record (older copies chained through `next`). */
  private readonly index = new Map<string, PackLoc>();
  private readonly packs = new Map<string, PackFile>();
  private writer: PackWriter | undefined;
  private loading: Promise<void> | undefined;
  private loaded = false;
  private lastRefresh = 0;
  /**
   * True when `objects/v1/` holds fan-out folders: a layout-1 store may have small loose objects,
   * so a put that misses the pack index also probes the loose path. A store created with packs
   * never writes small loose objects, and skips that failed `open` per new object.
   */
  private looseFolders = true;
  /** Reused by the synchronous path (small files only): no allocation per put for reading or encoding. */
  private readonly readScratch: Buffer = Buffer.allocUnsafe(PACK_OBJECT_MAX_BYTES + 1);
  private readonly recordScratch: Buffer = Buffer.allocUnsafe(MAX_RECORD_LENGTH);

  constructor(fs: FileSystem, layout: StoreLayout, options: ObjectStoreOptions = {}) {
    this.fs = fs;
    this.layout = layout;
    this.withLock = options.withLock ?? ((fn) => fn());
  }

  /** Loads the hashers and the pack index once. */
  private load(): Promise<void> {
    this.loading ??= (async () => {
      await Promise.all([loadHasher(), loadPackHasher()]);
      this.refresh();
      this.loaded = true;
    })();
    return this.loading;
  }

  /**
   * Re-lists `objects/packs/`: loads new packs (from their index file when sealed, else by
   * scanning), scans what other writers appended since, and forgets packs that were removed.
   * Synchronous and bounded by what changed since the last call.
   */
  refresh(): void {
    const now = Date.now();
    if (now - this.lastRefresh >= 1000) {
      try {
        this.looseFolders = readdirSync(this.layout.objectsDir).length > 0;
      } catch {
        this.looseFolders = true;
      }
    }
    this.lastRefresh = now;
    let names: string[];
    try {
      names = readdirSync(this.layout.packsDir);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot list packs', this.layout.packsDir);
      names = [];
    }
    const present = new Set(names);
    for (const pack of [...this.packs.values()]) {
      if (!present.has(pack.name)) {
        if (pack !== this.writer?.pack) this.forget(pack);
        continue;
      }
      if (pack.sealed || pack === this.writer?.pack) continue;
      // An unsealed pack's writer may still be completing what stopped the last scan: look again.
      pack.corruptAt = undefined;
      if (!scanPack(pack, (loc) => this.remember(loc))) {
        this.forget(pack);
        continue;
      }
      if (present.has(path.basename(pack.idxPath))) pack.sealed = true;
    }
    for (const name of names) {
      if (!isPackName(name) || this.packs.has(name)) continue;
      this.loadPack(name, present.has(`${name.slice(0, -'.pack'.length)}.idx`));
    }
  }

  private loadPack(name: string, hasIndex: boolean): void {
    const pack = packFile(this.layout.packsDir, name);
    if (hasIndex) {
      let text: string | undefined;
      try {
        text = readFileSync(pack.idxPath, 'latin1');
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot read pack index', pack.idxPath);
      }
      const parsed = text === undefined ? undefined : parseIndex(text, pack);
      if (parsed) {
        try {
          pack.mtimeMs = statSync(pack.path).mtimeMs;
        } catch (error) {
          if (errnoCode(error) === 'ENOENT') return;
          throw asCheckpointError(error, 'cannot inspect pack', pack.path);
        }
        pack.sealed = true;
        pack.scannedTo = parsed.end;
        for (const entry of parsed.entries) {
          const loc: PackLoc = { key: entry.key, pack, offset: entry.offset, length: entry.length };
          pack.records.push(loc);
          this.remember(loc);
        }
        this.packs.set(name, pack);
        return;
      }
      // A damaged index: the pack itself is the truth (verify reports the index).
      pack.sealed = text !== undefined;
    }
    if (!scanPack(pack, (loc) => this.remember(loc))) {
      for (const loc of pack.records) this.unremember(loc);
      return;
    }
    this.packs.set(name, pack);
  }

  private remember(loc: PackLoc): void {
    const head = this.index.get(loc.key);
    if (head) loc.next = head;
    this.index.set(loc.key, loc);
  }

  private unremember(loc: PackLoc): void {
    let head = this.index.get(loc.key);
    if (!head) return;
    if (head === loc) {
      if (loc.next) this.index.set(loc.key, loc.next);
      else this.index.delete(loc.key);
      return;
    }
    while (head.next && head.next !== loc) head = head.next;
    if (head.next === loc) head.next = loc.next;
  }

  /** Drops a removed pack from the index. */
  private forget(pack: PackFile): void {
    closeReads(pack);
    pack.gone = true;
    this.packs.delete(pack.name);
    for (const loc of pack.records) this.unremember(loc);
  }

  /** Re-lists packs at most once a second while putting: only for cross-process dedupe, never for correctness. */
  private refreshSoon(): void {
    if (Date.now() - this.lastRefresh >= 1000) this.refresh();
  }

  /**
   * Stores `bytes` (write-once) and returns its key. A key that already exists is confirmed byte
   * for byte, because xxh64 is not collision resistant; different bytes go to the next free
   * `.N` suffix.
   */
  async putBytes(bytes: Uint8Array, options: PutFileOptions = {}): Promise<ObjectRef> {
    if (bytes.length <= PACK_OBJECT_MAX_BYTES) {
      if (!this.loaded) await this.load();
      return this.putSmall(bytes, contentHash(bytes), options.compress !== false);
    }
    await loadHasher();
    return this.putHashed(bytes, contentHash(bytes));
  }

  /**
   * Stores a small object synchronously: dedupe against every known copy of the key (confirmed
   * byte for byte), else one record appended to this process's pack.
   */
  private putSmall(bytes: Uint8Array, hash: string, compress = true): ObjectRef {
    const base = baseObjectKey(hash, bytes.length);
    const size = bytes.length;
    this.refreshSoon();
    let refreshed = false;
    for (let suffix = 0; suffix <= MAX_SUFFIX; ) {
      const key = suffix === 0 ? base : `${base}.${suffix}`;
      const head = this.index.get(key);
      if (head === undefined) {
        const loose = this.readLooseForCompare(key);
        if (loose === undefined) {
          this.append(key, bytes, compress);
          return { object: key, hash, size };
        }
        if (loose !== null && bytesEqual(loose.bytes, bytes)) {
          // An old loose copy may be pruned any moment: keep a fresh copy in the pack instead.
          if (Date.now() - loose.mtimeMs >= PACK_FRESH_MS) this.append(key, bytes, compress);
          return { object: key, hash, size };
        }
        suffix += 1;
        continue;
      }
      let equal: PackLoc | undefined;
      let different = false;
      let gone = 0;
      let copies = 0;
      for (let loc: PackLoc | undefined = head; loc; loc = loc.next) {
        copies += 1;
        const verdict = this.compare(loc, bytes);
        if (verdict === 'equal') {
          equal = loc;
          if (this.isFresh(loc.pack)) break;
        } else if (verdict === 'different') different = true;
        else if (verdict === 'gone') gone += 1;
      }
      if (different) {
        suffix += 1;
        continue;
      }
      if (equal) {
        if (!this.isFresh(equal.pack)) this.append(key, bytes, compress);
        return { object: key, hash, size };
      }
      if (gone > 0 && !refreshed) {
        // A prune removed a pack under us: re-read the listing (it may have a rewritten copy).
        refreshed = true;
        this.refresh();
        continue;
      }
      if (gone === copies) {
        this.append(key, bytes, compress);
        return { object: key, hash, size };
      }
      suffix += 1; // every copy is damaged: never overwrite, take the next key
    }
    throw new CheckpointError('IO', `too many colliding objects for ${base}`);
  }

  private compare(loc: PackLoc, bytes: Uint8Array): CopyVerdict {
    if (loc.pack.gone) return 'gone';
    let stored: Buffer;
    try {
      stored = readRecord(loc);
    } catch (error) {
      if (isCheckpointError(error, 'INTEGRITY') && error.found === 'missing') return 'gone';
      if (isCheckpointError(error, 'INTEGRITY')) return 'damaged';
      throw error;
    }
    try {
      return bytesEqual(decodeObject(stored), bytes) ? 'equal' : 'different';
    } catch {
      return 'damaged';
    }
  }

  /**
   * True when a dedupe hit in `pack` is safe to reference: prune leaves packs alone until they
   * are older than the grace period, and a capture needs far less than the remaining half of it
   * to record its reference.
   */
  private isFresh(pack: PackFile): boolean {
    if (pack === this.writer?.pack) return true;
    const now = Date.now();
    if (now - pack.mtimeMs < PACK_FRESH_MS) return true;
    if (pack.sealed) return false;
    try {
      pack.mtimeMs = Math.max(pack.mtimeMs, statSync(pack.path).mtimeMs);
    } catch {
      return false;
    }
    return now - pack.mtimeMs < PACK_FRESH_MS;
  }

  /** A loose copy of a small key (layout version 1), read for dedupe; `null` when undecodable. */
  private readLooseForCompare(key: string): { bytes: Buffer; mtimeMs: number } | null | undefined {
    if (!this.looseFolders) return undefined;
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
      if (!stats.isFile() || stats.size > PACK_OBJECT_MAX_BYTES * 2) return null;
      const stored = readExactlySync(fd, stats.size);
      if (stored === undefined) return null;
      try {
        return { bytes: decodeObject(stored), mtimeMs: stats.mtimeMs };
      } catch {
        return null;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Appends a new record for `key` to this process's pack (rolling it over when full or idle). */
  private append(key: string, bytes: Uint8Array, compress = true): PackLoc {
    const [header, body] = encodeObjectSync(bytes, compress);
    return this.appendRecord(key, encodeRecord(key, header, body, this.recordScratch));
  }

  private appendRecord(key: string, record: Buffer): PackLoc {
    const writer = this.currentWriter(record.length);
    const loc = writer.append(key, record);
    this.remember(loc);
    return loc;
  }

  /**
   * Re-appends an existing record's stored bytes (prune's repack). The record is re-read and
   * checked first; returns the new location.
   */
  copyRecord(loc: PackLoc): PackLoc {
    const stored = readRecord(loc);
    if (stored[0] === RAW && stored.length - 1 >= COMPRESS_MIN_BYTES) {
      // Stored raw on a latency-critical capture: compress it now that nobody is waiting.
      const [header, body] = encodeObjectSync(stored.subarray(1));
      if (header[0] === DEFLATE) return this.appendRecord(loc.key, encodeRecord(loc.key, header, body));
    }
    return this.appendRecord(loc.key, encodeRecord(loc.key, stored.subarray(0, 1), stored.subarray(1)));
  }

  private currentWriter(recordLength: number): PackWriter {
    const writer = this.writer;
    if (
      writer &&
      writer.usable &&
      (writer.pack.records.length === 0 || writer.size + recordLength <= PACK_ROLL_BYTES) &&
      // An idle writer moves on: prune may treat a pack untouched for the grace period as finished.
      Date.now() - writer.lastWrite < PACK_FRESH_MS
    ) {
      return writer;
    }
    this.sealPack();
    let created: PackWriter;
    try {
      created = PackWriter.create(this.layout.packsDir);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw error;
      mkdirSync(this.layout.packsDir, { recursive: true, mode: DIR_MODE });
      created = PackWriter.create(this.layout.packsDir);
    }
    this.writer = created;
    this.packs.set(created.pack.name, created.pack);
    return created;
  }

  /**
   * Seals this process's pack (closes it and writes its index); the next put starts a new one.
   * Prune calls this before collecting when the pack is idle or when asked for no grace period.
   */
  sealPack(): void {
    const writer = this.writer;
    if (!writer) return;
    this.writer = undefined;
    try {
      writer.seal(() => this.layout.tempPath());
    } catch {
      // No index: readers scan the pack instead, and prune seals it once this process is gone.
    }
    if (writer.pack.gone) this.packs.delete(writer.pack.name);
  }

  /** This process's current pack, if any. */
  get ownPack(): PackFile | undefined {
    return this.writer?.pack;
  }

  /** Milliseconds since this process last appended to its pack (Infinity without one). */
  get ownPackIdleMs(): number {
    return this.writer ? Date.now() - this.writer.lastWrite : Infinity;
  }

  /** Every known pack, after a refresh. */
  async packFiles(): Promise<PackFile[]> {
    await this.load();
    this.refresh();
    return [...this.packs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** True when some pack other than `except` holds a live copy of `key` (as far as the index knows). */
  hasCopyElsewhere(key: string, except?: PackFile): boolean {
    for (let loc = this.index.get(key); loc; loc = loc.next) if (loc.pack !== except && !loc.pack.gone) return true;
    return false;
  }

  /** Removes a pack (and its index) from disk and from the index. For prune only. */
  async removePack(pack: PackFile): Promise<number> {
    let freed = 0;
    for (const file of [pack.path, pack.idxPath]) {
      try {
        const stats = await this.fs.lstat(file);
        await this.fs.unlink(file);
        freed += stats.size;
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove pack', file);
      }
    }
    this.forget(pack);
    return freed;
  }

  /**
   * Seals a dead writer's pack for it: cuts a torn tail (its writer is gone, so nothing will
   * complete it) and writes the index. For prune only.
   */
  sealDeadPack(pack: PackFile): void {
    if (pack.tornTail) {
      truncateSync(pack.path, pack.scannedTo);
      pack.tornTail = false;
    }
    writeIndex(pack, this.layout.tempPath());
    pack.sealed = true;
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

  /** Stores a large object as a loose file: temp file, `link` into place (never overwriting). */
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
      // A leftover temp file is removed by prune.
      if (temp !== undefined) await this.fs.unlink(temp).catch(() => undefined);
    }
  }

  /**
   * Reads a loose object for dedupe comparison: `undefined` when absent, `null` when it does not
   * decode. An old object about to be reused gets its mtime refreshed, under the store lock so a
   * concurrent prune cannot delete it between its age check and its unlink.
   */
  private async readForCompare(target: string): Promise<Buffer | null | undefined> {
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
      return stored === undefined ? null : decodeObject(stored);
    } catch {
      return null;
    }
  }

  private async writeTemp(bytes: Uint8Array): Promise<string> {
    const [header, body] = await encodeObject(bytes);
    const temp = this.layout.tempPath();
    const handle = await this.fs.open(temp, 'wx', FILE_MODE);
    try {
      await handle.writev([header, body]);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await this.fs.unlink(temp).catch(() => undefined);
      throw error;
    }
    await handle.close();
    return temp;
  }

  /** Seals this process's pack. Puts after this still work (in a new pack). */
  async close(): Promise<void> {
    if (this.loading) await this.loading.catch(() => undefined);
    this.sealPack();
    for (const pack of this.packs.values()) closeReads(pack);
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

  /**
   * Stores the current bytes of the regular file at `absPath`, refusing symlinks and anything
   * that changes while it is read. A file of at most {@link PACK_OBJECT_MAX_BYTES} is read and
   * stored synchronously (open, fstat, read, fstat, hash, one pack append: a few system calls,
   * no thread-pool round trip); larger files go through the asynchronous loose-object path.
   *
   * @throws CheckpointError `CONFLICT` when the file is not a regular file (any more), vanished,
   *   differs from `expected`, or changed size or mtime during the read; `IO` otherwise.
   */
  putFile(absPath: string, expected?: PutFileExpectation, options: PutFileOptions = {}): Promise<FileObjectRef> {
    if (!this.loaded) return this.load().then(() => this.putFile(absPath, expected, options));
    let ref: FileObjectRef | undefined;
    try {
      ref = this.putSmallFileSync(absPath, expected, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return ref !== undefined ? Promise.resolve(ref) : this.putLargeFile(absPath, expected);
  }

  /**
   * {@link putFile} on the calling thread for a file of at most {@link PACK_OBJECT_MAX_BYTES}:
   * returns its reference, or `undefined` when the file is larger (or the store not loaded yet)
   * and must take {@link putFile}. With `expected.size` and `expected.mtimeMs` from a stat taken
   * just before (a picture's scan), that stat stands for the one before the read: open, read,
   * one fstat after it.
   *
   * @throws CheckpointError as {@link putFile}.
   */
  putSmallFileSync(absPath: string, expected?: PutFileExpectation, options: PutFileOptions = {}): FileObjectRef | undefined {
    if (!this.loaded) return undefined;
    let fd: number;
    try {
      // O_NOFOLLOW: never read through a symlink. O_NONBLOCK: a FIFO swapped in must not hang us.
      fd = openSync(absPath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (error) {
      throw openError(error, absPath);
    }
    try {
      let bytes: Buffer;
      let mode: number;
      if (expected?.size !== undefined && expected.mtimeMs !== undefined && expected.size <= PACK_OBJECT_MAX_BYTES) {
        // One byte of slack tells a file that grew from one that did not.
        let read: Buffer;
        try {
          read = readUpToSync(fd, expected.size + 1, this.readScratch);
        } catch (error) {
          checkBefore(fstatSync(fd), absPath, undefined); // a folder or other non-file: CONFLICT
          throw error;
        }
        const after = fstatSync(fd);
        checkBefore(after, absPath, expected);
        if (read.length !== expected.size) throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
        bytes = read;
        mode = after.mode;
      } else {
        const before = fstatSync(fd);
        checkBefore(before, absPath, expected);
        if (before.size > PACK_OBJECT_MAX_BYTES) return undefined;
        const read = readExactlySync(fd, before.size, this.readScratch);
        if (read === undefined) throw new CheckpointError('CONFLICT', `file shrank while it was read: ${absPath}`, { path: absPath });
        const after = fstatSync(fd);
        if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
          throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
        }
        bytes = read;
        mode = before.mode;
      }
      const hash = contentHash(bytes);
      if (expected?.hash !== undefined && expected.hash !== hash) {
        throw new CheckpointError('CONFLICT', `file content changed: ${absPath}`, { path: absPath, expected: expected.hash, found: hash });
      }
      const ref = this.putSmall(bytes, hash, options.compress !== false);
      return { object: ref.object, hash: ref.hash, size: ref.size, mode: mode & 0o7777 };
    } catch (error) {
      throw asCheckpointError(error, 'cannot read file', absPath);
    } finally {
      closeSync(fd);
    }
  }

  /** The asynchronous path for files above the pack threshold: read through a handle, store loose. */
  private async putLargeFile(absPath: string, expected?: PutFileExpectation): Promise<FileObjectRef> {
    let handle: FileHandle;
    try {
      handle = await this.fs.open(absPath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (error) {
      throw openError(error, absPath);
    }
    let bytes: Buffer;
    let mode: number;
    let hash: string;
    try {
      const before = await handle.stat();
      checkBefore(before, absPath, expected);
      mode = before.mode & 0o7777;
      const read = await readExactly(handle, before.size);
      if (read === undefined) throw new CheckpointError('CONFLICT', `file shrank while it was read: ${absPath}`, { path: absPath });
      bytes = read;
      const after = await handle.stat();
      if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
        throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
      }
      await loadHasher();
      hash = contentHash(bytes);
      if (expected?.hash !== undefined && expected.hash !== hash) {
        throw new CheckpointError('CONFLICT', `file content changed: ${absPath}`, { path: absPath, expected: expected.hash, found: hash });
      }
    } catch (error) {
      throw asCheckpointError(error, 'cannot read file', absPath);
    } finally {
      await handle.close().catch(() => undefined);
    }
    // It shrank below the threshold between the two opens: still a valid object either way.
    const ref = bytes.length <= PACK_OBJECT_MAX_BYTES ? this.putSmall(bytes, hash) : await this.putHashed(bytes, hash);
    return { ...ref, mode };
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
  async readObject(key: string): Promise<Buffer> {
    const parsed = parseObjectKey(key);
    if (!parsed) throw new CheckpointError('INVALID_ARGUMENT', `not an object key: ${JSON.stringify(String(key).slice(0, 80))}`);
    if (parsed.size <= PACK_OBJECT_MAX_BYTES) {
      await this.load();
      // Other processes' packs are looked for at most once a second while the key is known, and
      // at once when it is not (or its pack is gone): a restore of a thousand files must not
      // list the packs folder a thousand times.
      for (let attempt = 0; attempt < 2; attempt++) {
        if (attempt === 0) this.refreshSoon();
        else this.refresh();
        const head = this.index.get(key);
        if (!head) {
          if (attempt === 0) continue;
          break;
        }
        const result = this.readPacked(key, parsed, head);
        if (result !== 'gone') return result;
      }
    }
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

  private readPacked(key: string, parsed: { hash: string; size: number }, head: PackLoc): Buffer | 'gone' {
    let good: Buffer | undefined;
    let firstError: unknown;
    let gone = 0;
    let copies = 0;
    for (let loc: PackLoc | undefined = head; loc; loc = loc.next) {
      copies += 1;
      try {
        const bytes = checkObject(key, parsed, readRecord(loc), loc.pack.path);
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
        else firstError ??= error;
      }
    }
    if (good !== undefined) return good;
    if (gone === copies) return 'gone';
    throw firstError;
  }

  /** True when an object exists under `key` (content not checked; see `readObject`). */
  async hasObject(key: string): Promise<boolean> {
    const parsed = parseObjectKey(key);
    if (!parsed) return false;
    if (parsed.size <= PACK_OBJECT_MAX_BYTES) {
      await this.load();
      if (this.hasPacked(key)) return true;
      this.refresh();
      if (this.hasPacked(key)) return true;
    }
    try {
      return (await this.fs.lstat(this.layout.objectPath(key))).isFile();
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return false;
      throw asCheckpointError(error, `cannot inspect object ${key}`);
    }
  }

  private hasPacked(key: string): boolean {
    for (let loc = this.index.get(key); loc; loc = loc.next) if (!loc.pack.gone) return true;
    return false;
  }

  /**
   * Every object in the store: loose files (well-formed names only) and pack records (one entry
   * per record; `path` is the pack, `diskSize` the record's length, `mtimeMs` the pack's).
   */
  async listObjects(): Promise<ObjectFileInfo[]> {
    const result = await this.listLoose();
    for (const pack of await this.packFiles()) {
      for (const loc of pack.records) {
        result.push({ key: loc.key, path: pack.path, diskSize: loc.length, mtimeMs: pack.mtimeMs, pack: pack.name, offset: loc.offset });
      }
    }
    return result;
  }

  /** Loose object files only. */
  async listLoose(): Promise<ObjectFileInfo[]> {
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

function openError(error: unknown, absPath: string): CheckpointError {
  const code = errnoCode(error);
  if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') {
    return new CheckpointError('CONFLICT', `file is gone or is no longer a regular file: ${absPath}`, { path: absPath, cause: error });
  }
  return asCheckpointError(error, 'cannot open file', absPath);
}

function checkBefore(before: { isFile(): boolean; size: number; mtimeMs: number }, absPath: string, expected?: PutFileExpectation): void {
  if (!before.isFile()) {
    throw new CheckpointError('CONFLICT', `not a regular file: ${absPath}`, { path: absPath });
  }
  if (expected?.size !== undefined && expected.size !== before.size) {
    throw new CheckpointError('CONFLICT', `file size changed: ${absPath}`, { path: absPath, expected: String(expected.size), found: String(before.size) });
  }
  if (expected?.mtimeMs !== undefined && expected.mtimeMs !== before.mtimeMs) {
    throw new CheckpointError('CONFLICT', `file was modified: ${absPath}`, { path: absPath, expected: String(expected.mtimeMs), found: String(before.mtimeMs) });
  }
}

/** Reads at most `max` bytes from the start of `fd` (fewer at end of file). Bounded by the callers to small files. */
function readUpToSync(fd: number, max: number, scratch: Buffer): Buffer {
  const buffer = scratch.length >= max ? scratch.subarray(0, max) : Buffer.allocUnsafe(max);
  let offset = 0;
  while (offset < max) {
    const n = readSync(fd, buffer, offset, max - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return buffer.subarray(0, offset);
}

/** Reads exactly `size` bytes from the start of `fd`; `undefined` when the file turns out shorter. Bounded by the callers to small files. */
function readExactlySync(fd: number, size: number, scratch?: Buffer): Buffer | undefined {
  const buffer = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
  let offset = 0;
  while (offset < size) {
    const n = readSync(fd, buffer, offset, size - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return offset === size ? buffer : undefined;
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
