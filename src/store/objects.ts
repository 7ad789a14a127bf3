// One class on purpose: the pack index, this process's own pack writer, the blocks waiting to be
// written and the dedupe rules change together (a put reads the index and the waiting blocks,
// appends to the writer, and registers the record in the index); the codecs, the index, reads,
// waiting blocks and loose objects are in files of their own.
import { truncateSync } from 'node:fs';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { forgetDecoded } from './block-codec.js';
import type { StoreLayout } from './layout.js';
import { LooseObjects, MAX_SUFFIX, type ObjectFileInfo } from './loose-objects.js';
import { baseObjectKey, bytesEqual, parseObjectKey, type ObjectRef } from './object-codec.js';
import { compareCopy, hasStoredObject, readCopy, readStoredObject, type ObjectSources } from './object-reads.js';
import { confirmCopy } from './copy-check.js';
import { PackIndex } from './pack-index.js';
import { BLOCK_MEMBER_MAX_BYTES, PACK_OBJECT_MAX_BYTES, isBlockableKey, loadPackHasher } from './pack-format.js';
import { writeIndex } from './pack-index-file.js';
import { PACK_FRESH_MS, closeReads, diskShare, type PackFile, type PackLoc } from './packs.js';
import { OwnPack } from './own-pack.js';
import { PendingBlocks, type ObjectBatch } from './pending-blocks.js';

export type { ObjectFileInfo } from './loose-objects.js';
export type { ObjectRef } from './object-codec.js';
export type { ObjectBatch } from './pending-blocks.js';

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
  /**
   * The batch the put belongs to ({@link ObjectStore.openBatch}): a small compressible object
   * waits to be written with others as one block, and is on disk once the batch ends.
   */
  batch?: ObjectBatch;
}

/** The largest object a put may store in a pack, and so on the calling thread: a batch's blocks take larger ones than single records. */
export function syncPutMaxBytes(options: PutFileOptions): number {
  return options.batch !== undefined && options.compress !== false ? BLOCK_MEMBER_MAX_BYTES : PACK_OBJECT_MAX_BYTES;
}

/** Options of {@link ObjectStore}. */
export interface ObjectStoreOptions {
  /**
   * Runs `fn` under the store lock. Used only when a dedupe hit lands on an old loose (large)
   * object, so that refreshing its mtime cannot race a prune deleting it.
   */
  withLock?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/**
 * The last {@link ObjectStore.copyCheck} round of the process: each pack's identity is looked at
 * once per round. One count for every store, because a store's packs are handed from one open to
 * the next (pack-index.ts), and a round number must never be one a pack has already seen.
 */
let confirmRounds = 0;

/** Keys {@link ObjectStore} notes as resting on loose files before it starts over (a bound on memory). */
const LOOSE_HANDED_MAX = 100_000;

/**
 * A copy check of one picture ({@link ObjectStore.copyCheck}): true when some stored copy of a
 * key is good. Its `epoch` is the store's copy epoch when it began (`PackIndex.copyEpoch`):
 * while the epoch lasts, no pack copy seen good since has changed. Loose files are not covered by
 * the epoch: `looseSince` lists the keys handed out or confirmed resting on one since the check
 * began (`undefined` when that is no longer known), for the picture to check again next time.
 */
export interface CopyCheck {
  (key: string): boolean;
  readonly epoch: number;
  /** True while the epoch the check began in lasts. */
  unchanged(): boolean;
  looseSince(): string[] | undefined;
}

/**
 * Content-addressed, write-once object storage.
 *
 * Objects of at most {@link PACK_OBJECT_MAX_BYTES} (original size) are records appended to a pack
 * file this process owns (`objects/packs/pack-<pid>-<random>.pack`), written synchronously: a
 * put of a small file is a handful of system calls and no inode. The puts of a batch (a
 * picture's copies) wait in memory and are written as blocks of about 1 MiB compressed together
 * (pending-blocks.ts), on disk when the batch ends. Larger objects are loose files
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
  /** Keys handed out or confirmed resting on loose files, in order (see {@link copyCheck}). */
  private looseHanded: string[] = [];
  /** Bumped when {@link looseHanded} is emptied. */
  private looseGeneration = 0;
  private readonly packs: PackIndex;
  private readonly own: OwnPack;
  private loading: Promise<void> | undefined;
  private loaded = false;
  /** Batched objects not written yet. */
  private readonly pending = new PendingBlocks((members, rawLength, encoded) => this.own.appendBlock(members, rawLength, encoded));

