// One class on purpose: the pack index, this process's own pack writer and the dedupe rules change
// together (a put reads the index, appends to the writer, and registers the record in the index);
// the codec, the index and loose objects are in files of their own.
import { mkdirSync, statSync, truncateSync } from 'node:fs';
import { CheckpointError, asCheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { DIR_MODE, type StoreLayout } from './layout.js';
import { LooseObjects, MAX_SUFFIX, type ObjectFileInfo } from './loose-objects.js';
import { COMPRESS_MIN_BYTES, DEFLATE, RAW, baseObjectKey, bytesEqual, checkObject, decodeObject, encodeObjectSync, parseObjectKey, type ObjectRef } from './object-codec.js';
import { DAMAGED_RECORD, confirmCopy } from './copy-check.js';
import { PackIndex } from './pack-index.js';
import {
  PACK_FRESH_MS,
  PACK_OBJECT_MAX_BYTES,
  PACK_ROLL_BYTES,
  MAX_RECORD_LENGTH,
  encodeRecord,
  loadPackHasher,
  readRecord,
  closeReads,
  writeIndex,
  type PackFile,
  type PackLoc,
} from './packs.js';
import { PackWriter } from './pack-writer.js';

export type { ObjectFileInfo } from './loose-objects.js';
export type { ObjectRef } from './object-codec.js';

/** Options of a put. */
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
  private readonly loose: LooseObjects;
  private readonly packs: PackIndex;
  private writer: PackWriter | undefined;
  private loading: Promise<void> | undefined;
  private loaded = false;
  /** Reused by the synchronous path (small objects only): no allocation per put for encoding. */
  private readonly recordScratch: Buffer = Buffer.allocUnsafe(MAX_RECORD_LENGTH);
  /** The current {@link copyCheck} round: each pack's identity is looked at once per round. */
  private confirmRound = 0;

  constructor(
    private readonly fs: FileSystem,
    private readonly layout: StoreLayout,
    options: ObjectStoreOptions = {},
  ) {
    this.loose = new LooseObjects(fs, layout, options.withLock ?? ((fn) => fn()));
    this.packs = new PackIndex(layout, () => this.writer?.pack);
  }

  /** Loads the hashers and the pack index once. */
  load(): Promise<void> {
    this.loading ??= (async () => {
      await Promise.all([loadHasher(), loadPackHasher()]);
      this.packs.refresh();
      this.loaded = true;
    })();
    return this.loading;
  }

  /** True once {@link load} has finished: the synchronous puts work from then on. */
  get isLoaded(): boolean {
    return this.loaded;
  }

  /** Re-lists `objects/packs/` (see {@link PackIndex.refresh}). */
  refresh(): void {
    this.packs.refresh();
  }

  /**
   * Stores `bytes` (write-once) and returns its key. A key that already exists is confirmed byte
   * for byte, because xxh64 is not collision resistant; different bytes go to the next free
   * `.N` suffix.
   */
  async putBytes(bytes: Uint8Array, options: PutFileOptions = {}): Promise<ObjectRef> {
    await this.load();
    return this.putHashed(bytes, contentHash(bytes), options);
  }

  /**
   * {@link putBytes} for bytes whose xxh64 the caller has just computed (a capture hashes what it
   * read once). A wrong hash stores an object that every read then reports as `INTEGRITY`.
   */
  async putHashed(bytes: Uint8Array, hash: string, options: PutFileOptions = {}): Promise<ObjectRef> {
    if (bytes.length <= PACK_OBJECT_MAX_BYTES) {
      if (!this.loaded) await this.load();
      return this.putSmall(bytes, hash, options.compress !== false);
    }
    return this.loose.put(bytes, hash);
  }

  /**
   * {@link putHashed} on the calling thread for a small object (at most
   * {@link PACK_OBJECT_MAX_BYTES}): `undefined` when it is larger or the store is not loaded yet.
   */
  putHashedSync(bytes: Uint8Array, hash: string, options: PutFileOptions = {}): ObjectRef | undefined {
    if (!this.loaded || bytes.length > PACK_OBJECT_MAX_BYTES) return undefined;
    return this.putSmall(bytes, hash, options.compress !== false);
  }

  /**
   * Stores a small object synchronously: dedupe against every known copy of the key (confirmed
   * byte for byte), else one record appended to this process's pack.
   */
  private putSmall(bytes: Uint8Array, hash: string, compress = true): ObjectRef {
    const base = baseObjectKey(hash, bytes.length);
    const size = bytes.length;
    this.packs.refreshSoon();
    let refreshed = false;
    for (let suffix = 0; suffix <= MAX_SUFFIX; ) {
      const key = suffix === 0 ? base : `${base}.${suffix}`;
      const head = this.packs.head(key);
      if (head === undefined) {
        const loose = this.loose.readForDedupe(key, size);
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
        this.packs.refresh();
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
      if (isCheckpointError(error, 'INTEGRITY')) {
        loc.confirmed = DAMAGED_RECORD;
        return 'damaged';
      }
      throw error;
    }
    try {
      return bytesEqual(decodeObject(stored, bytes.length), bytes) ? 'equal' : 'different';
    } catch {
      loc.confirmed = DAMAGED_RECORD;
      return 'damaged';
    }
  }

  /**
   * A check, for one picture, that a key's stored copy is good before the picture references it
   * again without reading the file: a pack record confirmed (copy-check.ts), or a loose file
   * decoded and hashed, each remembered while its file is unchanged. `false` sends the picture to
   * copy the file again, beside the damaged copy. Synchronous; call {@link load} first.
   */
  copyCheck(): (key: string) => boolean {
    const round = ++this.confirmRound;
    return (key) => this.loaded && confirmCopy(key, round, this.packs, this.loose, this.writer?.pack);
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

  /** Appends a new record for `key` to this process's pack (rolling it over when full or idle). */
  private append(key: string, bytes: Uint8Array, compress = true): PackLoc {
    const [header, body] = encodeObjectSync(bytes, compress);
    return this.appendRecord(key, encodeRecord(key, header, body, this.recordScratch));
  }

  private appendRecord(key: string, record: Buffer): PackLoc {
    const writer = this.currentWriter(record.length);
    const loc = writer.append(key, record);
    this.packs.remember(loc);
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
    this.packs.add(created.pack);
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
    if (writer.pack.gone) this.packs.drop(writer.pack);
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
    this.packs.refresh();
    return this.packs.sorted();
  }

  /** True when some pack other than `except` holds a live copy of `key` (as far as the index knows). */
  hasCopyElsewhere(key: string, except?: PackFile): boolean {
    for (let loc = this.packs.head(key); loc; loc = loc.next) if (loc.pack !== except && !loc.pack.gone) return true;
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
    this.packs.forget(pack);
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
    // Its records are not this process's to vouch for: no seal identity, so a copy check reads them.
    writeIndex(pack, this.layout.tempPath());
    pack.sealed = true;
  }

  /** Seals this process's pack. Puts after this still work (in a new pack). */
  async close(): Promise<void> {
    if (this.loading) await this.loading.catch(() => undefined);
    this.sealPack();
    for (const pack of this.packs.all()) closeReads(pack);
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
        if (attempt === 0) this.packs.refreshSoon();
        else this.packs.refresh();
        const head = this.packs.head(key);
        if (!head) {
          if (attempt === 0) continue;
          break;
        }
        const result = this.readPacked(key, parsed, head);
        if (result !== 'gone') return result;
      }
    }
    return this.loose.read(key, parsed);
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
        else {
          // Remembered: a later picture copies the file again instead of pointing at this record.
          if (isCheckpointError(error, 'INTEGRITY')) loc.confirmed = DAMAGED_RECORD;
          firstError ??= error;
        }
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
      this.packs.refresh();
      if (this.hasPacked(key)) return true;
    }
    return this.loose.has(key);
  }

  private hasPacked(key: string): boolean {
    for (let loc = this.packs.head(key); loc; loc = loc.next) if (!loc.pack.gone) return true;
    return false;
  }

  /**
   * Every object in the store: loose files (well-formed names only) and pack records (one entry
   * per record; `path` is the pack, `diskSize` the record's length, `mtimeMs` the pack's).
   */
  async listObjects(): Promise<ObjectFileInfo[]> {
    const result = await this.loose.list();
    for (const pack of await this.packFiles()) {
      for (const loc of pack.records) {
        result.push({ key: loc.key, path: pack.path, diskSize: loc.length, mtimeMs: pack.mtimeMs, pack: pack.name, offset: loc.offset });
      }
    }
    return result;
  }

  /** Loose object files only. */
  listLoose(): Promise<ObjectFileInfo[]> {
    return this.loose.list();
  }
}
