import { CheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest, CheckpointMeta } from '../core/model.js';
import type { Removal } from './removals.js';
import type { PruneOptions, PruneReport } from './retention.js';
import type { GitCopyOptions, GitCopyReport } from './git-copies.js';
import { CheckpointStore } from './store.js';
import type { VerifyReport } from './verify.js';

/**
 * The read-and-maintain side of a checkpoint store: what a person, the command and operators
 * need (list, read, verify, prune, sizes), and nothing that writes a checkpoint or an object —
 * those stay inside turnback, behind the restore invariants.
 */
export interface StoreView {
  /** Canonical store root. */
  readonly root: string;
  /** Canonical project root. */
  readonly projectRoot: string;
  /** Every checkpoint, sealed and open, sorted by id. */
  list(): Promise<CheckpointMeta[]>;
  /**
   * One checkpoint's manifest (an open one folded from its journal, `complete: false`).
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `CORRUPT_MANIFEST`, `FOREIGN_WORKSPACE`.
   */
  manifest(id: CheckpointId | string): Promise<CheckpointManifest>;
  /** An object's original bytes. @throws CheckpointError `INTEGRITY` when missing or damaged. */
  readObject(object: string): Promise<Buffer>;
  /** True when an object exists (content not checked). */
  hasObject(object: string): Promise<boolean>;
  /** Removes old checkpoints and unreferenced objects, under the store lock. @throws CheckpointError `STORE_BUSY`, `INVALID_ARGUMENT`. */
  prune(options?: PruneOptions): Promise<PruneReport>;
  /**
   * Removes one checkpoint (its manifest and journal) under the store lock, recorded as dropped;
   * its objects go at the next prune unless something else uses them.
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `STORE_BUSY`.
   */
  dropCheckpoint(id: CheckpointId | string): Promise<void>;
  /** Checks the whole store; problems are reported, never thrown. */
  verify(): Promise<VerifyReport>;
  /** Total bytes of every file under the store root. */
  storeSizeBytes(): Promise<number>;
  /**
   * Copies into the store, within the budget, the git blobs that checkpoints and pictures rest on
   * (clean tracked files recorded by their blob id past the copy budget), so their pre-images
   * outlive a history rewrite and `git gc`. Reads git read-only; works in small slices under the
   * store lock. The command server runs it in its idle time; `turnback prune` before it prunes.
   * @throws CheckpointError `INVALID_ARGUMENT`.
   */
  copyGitBlobsIn(options?: GitCopyOptions): Promise<GitCopyReport>;
  /** The git blob ids checkpoints and pictures rest on that the store holds no copy of. */
  restingOnGit(): Promise<string[]>;
  /** Why checkpoint `id` is gone (pruned, cleared, dropped), or `undefined` when it never existed here. */
  removal(id: string): Promise<Removal | undefined>;
  /** Seals this process's open pack and closes descriptors. */
  close(): Promise<void>;
}

const behind = new WeakMap<object, CheckpointStore>();

/** The {@link StoreView} of a store: a separate object, so the writer methods cannot be reached through it. */
export function viewOf(store: CheckpointStore): StoreView {
  const view: StoreView = Object.freeze({
    root: store.root,
    projectRoot: store.projectRoot,
    list: () => store.list(),
    manifest: (id: CheckpointId | string) => store.manifest(id),
    readObject: (object: string) => store.readObject(object),
    hasObject: (object: string) => store.hasObject(object),
    prune: (options?: PruneOptions) => store.prune(options),
    dropCheckpoint: (id: CheckpointId | string) => store.dropCheckpoint(id),
    verify: () => store.verify(),
    storeSizeBytes: () => store.storeSizeBytes(),
    copyGitBlobsIn: (options?: GitCopyOptions) => store.copyGitBlobsIn(options),
    restingOnGit: () => store.restingOnGit(),
    removal: (id: string) => store.removal(id),
    close: () => store.close(),
  });
  behind.set(view, store);
  return view;
}

/**
 * The store behind a view made by {@link viewOf} (internal: the layers above the store use it to
 * write). A `CheckpointStore` itself is returned as it is.
 *
 * @throws CheckpointError `INVALID_ARGUMENT` for anything else.
 */
export function storeBehind(view: StoreView): CheckpointStore {
  const store = behind.get(view) ?? (view instanceof CheckpointStore ? view : undefined);
  if (store === undefined) throw new CheckpointError('INVALID_ARGUMENT', 'not a store opened by turnback');
  return store;
}