  constructor(
    private readonly fs: FileSystem,
    private readonly layout: StoreLayout,
    options: ObjectStoreOptions = {},
  ) {
    this.loose = new LooseObjects(fs, layout, options.withLock ?? ((fn) => fn()));
    this.packs = new PackIndex(layout, () => this.own.pack);
    this.own = new OwnPack(layout, this.packs);
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
    if (bytes.length <= syncPutMaxBytes(options)) {
      if (!this.loaded) await this.load();
      return this.putSmall(bytes, hash, options.compress !== false, options.batch);
    }
    if (bytes.length > BLOCK_MEMBER_MAX_BYTES) return this.handedLoose(await this.loose.put(bytes, hash));
    // A picture's block may hold a key of this size: a fresh equal copy serves, and a key whose
    // packed copy holds other bytes (or is damaged) is never given to these.
    if (!this.loaded) await this.load();
    const ref = await this.loose.put(bytes, hash, (key) => {
      let verdict: 'equal' | 'taken' | 'free' = 'free';
      for (let loc = this.packs.head(key); loc; loc = loc.next) {
        const copy = compareCopy(loc, bytes);
        if (copy === 'different' || copy === 'damaged') return 'taken';
        if (copy === 'equal' && this.own.isFresh(loc.pack)) verdict = 'equal';
      }
      return verdict;
    });
    return this.handedLoose(ref);
  }

  /** Notes a key handed out that may rest on a loose file (see {@link copyCheck}'s `looseSince`). */
  private handedLoose(ref: ObjectRef): ObjectRef {
    if (this.looseHanded.length >= LOOSE_HANDED_MAX) {
      // Checks still open can no longer say what was handed since they began: their pictures vouch for nothing.
      this.looseHanded = [];
      this.looseGeneration += 1;
    }
    this.looseHanded.push(ref.object);
    return ref;
  }

  /**
   * {@link putHashed} on the calling thread for a small object (at most
   * {@link PACK_OBJECT_MAX_BYTES}, or {@link BLOCK_MEMBER_MAX_BYTES} in a batch): `undefined` when
   * it is larger or the store is not loaded yet.
   */
  putHashedSync(bytes: Uint8Array, hash: string, options: PutFileOptions = {}): ObjectRef | undefined {
    if (!this.loaded || bytes.length > syncPutMaxBytes(options)) return undefined;
    return this.putSmall(bytes, hash, options.compress !== false, options.batch);
  }

  /** A new batch of puts: see {@link PutFileOptions.batch} and {@link endBatch}. */
  openBatch(): ObjectBatch {
    return { failed: new Map() };
  }

  /**
   * Writes every object waiting (the batch's and any other's) and returns the keys of the batch
   * that could not be written, with why. Until it resolves, no key the batch was handed may be
   * referenced by anything that outlives the process. Never rejects.
   */
  async endBatch(batch: ObjectBatch): Promise<ReadonlyMap<string, unknown>> {
    await this.pending.settle();
    return batch.failed;
  }

