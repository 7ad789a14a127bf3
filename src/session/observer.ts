import type { PathCaptureContext } from '../capture/capture-path.js';
import type { Change } from '../capture/diff.js';
import { PictureKeeper } from '../capture/picture-keeper.js';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { isStatFingerprint, type Gap } from '../core/model.js';
import { readPostWriteState } from '../fs/disk-state.js';
import type { FileSystem } from '../fs/file-system.js';
import { toProjectPath } from '../fs/paths.js';
import type { RestorePlan } from '../restore/plan.js';
import type { CheckpointStore, CheckpointWriter } from '../store/store.js';
import { viewOf, type StoreView } from '../store/view.js';
import { CallAttributor, type CallAttribution, type CallBeginOptions, type CallBeginResult, type CallEndOptions, type DetachedCallBeginResult } from './calls.js';
import { resolveObserverOptions, type CheckpointObserverOptions } from './options.js';
import { MAX_UNHASHED, PostWriteHasher } from './post-write.js';
import { Restorer } from './restorer.js';
import type { RestoreOptions, RestoreReport } from './restore-types.js';
import { SnapshotKeeper, assertScope, type SnapshotInfo, type SnapshotScope } from './snapshots.js';
import { SavepointKeeper, type SavepointDiff, type SavepointInfo, type SavepointSaveOptions } from './savepoints.js';
import { SAVEPOINT_DEFAULTS } from '../capture/savepoint-walk.js';
import { TurnJournal, isCallerError, turnChangesOf, type OpenTurn, type TurnChanges } from './turns.js';
import type { WriteObserver, WriteOp } from './write-observer.js';

/** Validated inputs a write tool repeats are kept up to this many. */
const PROJECT_PATH_MEMO = 4096;

/**
 * The {@link WriteObserver} that keeps checkpoints. One per agent session: call
 * {@link CheckpointObserver.beginTurn} at each user turn, install it on the write tools, and carry
 * the returned {@link CheckpointId}s in the session record.
 *
 * A thin facade: turns and their journal records ({@link TurnJournal}), deferred post-write
 * hashing ({@link PostWriteHasher}), shell-call attribution ({@link CallAttributor}), tool-call
 * snapshots ({@link SnapshotKeeper}), restores ({@link Restorer}) and the pictures with their
 * stat cache ({@link PictureKeeper}) each live in a module of their own.
 *
 * @example
 * const observer = await observerForConfig(configToml, { projectRoot });
 * const turn = await observer?.beginTurn({ label: 'fix the parser' });
 * await writeFile({ projectRoot, observer }, 'src/parser.ts', text);
 * await observer?.restore(turn!);
 */
export class CheckpointObserver implements WriteObserver {
  /** The session name recorded in every checkpoint of this observer. */
  readonly sessionId: string;
  /** The store's read-and-maintain side (list, manifests, verify, prune). */
  readonly store: StoreView;
  readonly #store: CheckpointStore;
  readonly #fs: FileSystem;
  readonly #restoreLockTimeoutMs: number;
  readonly #turns: TurnJournal;
  readonly #hasher: PostWriteHasher;
  readonly #pictures: PictureKeeper;
  readonly #calls: CallAttributor;
  readonly #snapshots: SnapshotKeeper;
  readonly #restorer: Restorer;
  readonly #savepoints: SavepointKeeper;
  readonly #projectPaths = new Map<string, string>();
  #closed = false;

