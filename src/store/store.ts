// The store's one facade (open, list, manifests, objects, state documents, lock, import, git-blob
// copies), over 450 lines on purpose: every method is a few lines that hand the work to the module
// it imports (objects, journal, manifests, retention, verify, git-copies…), and callers meet one
// class; split in two, each half would carry the other's fields.
import * as path from 'node:path';
import { DEFAULTS } from '../core/defaults.js';
import { CheckpointError, asCheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { newCheckpointId, parseCheckpointId, type CheckpointId } from '../core/id.js';
import type { CheckpointKind, CheckpointManifest, CheckpointMeta } from '../core/model.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import { scanCatalog } from './catalog.js';
import { JournalWriter, journalRecordProblem, readJournal, type JournalContents, type JournalHeader, type JournalMeta, type JournalRecord } from './journal.js';
import { FILE_MODE, openLayout, type StoreLayout } from './layout.js';
import { clearPresence, markPresence, refuseUpgradeUnderOlderCode } from './presence.js';
import { openingFileSystem } from './opening-fs.js';
import { DEFAULT_LOCK_TIMEOUT_MS, StoreLock, type WithLockOptions } from './lock.js';
import { isCheckpointKind, manifestObjects, metaOf, parseManifest, writeManifest } from './manifests.js';
import { journalManifest, readSealedManifest } from './manifest-cache.js';
import { storeSizeBytes } from './disk-usage.js';
import { ObjectStore, type CopyCheck, type ObjectBatch, type ObjectFileInfo, type ObjectRef, type PutFileOptions } from './objects.js';
import { pruneStore, type PruneOptions, type PruneReport } from './retention.js';
import { verifyStore, type VerifyReport } from './verify.js';
import { OpenCheckpoint, buildManifest, type CheckpointWriter, type SealPatch } from './checkpoint-writer.js';
import { StateDocumentFolder, type StateWriteOptions } from './state-documents.js';
import { goneMessage, recordRemovals, removalOf, type Removal } from './removals.js';
import { gitBlobIdOf } from '../core/git-blob.js';
import { hasGitBlob } from './git-blobs.js';
import { GitCopies, copyGitBlobsIn, hasGitCopy, readGitObject, restingOnGit, type GitCopyContext, type GitCopyOptions, type GitCopyReport } from './git-copies.js';

export { buildManifest } from './checkpoint-writer.js';

/**
 * Default number of checkpoints retained per project before the oldest are pruned.
 * @default 100
 */
export const DEFAULT_RETAIN: number = DEFAULTS.retain;

/** Options of {@link CheckpointStore.open}. */
export interface OpenStoreOptions {
  /** The project the store belongs to; canonicalised with realpath. */
  projectRoot: string;
  /** File system to use. @default nodeFileSystem */
  fs?: FileSystem;
  /** How long lock-taking operations wait for another process. @default 10000 */
  lockTimeoutMs?: number;
}


/** Options of {@link CheckpointStore.openCheckpoint}. */
export interface OpenCheckpointOptions {
  kind: CheckpointKind;
  sessionId?: string;
  label?: string;
  /** For `pre-restore`: the checkpoint being restored. */
  restoreOf?: CheckpointId;
  /** For tool-call snapshots: the owning scope. */
  scopeId?: string;
}

export type { GitCopyOptions, GitCopyReport } from './git-copies.js';
export type { PruneOptions, PruneReport, VerifyReport, ObjectRef, ObjectBatch, CopyCheck, PutFileOptions, ObjectFileInfo, JournalRecord, StateWriteOptions, CheckpointWriter, SealPatch };

/**
 * A directory-backed, content-addressed shadow store for one project. Never touches anything
 * outside its root; never uses git.
 */
export class CheckpointStore {
  /** Canonical store root. */
  readonly root: string;
  /** Canonical project root. */
  readonly projectRoot: string;
  private readonly fs: FileSystem;
  private readonly layout: StoreLayout;
  private readonly objects: ObjectStore;
  private readonly lock: StoreLock;
  private readonly state: StateDocumentFolder;
  private readonly gitCopies: GitCopies;

  /** This process's presence file (see store/presence.ts), removed at close. */
  private presence: string | undefined;

  private constructor(fs: FileSystem, layout: StoreLayout, projectRoot: string, lockTimeoutMs: number) {
    this.fs = fs;
    this.layout = layout;
    this.root = layout.root;
    this.projectRoot = projectRoot;
    this.lock = new StoreLock(fs, layout, lockTimeoutMs);
    this.state = new StateDocumentFolder(fs, layout);
    this.objects = new ObjectStore(fs, layout, { withLock: (fn) => this.lock.withLock(fn) });
    this.gitCopies = new GitCopies(layout.gitCopiesFile);
  }

  /**
   * Opens (creating when needed) the store at `root` for `projectRoot`.
   *
   * @throws CheckpointError `STORE_UNAVAILABLE` (symlink, not a folder, inside `.git`, unwritable,
   *   unknown format), `FOREIGN_WORKSPACE` (another project's store), `UNAVAILABLE` (project root
   *   missing), `STORE_BUSY` (an older layout that a live process of older code has open: it is
   *   upgraded once that process has closed it), `INVALID_ARGUMENT`.
   */
  static async open(root: string, options: OpenStoreOptions): Promise<CheckpointStore> {
    if (typeof root !== 'string' || root === '' || root.includes('\0')) throw new CheckpointError('INVALID_ARGUMENT', 'store root must be a non-empty path');
    if (typeof options?.projectRoot !== 'string' || options.projectRoot === '') {
      throw new CheckpointError('INVALID_ARGUMENT', 'projectRoot must be a non-empty path');
    }
    const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    if (!Number.isFinite(lockTimeoutMs) || lockTimeoutMs < 0) throw new CheckpointError('INVALID_ARGUMENT', 'lockTimeoutMs must be a non-negative number');
    const fs = options.fs ?? nodeFileSystem;
    // The open's own calls on the calling thread (opening-fs.ts); the store keeps `fs`.
    const opening = openingFileSystem(fs);
    let projectRoot: string;
    try {
      projectRoot = await opening.realpath(path.resolve(options.projectRoot));
      if (!(await fs.stat(projectRoot)).isDirectory()) throw new Error('not a folder');
    } catch (error) {
      throw new CheckpointError('UNAVAILABLE', `project root is not an existing folder: ${options.projectRoot}`, { path: options.projectRoot, cause: error });
    }
    const layout = await openLayout(root, { fs: opening, projectRoot, beforeUpgrade: (opened, from) => refuseUpgradeUnderOlderCode(fs, opened, from) });
    const store = new CheckpointStore(fs, layout, projectRoot, lockTimeoutMs);
    store.presence = await markPresence(opening, layout);
    return store;
  }

  /** A fresh path in the store's own `tmp/` (a leftover of a dead process is cleared by prune), for a caller's scratch file. */
  scratchPath(): string {
    return this.layout.tempPath();
  }

  /**
   * Checks that the store can be written now (a temp file created, written and removed): a
   * read-only mount or a folder turned unwritable is found before an agent relies on it.
   *
   * @throws CheckpointError `STORE_UNAVAILABLE` with the errno as cause.
   */
  async probeWritable(): Promise<void> {
    const temp = this.layout.tempPath();
    try {
      await this.fs.writeFile(temp, 'probe', { flag: 'wx', mode: FILE_MODE });
      await this.fs.unlink(temp);
    } catch (error) {
      await this.fs.unlink(temp).catch(() => undefined);
      throw new CheckpointError('STORE_UNAVAILABLE', `the store cannot be written (${errnoCode(error) ?? (error as Error).message}): ${this.root}`, { path: this.root, cause: error });
    }
  }

  /** Every checkpoint, sealed and open, sorted by id. Unreadable ones are skipped (`verify` reports them). */
  async list(): Promise<CheckpointMeta[]> {
    const catalog = await scanCatalog(this.fs, this.layout);
    const metas: CheckpointMeta[] = [];
    for (const entry of catalog.entries) {
      try {
        const manifest = await this.manifest(entry.id);
        metas.push(metaOf(manifest));
      } catch (error) {
        if (error instanceof CheckpointError && error.code !== 'IO') continue;
        throw error;
      }
    }
    return metas;
  }

  /** The ids of the sealed checkpoints (open ones, still a journal, are left out), oldest first. */
  async sealedIds(): Promise<CheckpointId[]> {
    const catalog = await scanCatalog(this.fs, this.layout);
    return catalog.entries.filter((entry) => entry.sealed).map((entry) => entry.id as CheckpointId).sort();
  }

  /**
   * One checkpoint's manifest: the sealed JSON, or for an open checkpoint the journal folded
   * into a manifest with `complete: false`.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `CORRUPT_MANIFEST`, `FOREIGN_WORKSPACE`.
   */
  async manifest(id: CheckpointId | string): Promise<CheckpointManifest> {
    const checked = parseCheckpointId(id);
    // Twice: a seal between the two reads moves the checkpoint from journal to manifest.
    for (let attempt = 0; attempt < 2; attempt++) {
      const sealed = await readSealedManifest(this.fs, this.layout, this.projectRoot, checked).catch((error: unknown) => this.journalInstead(checked, error));
      if (sealed) return sealed;
      let contents: JournalContents;
      try {
        contents = await readJournal(this.fs, this.layout.journalPath(checked));
      } catch (error) {
        if (error instanceof CheckpointError && errnoCode(error.cause) === 'ENOENT') continue;
        throw error;
      }
      return journalManifest(this.layout, this.projectRoot, checked, contents);
    }
    const removal = await removalOf(this.state, checked);
    throw new CheckpointError('UNKNOWN_CHECKPOINT', goneMessage(checked, removal), { found: removal?.reason ?? 'never-existed' });
  }

  /**
   * The journal still beside a manifest that does not parse: a seal's manifest is not fsynced, so
   * a power loss can leave it empty or torn while the journal it was sealed from (removed after
   * it) is there whole; that journal is the checkpoint then (open, `complete: false`). Without one,
   * the manifest's own error.
   */
  private async journalInstead(id: CheckpointId, error: unknown): Promise<CheckpointManifest> {
    if (!isCheckpointError(error, 'CORRUPT_MANIFEST')) throw error;
    let contents: JournalContents;
    try {
      contents = await readJournal(this.fs, this.layout.journalPath(id));
    } catch {
      throw error;
    }
    return journalManifest(this.layout, this.projectRoot, id, contents);
  }

  /**
   * Removes old checkpoints and unreferenced objects, under the store lock.
   * @throws CheckpointError `STORE_BUSY`, `INVALID_ARGUMENT`.
   */
  prune(options: PruneOptions = {}): Promise<PruneReport> {
    return this.lock.withLock(async () => {
      const report = await pruneStore(this.context(), { retain: DEFAULT_RETAIN, ...options });
      if (!report.dryRun) await recordRemovals(this.state, report.cleared);
      return report;
    });
  }

  /** Why checkpoint `id` is not in the store, when a prune or a drop removed it (`undefined`: never here, or forgotten). */
  removal(id: string): Promise<Removal | undefined> {
    return removalOf(this.state, id);
  }

  /** Checks the whole store; problems are reported, never thrown. */
  verify(): Promise<VerifyReport> {
    return verifyStore(this.context());
  }

  private context(): Parameters<typeof pruneStore>[0] & GitCopyContext {
    return {
      fs: this.fs,
      layout: this.layout,
      objects: this.objects,
      projectRoot: this.projectRoot,
      withLock: (fn) => this.lock.withLock(fn),
      storeSizeBytes: () => this.storeSizeBytes(),
      copies: this.gitCopies,
    };
  }

  /**
   * Copies into the store, within the budget, the git blobs its checkpoints and pictures rest on
   * and it holds no copy of (read from git, read-only, each checked against its id), in slices
   * under the store lock; from then on a read of `git:<id>` takes the store's copy, so the
   * pre-image outlives a history rewrite and `git gc`. What the command server runs in its idle
   * time, and `turnback prune` before it prunes.
   * @throws CheckpointError `INVALID_ARGUMENT`.
   */
  copyGitBlobsIn(options: GitCopyOptions = {}): Promise<GitCopyReport> {
    return copyGitBlobsIn(this.context(), options);
  }

  /** The git blob ids the store's checkpoints and pictures rest on and it holds no copy of: pre-images that live only in git's objects. */
  restingOnGit(): Promise<string[]> {
    return restingOnGit(this.context());
  }

  /**
   * Stores bytes (write-once, deduplicated, verified against collisions). `options.compress:
   * false` stores a small object raw, for latency-critical callers (prune compresses it later).
   */
  putBytes(bytes: Uint8Array, options: PutFileOptions = {}): Promise<ObjectRef> {
    if (!(bytes instanceof Uint8Array)) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', 'putBytes takes a Uint8Array'));
    return this.objects.putBytes(bytes, options);
  }

  /**
   * {@link putBytes} for bytes whose xxh64 the caller computed as it read them (a capture);
   * internal: a wrong hash stores an object every read then reports as `INTEGRITY`.
   */
  putHashed(bytes: Uint8Array, hash: string, options: PutFileOptions = {}): Promise<ObjectRef> {
    return this.objects.putHashed(bytes, hash, options);
  }

  /**
   * {@link putHashed} on the calling thread for a small object (at most 256 KiB): `undefined`
   * when it is larger or the object index is not loaded yet ({@link loadObjects}). A picture
   * stores thousands of small files this way without a promise per file.
   */
  putHashedSync(bytes: Uint8Array, hash: string, options: PutFileOptions = {}): ObjectRef | undefined {
    return this.objects.putHashedSync(bytes, hash, options);
  }

  /**
   * A batch of puts (a picture's copies): small objects put with `{ batch }` are written
   * together as compressed blocks, on disk once {@link endBatch} resolves — nothing may name
   * them before that.
   */
  openBatch(): ObjectBatch {
    return this.objects.openBatch();
  }

  /** Writes what a batch left waiting; resolves with the objects that could not be written, and why. Never rejects. */
  endBatch(batch: ObjectBatch): Promise<ReadonlyMap<string, unknown>> {
    return this.objects.endBatch(batch);
  }

  /** Loads the object index (once); the synchronous puts work from then on. */
  loadObjects(): Promise<void> {
    return this.objects.load();
  }

  /**
   * A check, for one picture, that an object's stored copy is good before it is referenced again
   * without the file being read (see `ObjectStore.copyCheck`): `false` when it is missing or
   * damaged, and the picture copies the file again. Synchronous; call {@link loadObjects} first.
   */
  copyCheck(): CopyCheck {
    return this.objects.copyCheck();
  }

  /** True once the object index is loaded. */
  get objectsLoaded(): boolean {
    return this.objects.isLoaded;
  }

  /** An object's original bytes. @throws CheckpointError `INTEGRITY` when missing or damaged. */
  readObject(object: string): Promise<Buffer> {
    // A file recorded by its blob id: the store's copy of that blob, else the project's repository's, checked against the id.
    const blob = gitBlobIdOf(object);
    if (blob !== undefined) return readGitObject(this.context(), blob);
    return this.objects.readObject(object);
  }

  /** True when the object file exists (for a file recorded by its blob id: when the store has a copy of the blob, or git still has it). */
  async hasObject(object: string): Promise<boolean> {
    const blob = gitBlobIdOf(object);
    if (blob !== undefined) return (await hasGitCopy(this.context(), blob)) || (await hasGitBlob(this.projectRoot, blob));
    return this.objects.hasObject(object);
  }

  /**
   * Seals this process's pack (closes it and writes its index). Optional: the store keeps
   * working after it (the next put starts a new pack), and a pack left unsealed by a process
   * that never called it is sealed by the next prune once that process is gone.
   */
  async close(): Promise<void> {
    await clearPresence(this.fs, this.presence);
    this.presence = undefined;
    await this.objects.close();
  }

  /** Every object (loose files and pack records), for gc and tooling. */
  listObjects(): Promise<ObjectFileInfo[]> {
    return this.objects.listObjects();
  }

  /**
   * Opens a new checkpoint backed by an append-only journal.
   * @throws CheckpointError `INVALID_ARGUMENT`, `INVALID_ID` (restoreOf), `IO`.
   */
  async openCheckpoint(options: OpenCheckpointOptions): Promise<CheckpointWriter> {
    if (!isCheckpointKind(options?.kind)) throw new CheckpointError('INVALID_ARGUMENT', `unknown checkpoint kind ${JSON.stringify(options?.kind)}`);
    for (const field of ['sessionId', 'label', 'scopeId'] as const) {
      const value = options[field];
      if (value !== undefined && typeof value !== 'string') throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a string`);
    }
    const id = newCheckpointId();
    const meta: JournalMeta = { id, kind: options.kind, createdAt: new Date().toISOString(), workspace: this.projectRoot };
    if (options.sessionId !== undefined) meta.sessionId = options.sessionId;
    if (options.label !== undefined) meta.label = options.label;
    if (options.restoreOf !== undefined) meta.restoreOf = parseCheckpointId(options.restoreOf);
    if (options.scopeId !== undefined) meta.scopeId = options.scopeId;
    const journal = await JournalWriter.create(this.fs, this.layout, meta);
    return new OpenCheckpoint(this.fs, this.layout, meta, journal);
  }

  /**
   * Seals the open checkpoint a dead process left (an interrupted restore's save), with `records`
   * appended after its journal's, as its own seal would have. The caller holds the lock and has
   * checked the writer is dead.
   * @throws CheckpointError `UNKNOWN_CHECKPOINT` (no journal), `CORRUPT_MANIFEST`, `INVALID_ARGUMENT`.
   */
  async sealLeftOpen(id: CheckpointId, records: readonly JournalRecord[], patch: SealPatch = {}): Promise<CheckpointManifest> {
    const problem = records.map(journalRecordProblem).find((p) => p !== undefined);
    if (problem !== undefined) throw new CheckpointError('INVALID_ARGUMENT', `invalid journal record: ${problem}`);
    const file = this.layout.journalPath(parseCheckpointId(id));
    const contents = await readJournal(this.fs, file).catch((error: unknown) => {
      throw new CheckpointError('UNKNOWN_CHECKPOINT', `checkpoint ${id} has no open journal`, { cause: error });
    });
    // Validated as any read of it is (header, workspace), then folded with the new records.
    const base = journalManifest(this.layout, this.projectRoot, id, contents);
    const manifest = buildManifest((contents.header as JournalHeader).meta, [...contents.records, ...records], patch);
    manifest.gaps.push(...base.gaps.filter((gap) => gap.reason === 'journal-corrupt'));
    await writeManifest(this.layout, manifest);
    await this.fs.unlink(file).catch(() => undefined);
    return manifest;
  }

  /** Runs `fn` holding the inter-process store lock (reentrant). @throws CheckpointError `STORE_BUSY`. */
  withLock<T>(fn: () => Promise<T> | T, options?: WithLockOptions): Promise<T> {
    return this.lock.withLock(fn, options);
  }

  /**
   * Reads a small JSON document from `state/<name>.json`; `undefined` when absent.
   * @throws CheckpointError `INVALID_ARGUMENT` (bad name), `CORRUPT_MANIFEST` (does not parse).
   */
  readState(name: string): Promise<unknown> {
    return this.state.readState(name);
  }

  /** The identity of `state/<name>.json` as it is now (see {@link StateDocumentFolder.stateIdentity}); `undefined` when absent. */
  stateIdentity(name: string): Promise<string | undefined> {
    return this.state.stateIdentity(name);
  }

  /** Names of the state documents (without `.json`), sorted, optionally only those starting with `prefix`. */
  listState(prefix = ''): Promise<string[]> {
    return this.state.listState(prefix);
  }

  /**
   * Writes `state/<name>.json` atomically, fsynced unless `durable: false` (see {@link StateWriteOptions}).
   * @throws CheckpointError `INVALID_ARGUMENT`, `IO`.
   */
  writeState(name: string, value: unknown, options: StateWriteOptions = {}): Promise<void> {
    return this.state.writeState(name, value, options);
  }

  /** Removes `state/<name>.json`; absent is fine. */
  deleteState(name: string): Promise<void> {
    return this.state.deleteState(name);
  }

  /** Total bytes of every file under the store root (logical sizes), less the processes' presence files. */
  storeSizeBytes(): Promise<number> {
    return storeSizeBytes(this.fs, this.root);
  }

  /**
   * Adds a sealed manifest brought from elsewhere (a remote store's copy of this project's
   * checkpoint): it must name this project as its workspace and pass the manifest schema, and
   * every object it names must be here already. An id this store holds (sealed or open) is left
   * as it is. Written as a seal is (durable), under the lock.
   * @returns `false` when the id was here already.
   * @throws CheckpointError `FOREIGN_WORKSPACE`, `CORRUPT_MANIFEST`, `INTEGRITY` (an object missing), `STORE_BUSY`.
   */
  async importManifest(manifest: CheckpointManifest): Promise<boolean> {
    // Through the very parser a read uses: what is imported is exactly what a later read accepts.
    const checked = parseManifest(JSON.stringify(manifest), { workspace: this.projectRoot });
    return this.lock.withLock(async () => {
      for (const file of [this.layout.manifestPath(checked.id), this.layout.journalPath(checked.id)]) {
        try {
          await this.fs.stat(file);
          return false;
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot look for checkpoint', file);
        }
      }
      for (const object of manifestObjects(checked)) {
        if (!(await this.hasObject(object))) throw new CheckpointError('INTEGRITY', `checkpoint ${checked.id} names object ${object}, which is not in the store`, { expected: object });
      }
      await writeManifest(this.layout, checked);
      return true;
    });
  }

  /**
   * Deletes one checkpoint (manifest and journal), under the lock. Objects go at the next prune.
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `STORE_BUSY`.
   */
  async dropCheckpoint(id: CheckpointId | string): Promise<void> {
    const checked = parseCheckpointId(id);
    await this.lock.withLock(async () => {
      let removed = 0;
      for (const file of [this.layout.manifestPath(checked), this.layout.journalPath(checked)]) {
        try {
          await this.fs.unlink(file);
          removed += 1;
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot delete checkpoint', file);
        }
      }
      if (removed === 0) throw new CheckpointError('UNKNOWN_CHECKPOINT', goneMessage(checked, await removalOf(this.state, checked)), { found: checked });
      await recordRemovals(this.state, [{ id: checked, reason: 'dropped' }]);
    });
  }
}

/** Re-exported for layers that read journal headers. */
export type { JournalHeader };