  /**
   * Stores a small object synchronously: dedupe against every known copy of the key (confirmed
   * byte for byte, waiting ones included), else one record appended to this process's pack, or
   * for a batch a place in the block being built.
   */
  private putSmall(bytes: Uint8Array, hash: string, compress: boolean, batch: ObjectBatch | undefined): ObjectRef {
    const base = baseObjectKey(hash, bytes.length);
    const size = bytes.length;
    this.packs.refreshSoon();
    let refreshed = false;
    for (let suffix = 0; suffix <= MAX_SUFFIX; ) {
      const key = suffix === 0 ? base : `${base}.${suffix}`;
      const waiting = this.pending.bytesOf(key);
      if (waiting !== undefined) {
        if (!bytesEqual(waiting, bytes)) {
          suffix += 1;
          continue;
        }
        if (batch !== undefined) {
          this.pending.share(key, batch);
          return { object: key, hash, size };
        }
        // Anyone else is handed only what is on disk: the block being built is written now; one
        // being compressed cannot be waited for here, so this put writes a record of its own.
        if (this.pending.state(key) === 'building') this.pending.flushBuilding();
        if (this.pending.state(key) !== undefined || this.packs.head(key)?.pack !== this.own.pack) this.own.append(key, bytes, compress);
        return { object: key, hash, size };
      }
      const head = this.packs.head(key);
      if (head === undefined) {
        const loose = this.loose.readForDedupe(key, size);
        if (loose === undefined) {
          this.store(key, bytes, compress, batch);
          return { object: key, hash, size };
        }
        if (loose !== null && bytesEqual(loose.bytes, bytes)) {
          // An old loose copy may be pruned any moment: keep a fresh copy in the pack instead.
          if (Date.now() - loose.mtimeMs >= PACK_FRESH_MS) this.store(key, bytes, compress, batch);
          else return this.handedLoose({ object: key, hash, size });
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
        const verdict = compareCopy(loc, bytes);
        if (verdict === 'equal') {
          equal = loc;
          if (this.own.isFresh(loc.pack)) break;
        } else if (verdict === 'different') different = true;
        else if (verdict === 'gone') gone += 1;
      }
      if (different) {
        suffix += 1;
        continue;
      }
      if (equal) {
        if (!this.own.isFresh(equal.pack)) this.store(key, bytes, compress, batch);
        return { object: key, hash, size };
      }
      if (gone > 0 && !refreshed) {
        // A prune removed a pack under us: re-read the listing (it may have a rewritten copy).
        refreshed = true;
        this.packs.refresh();
        continue;
      }
      if (gone === copies) {
        this.store(key, bytes, compress, batch);
        return { object: key, hash, size };
      }
      suffix += 1; // every copy is damaged: never overwrite, take the next key
    }
    throw new CheckpointError('IO', `too many colliding objects for ${base}`);
  }

  /** A new copy of `key`: waiting in the batch's block, or appended now as a record of its own. */
  private store(key: string, bytes: Uint8Array, compress: boolean, batch: ObjectBatch | undefined): void {
    // An empty object has nothing to compress: a record of its own (a block's body is never empty).
    if (batch !== undefined && compress && bytes.length > 0 && isBlockableKey(key)) this.pending.add(key, bytes, batch);
    else this.own.append(key, bytes, compress);
  }

  /**
   * A check, for one picture, that a key's stored copy is good before the picture references it
   * again without reading the file: a pack record confirmed (copy-check.ts), or a loose file
   * decoded and hashed, each remembered while its file is unchanged. `false` sends the picture to
   * copy the file again, beside the damaged copy. Synchronous; call {@link load} first.
   */
  copyCheck(): CopyCheck {
    const round = ++confirmRounds;
    // Every pack looked at once: a change since the last look ends the copy epoch.
    if (this.loaded) this.packs.look();
    const epoch = this.packs.copyEpoch;
    const generation = this.looseGeneration;
    const from = this.looseHanded.length;
    const onLoose = (key: string): void => {
      this.handedLoose({ object: key, hash: '', size: 0 });
    };
    // A key still waiting to be written is no copy to point at: the file is copied again (and joins it).
    const check = (key: string): boolean => this.loaded && this.pending.state(key) === undefined && confirmCopy(key, round, this.packs, this.loose, this.own.pack, onLoose);
    return Object.assign(check, {
      epoch,
      unchanged: () => this.packs.copyEpoch === epoch,
      looseSince: () => (this.looseGeneration === generation ? this.looseHanded.slice(from) : undefined),
    });
  }

  /**
   * Copies a record's object into `batch` (prune's repack): read and checked first, then queued
   * for a block of this process's pack (a record stored raw on the fast path is compressed now
   * that nobody waits), never deduplicated against the copy being replaced. On disk once the
   * batch ends.
   * @throws CheckpointError `INTEGRITY` when the copy does not read back.
   */
  copyRecord(loc: PackLoc, batch: ObjectBatch): void {
    const parsed = parseObjectKey(loc.key);
    if (parsed === undefined) throw new CheckpointError('INTEGRITY', `not an object key: ${loc.key}`);
    const bytes = readCopy(loc.key, parsed, loc);
    const waiting = this.pending.bytesOf(loc.key);
    if (waiting !== undefined && bytesEqual(waiting, bytes)) {
      this.pending.share(loc.key, batch);
      return;
    }
    this.store(loc.key, bytes, true, batch);
  }

  /**
   * Seals this process's pack (closes it and writes its index); the next put starts a new one.
   * Prune calls this before collecting when the pack is idle or when asked for no grace period.
   */
  sealPack(): void {
    this.own.seal();
  }

  /** This process's current pack, if any. */
  get ownPack(): PackFile | undefined {
    return this.own.pack;
  }

  /** Milliseconds since this process last appended to its pack (Infinity without one). */
  get ownPackIdleMs(): number {
    return this.own.idleMs;
  }

  /** Bytes this store appended to its packs so far (prune's account of what a repack wrote). */
  get written(): number {
    return this.own.written;
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
    forgetDecoded(pack);
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
    await this.pending.settle();
    this.sealPack();
    for (const pack of this.packs.all()) {
      closeReads(pack);
      forgetDecoded(pack);
    }
    this.packs.release();
  }

  /** Writes every object waiting in a block (prune calls it before it looks at the packs). */
  settlePending(): Promise<void> {
    return this.pending.settle();
  }

  /**
   * The original bytes of an object, checked against its key (see `readStoredObject`).
   * @throws CheckpointError `INTEGRITY` when missing or damaged (never wrong bytes); `INVALID_ARGUMENT` for a malformed key.
   */
  readObject(key: string): Promise<Buffer> {
    return readStoredObject(this.sources, key);
  }

  /** True when an object exists under `key` (content not checked; see `readObject`). */
  hasObject(key: string): Promise<boolean> {
    return hasStoredObject(this.sources, key);
  }

  /** Where reads look, for object-reads.ts. */
  private get sources(): ObjectSources {
    return { packs: this.packs, loose: this.loose, pending: this.pending, load: () => this.load() };
  }

  /**
   * Every object in the store: loose files (well-formed names only) and pack records (one entry
   * per record; `path` is the pack, `diskSize` the record's length, `mtimeMs` the pack's).
   */
  async listObjects(): Promise<ObjectFileInfo[]> {
    const result = await this.loose.list();
    for (const pack of await this.packFiles()) {
      for (const loc of pack.records) {
        const size = parseObjectKey(loc.key)?.size ?? 0;
        result.push({ key: loc.key, path: pack.path, diskSize: diskShare(loc, size), mtimeMs: pack.mtimeMs, pack: pack.name, offset: loc.offset, recordLength: loc.length });
      }
    }
    return result;
  }

  /** Loose object files only. */
  listLoose(): Promise<ObjectFileInfo[]> {
    return this.loose.list();
  }
}