  constructor(options: CheckpointObserverOptions) {
    const resolved = resolveObserverOptions(options);
    this.#store = resolved.store;
    this.#fs = resolved.fs;
    this.store = viewOf(resolved.store);
    this.sessionId = resolved.sessionId;
    this.#restoreLockTimeoutMs = resolved.restoreLockTimeoutMs;
    const capture: PathCaptureContext = { fs: resolved.fs, store: resolved.store, projectRoot: resolved.store.projectRoot, maxFileBytes: resolved.coverage.maxFileBytes, isUncopiedCredential: resolved.coverage.isUncopiedCredential };
    this.#hasher = new PostWriteHasher(resolved.fs, capture.projectRoot);
    this.#pictures = new PictureKeeper({
      store: resolved.store,
      projectRoot: capture.projectRoot,
      coverage: resolved.coverage,
      fs: resolved.fs,
      ...(resolved.pictureReadDir !== undefined ? { readDir: resolved.pictureReadDir } : {}),
      ...(resolved.pictureDeadline !== undefined ? { deadline: resolved.pictureDeadline } : {}),
      liveGenerations: () => this.#calls.liveGenerations(),
    });
    this.#turns = new TurnJournal(capture, this.sessionId, {
      beforeSeal: () => this.#hasher.hashPending(),
      afterSeal: () => this.#pictures.saveNow(),
    });
    this.#calls = new CallAttributor(resolved.store, this.sessionId, resolved.ownerPid, this.#pictures, this.#turns, capture);
    this.#snapshots = new SnapshotKeeper(capture, resolved.snapshotCapBytes, () => this.#hasher.hashPending());
    this.#restorer = new Restorer(capture, this.sessionId, this.#hasher, (gap) => this.#turns.recordGap(gap));
    this.#savepoints = new SavepointKeeper(resolved.store, capture.projectRoot);
  }

  /** The canonical project root. */
  get projectRoot(): string {
    return this.#store.projectRoot;
  }

  /** Gaps recorded since the observer was created (files not copied, a discard not recorded). */
  get gaps(): readonly Gap[] {
    return this.#turns.gaps;
  }

  /** The id of the open turn, if any. */
  get currentTurn(): CheckpointId | undefined {
    return this.#turns.current?.writer.id;
  }

  /**
   * Seals the previous turn and opens a new checkpoint. Returns its id, which a session record
   * carries to restore later.
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for a label that is not a string; `CLOSED` after {@link close}.
   */
  async beginTurn(options: { label?: string } = {}): Promise<CheckpointId> {
    this.#assertOpen();
    if (options.label !== undefined && typeof options.label !== 'string') {
      throw new CheckpointError('INVALID_ARGUMENT', 'label must be a string');
    }
    await this.#turns.seal();
    const turn = await this.#turns.open(options.label);
    return turn.writer.id;
  }

  /**
   * Captures the pre-image of `path` the first time it is touched in the turn (a turn is opened
   * implicitly if none is). Later touches of the same path in the turn cost one map lookup.
   *
   * @throws CheckpointError for a path outside the project, through a symlinked folder, or invalid.
   */
  async beforeWrite(path: string, op?: WriteOp): Promise<void> {
    this.#assertOpen();
    const projectPath = this.#projectPathOf(path);
    let turn: OpenTurn;
    try {
      turn = await this.#turns.writable();
      await this.#snapshots.captureIfScoped(projectPath);
    } catch (error) {
      // The store failed (a full or read-only disk): the write goes ahead, reported as a gap.
      if (isCallerError(error)) throw error;
      this.#turns.recordStoreFailure(projectPath, error);
      return;
    }
    return this.#turns.captureOnce(turn, projectPath, op?.callId);
  }

  /**
   * Records what `path` holds after the write: the fingerprint the restore guard compares against.
   */
  async afterWrite(path: string, op?: WriteOp): Promise<void> {
    this.#assertOpen();
    const projectPath = this.#projectPathOf(path);
    const turn = this.#turns.current;
    const captured = turn?.touched.get(projectPath);
    if (turn === undefined || captured === undefined) return this.#turns.recordMissingPreImage(projectPath).catch((error: unknown) => this.#turns.recordStoreFailure(projectPath, error));
    await captured;
    try {
      await this.#recordAfter(turn, projectPath, op);
    } catch (error) {
      // A write that landed never reports failure: the missing record is a gap (the guard then
      // refuses the path rather than guessing), never a throw.
      if (isCallerError(error)) throw error;
      this.#turns.recordStoreFailure(projectPath, error);
    }
  }

  async #recordAfter(turn: OpenTurn, projectPath: string, op: WriteOp | undefined): Promise<void> {
    // One lstat: a file's content is hashed later (PostWriteHasher), while this identity still holds.
    const post = await readPostWriteState(this.#fs, this.projectRoot, projectPath);
    const snapshot = this.#snapshots.current();
    const writers: CheckpointWriter[] = snapshot !== undefined && snapshot.touched.has(projectPath) ? [turn.writer, snapshot.writer] : [turn.writer];
    const callId = op?.callId;
    if (isStatFingerprint(post.fingerprint)) this.#hasher.note(projectPath, post.fingerprint, writers, callId);
    else this.#hasher.forget(projectPath);
    const record = { op: 'after' as const, path: projectPath, after: post.fingerprint, ...(post.mode !== undefined ? { afterMode: post.mode } : {}) };
    await this.#turns.recordAfter(turn, callId !== undefined ? { ...record, callId } : record);
    if (writers.length > 1) await (writers[1] as CheckpointWriter).append(record);
    if (this.#hasher.pending >= MAX_UNHASHED) await this.#hasher.hashPending();
  }

  /**
   * The restore plan to checkpoint `id`, without touching any file: for every path changed since
   * `id`, whether it would be skipped, refused, restored, recreated, deleted or left, and why.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `INVALID_PATH`, `OUTSIDE_ROOT`.
   */
  async plan(id: CheckpointId, options: RestoreOptions = {}): Promise<RestorePlan> {
    this.#assertOpen();
    await this.#hasher.hashPending();
    return (await this.#restorer.plan(id, options)).plan;
  }

  /**
   * Brings every path changed since checkpoint `id` (in that turn and every later one) back to its
   * state at `id`. Saves what it overwrites first (a `pre-restore` checkpoint), applies as one
   * transaction, and re-checks the guard just before each swap.
   *
   * @throws CheckpointError for bad input (nothing is written) or `STORE_BUSY`.
   */
  async restore(id: CheckpointId, options: RestoreOptions = {}): Promise<RestoreReport> {
    this.#assertOpen();
    // Writes made after a restore must capture the restored content as their pre-image.
    await this.#turns.seal();
    return this.#store.withLock(async () => {
      const recovered = await this.#restorer.recoverInterrupted();
      const report = await this.#restorer.restoreLocked(id, options);
      return { ...report, removedLeftovers: recovered.flatMap((r) => r.removedLeftovers).sort() };
    }, { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /** Seals the open turn and stops the helper thread of repeat pictures. The observer cannot be used afterwards. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#turns.seal();
    this.#closed = true;
    await this.#pictures.close();
  }

  /**
   * Takes a whole-tree picture before a tool or shell call: the baseline {@link callEnd} diffs
   * against. Reuses every unchanged file's stat record (a new process loads the store's stat
   * cache), copies changed files into the store, and persists the baseline so a crash mid-call
   * can be detected and reported by another process.
   *
   * A repeated detached begin of a call still open, or a begin of one another process began (an
   * agent retrying a call under the same id), keeps the first picture as the call's baseline and
   * keeps what the earlier attempts left as a snapshot of the call; see CHECKPOINT-DESIGN.md,
   * "Session layer".
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for an empty call id, or one this process began and
   * begins again without `detached`.
   */
  async callBegin(callId: string, options?: CallBeginOptions & { detached?: false }): Promise<CallBeginResult>;
  async callBegin(callId: string, options: CallBeginOptions & { detached: true }): Promise<DetachedCallBeginResult>;
  async callBegin(callId: string, options?: CallBeginOptions): Promise<DetachedCallBeginResult>;
  async callBegin(callId: string, options: CallBeginOptions = {}): Promise<CallBeginResult | DetachedCallBeginResult> {
    this.#assertOpen();
    if (options.paths !== undefined && (!Array.isArray(options.paths) || options.paths.length === 0 || !options.paths.every((p) => typeof p === 'string'))) {
      throw new CheckpointError('INVALID_ARGUMENT', 'paths must be a non-empty list of strings when given');
    }
    // Checked before anything is written: a path outside the project opens no turn.
    const scope = options.paths?.map((p) => this.#projectPathOf(p));
    return this.#calls.begin(callId, options, async () => {
      // A detached call outside a turn opens none: its end, in another process, records it in a
      // checkpoint of its own, and an empty turn per tool call would only fill the list.
      const turn = this.#turns.current ?? (options.detached === true ? undefined : await this.#turns.ensure());
      // The picture must not read a half-recorded write as a shell change: settle the records first.
      await this.#hasher.hashPending();
      return turn;
    }, scope);
  }

  /**
   * This session's open calls, oldest first: begun in this process and not ended, or begun by
   * another process of the same session (an agent hook's before-tool event) whose end has not
   * come. What ends a session's stale calls reads it.
   */
  async openCalls(): Promise<{ callId: string; startedAt: string; command?: string; detached: boolean }[]> {
    this.#assertOpen();
    return this.#calls.openCalls();
  }

  /**
   * Pictures the tree again after a call and attributes each changed, created or deleted path,
   * with its pre-call state and post-call fingerprint, to the call — on the same timeline as
   * observer writes, so one restore undoes both. Works in a new process after a crash too: the
   * baseline is read back from the store.
   *
   * @throws CheckpointError `UNKNOWN_CALL` for a call never begun; `INVALID_ARGUMENT` for a bad id or side-effect class.
   */
  async callEnd(callId: string, options: CallEndOptions = {}): Promise<CallAttribution> {
    this.#assertOpen();
    return this.#calls.end(callId, options);
  }

  /**
   * Pictures the whole tree and returns what changed since the last mark named `name`, taken by
   * any process of any session (nothing the first time: `first`); the picture becomes the next
   * mark's start, or, with `keep: false`, the mark is removed. Records nothing on the timeline: for
   * splitting overlapping calls' windows into the stretches between events (the agent hooks do,
   * at every event while two calls overlap).
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for an empty name or one over 512 characters.
   */
  async treeMark(name: string, options: { keep?: boolean } = {}): Promise<{ changes: Change[]; first: boolean; partial: boolean }> {
    this.#assertOpen();
    await this.#hasher.hashPending();
    return this.#calls.mark(name, options.keep ?? true);
  }

  /**
   * The change list of a turn (or any timeline checkpoint): created, changed and deleted paths
   * with their pre-images, for turn-end lists and `show`.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`.
   */
  async turnChanges(id: CheckpointId): Promise<TurnChanges> {
    this.#assertOpen();
    await this.#hasher.hashPending();
    return turnChangesOf(await this.#store.manifest(parseCheckpointId(id)));
  }

  /**
   * Runs `fn` as tool call `scope`: writes through this observer inside it (in its async context)
   * are captured into the scope's open snapshot, if one was registered. The async context is
   * only active while a tool call runs, which keeps Node 20's AsyncLocalStorage cost scoped.
   */
  async withToolCall<T>(scope: SnapshotScope, fn: () => Promise<T>): Promise<T> {
    this.#assertOpen();
    return this.#snapshots.withToolCall(scope, fn);
  }

  /**
   * Registers a per-tool-call snapshot. With `paths`, their bytes are copied now; without, every
   * write through this observer made inside {@link withToolCall} for the same scope captures its
   * pre-image into it. Either way it stays open until its tool call ends.
   */
  async snapshot(request: SnapshotScope & { paths?: string[] }): Promise<SnapshotInfo> {
    this.#assertOpen();
    assertScope(request);
    const only = request.paths === undefined ? undefined : this.#restorer.pathFilter(request.paths);
    return this.#snapshots.open({ sessionId: request.sessionId, scopeId: request.scopeId }, only);
  }

  /** The snapshots of a session, sorted by capture time. */
  async listSnapshots(sessionId: string): Promise<SnapshotInfo[]> {
    return this.#snapshots.list(sessionId);
  }

  /**
   * Writes a snapshot's pre-images back and deletes the paths it saw as absent — guarded like
   * every restore, and saved first so it can be undone.
   */
  async restoreSnapshot(request: SnapshotScope & { paths?: string[] }): Promise<RestoreReport> {
    this.#assertOpen();
    const metas = await this.#snapshots.find(request);
    await this.#turns.seal();
    return this.#store.withLock(() => this.#restorer.restoreSnapshotLocked(metas.map((m) => m.id), request.paths), { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /**
   * Makes a savepoint: the files under `trackedPaths` now (within bounds; `truncated` when one
   * was hit), each with its mode and SHA-256, as a `savepoint` checkpoint of this store.
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for a reason over 4,096 characters or a limit past its ceiling.
   */
  async savepoint(options: Omit<SavepointSaveOptions, 'sessionId'> = {}): Promise<SavepointInfo> {
    this.#assertOpen();
    return this.#savepoints.save({ ...options, sessionId: this.sessionId });
  }

  /** This workspace's savepoints, newest first (at most 100). */
  async listSavepoints(): Promise<SavepointInfo[]> {
    this.#assertOpen();
    return this.#savepoints.list();
  }

  /**
   * What differs between savepoint `id` and the tree now (changed and missing files); never content.
   * @throws CheckpointError `UNKNOWN_CHECKPOINT`, `INVALID_ID`, `FOREIGN_WORKSPACE`.
   */
  async diffSavepoint(id: CheckpointId, options: { maxFileBytes?: number } = {}): Promise<SavepointDiff> {
    this.#assertOpen();
    return this.#savepoints.diff(id, options.maxFileBytes ?? SAVEPOINT_DEFAULTS.maxFileBytes);
  }

  /**
   * Writes savepoint `id` back: every file it names is overwritten or recreated, files created
   * since stay, modes never widen (owner read and write kept; no new exec, group-write or
   * other-write). Every stored copy is checked against its SHA-256 and every destination
   * preflighted before anything is written; one transaction, rolled back on any failure or on
   * `signal`, and saved first (`preRestoreId` undoes it).
   *
   * @throws CheckpointError `UNKNOWN_CHECKPOINT`, `FOREIGN_WORKSPACE`, `INTEGRITY` (a stored copy
   *   that does not match), `CONFLICT` (a destination that cannot be written: nothing was),
   *   `STORE_BUSY`.
   */
  async restoreSavepoint(id: CheckpointId, options: { signal?: AbortSignal } = {}): Promise<RestoreReport> {
    this.#assertOpen();
    const manifest = await this.#savepoints.manifest(id);
    const verified = await this.#savepoints.verifyContent(manifest);
    options.signal?.throwIfAborted();
    await this.#turns.seal();
    return this.#store.withLock(() => this.#restorer.restoreSavepointLocked(manifest, verified, options.signal), { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /**
   * Undoes one shell or tool call: writes back the pre-call states `callEnd` attributed to it
   * (`attribution`), deletes what it created, and refuses any path changed again since (guarded
   * by its post-call state, as every restore). Saved first: the report's `preRestoreId` undoes it.
   * `turn` is the checkpoint the call was recorded in.
   */
  async restoreCall(turn: CheckpointId, attribution: Pick<CallAttribution, 'changes'>, options: { signal?: AbortSignal } = {}): Promise<RestoreReport> {
    this.#assertOpen();
    const id = parseCheckpointId(turn);
    await this.#turns.seal();
    return this.#store.withLock(() => this.#restorer.restoreCallLocked(id, attribution.changes, options.signal), { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /** Removes a snapshot's state; its objects go at the next prune unless something else uses them. */
  async dropSnapshot(request: SnapshotScope): Promise<void> {
    return this.#snapshots.drop(request);
  }

  /**
   * Releases everything a session left in the store: its checkpoints, snapshots and call
   * baselines, then the objects nothing else references.
   */
  async drop(sessionId: string): Promise<{ removedCheckpoints: number }> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
    if (sessionId === this.sessionId) {
      await this.#turns.seal();
      await this.#calls.dropAll();
    }
    await this.#snapshots.sealSession(sessionId);
    const metas = (await this.#store.list()).filter((m) => m.sessionId === sessionId);
    let removed = 0;
    for (const meta of metas) {
      try {
        await this.#store.dropCheckpoint(meta.id);
        removed += 1;
      } catch (error) {
        // Pruned by another process since the listing: it is gone, which is what a drop wants.
        if (!isCheckpointError(error) || error.code !== 'UNKNOWN_CHECKPOINT') throw error;
      }
    }
    // With no grace period, the objects this process's unsaved stat cache names must be on record.
    await this.#pictures.saveNow();
    await this.#store.prune({ retain: Number.MAX_SAFE_INTEGER, graceMs: 0 });
    return { removedCheckpoints: removed };
  }

  /**
   * {@link toProjectPath} with a memo of the inputs seen: a write tool touches the same spelling of
   * a path again and again, and validating it costs more than the rest of a repeat touch. Only
   * successful validations are kept; the memo is dropped whole when it grows large.
   */
  #projectPathOf(input: string): string {
    const known = typeof input === 'string' ? this.#projectPaths.get(input) : undefined;
    if (known !== undefined) return known;
    const projectPath = toProjectPath(this.projectRoot, input);
    if (this.#projectPaths.size >= PROJECT_PATH_MEMO) this.#projectPaths.clear();
    this.#projectPaths.set(input, projectPath);
    return projectPath;
  }

  #assertOpen(): void {
    if (this.#closed) throw new CheckpointError('CLOSED', 'this observer is closed');
  }
}
