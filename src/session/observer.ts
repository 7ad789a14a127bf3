import { AsyncLocalStorage } from 'node:async_hooks';
import { resolveCoverage, type CoverageOptions, type ResolvedCoverage } from '../capture/coverage.js';
import { diffPictures, type Change } from '../capture/diff.js';
import { loadPictureCache, savePictureCache, takePicture, type Picture, type PictureCache } from '../capture/picture.js';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { fingerprintOf, type CheckpointManifest, type CheckpointMeta, type Fingerprint, type Gap, type PathState, type SideEffect } from '../core/model.js';
import { diskFingerprint, readDiskState, type DiskState } from '../fs/disk-state.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import { toProjectPath } from '../fs/paths.js';
import { applyRestore } from '../restore/apply.js';
import type { ModePolicy } from '../restore/modes.js';
import { planRestore, type PlanEntry, type PlanInput, type RestorePlan } from '../restore/plan.js';
import type { CheckpointStore, CheckpointWriter } from '../store/store.js';
import { baselinePicture, baselineStateName, parseBaseline, toBaseline, type CallBaseline } from './baseline.js';
import { capturePath, type PathCaptureContext } from './capture-path.js';
import { foldTimeline, isTimelineKind, type IrreversibleCall } from './timeline.js';
import type { WriteObserver, WriteOp } from './write-observer.js';

/** Options of {@link CheckpointObserver.plan} and {@link CheckpointObserver.restore}. */
export interface RestoreOptions {
  /** Restore only these paths (absolute or project-relative). Must be non-empty when given. */
  paths?: string[];
  /**
   * What happens to files created since the checkpoint: `delete` (rewind) or `keep` (undo).
   * @default 'delete'
   */
  created?: 'delete' | 'keep';
  /**
   * Mode policy: `exact` puts back the recorded mode (minus set-id and sticky bits);
   * `never-widen` keeps owner read/write and never grants exec, group-write or other-write.
   * @default 'exact'
   */
  modePolicy?: ModePolicy;
  /**
   * The plan a person previewed. Any path whose disk state differs from what that preview saw,
   * or that the preview did not list as a write, is refused (`changed-since-plan`) instead of
   * written: a restore never does more than was shown.
   */
  expect?: RestorePlan;
}

/** A failed write in a restore. */
export interface RestoreFailure {
  path: string;
  error: string;
  code?: string;
}

/** The receipt of a restore. Arrays list plan entries by outcome. */
export interface RestoreReport {
  /** Always true here; surfaces that can be unavailable return an `Unavailable` value instead. */
  available: true;
  /** The checkpoint restored to. */
  checkpointId: CheckpointId;
  /** The `pre-restore` checkpoint that saved what this restore overwrote; restore it to undo. */
  preRestoreId: CheckpointId | undefined;
  restored: PlanEntry[];
  refused: PlanEntry[];
  skipped: PlanEntry[];
  failed: RestoreFailure[];
  /** Calls after the checkpoint whose side effects (network, desktop) a file restore cannot undo. */
  irreversible: IrreversibleCall[];
  /** Temporary files the restore could not remove; inspect them by hand. */
  cleanupPending: string[];
}

/** Construction options of {@link CheckpointObserver}. */
export interface CheckpointObserverOptions {
  /** The project root; canonicalised by the store. */
  store: CheckpointStore;
  /** Names this observer's checkpoints in the store. @default a random id */
  sessionId?: string;
  /** Files larger than this are recorded, not copied. @default 100 MiB */
  maxFileBytes?: number;
  /** How long a capture waits for a busy store before recording a gap. @default 250 */
  lockTimeoutMs?: number;
  /** How long a restore waits for the store lock. @default 5000 */
  restoreLockTimeoutMs?: number;
  /** Injected file system (tests). @default node:fs/promises */
  fs?: FileSystem;
  /** Coverage rules and limits of whole-tree pictures (calls). @default the `[checkpoints]` defaults */
  coverage?: CoverageOptions;
  /** Per-session byte cap of tool-call snapshots; the oldest are evicted first. @default 1 GiB */
  snapshotCapBytes?: number;
}

/** What {@link CheckpointObserver.callEnd} attributes to a call. */
export interface CallAttribution {
  callId: string;
  /** Every changed, created or deleted path, with its pre-call state and post-call state. */
  changes: Change[];
  /** Paths whose attribution is unreliable (folder unreadable, file vanished mid-scan); restores refuse them. */
  incomplete: string[];
  /** What the pictures around the call did not capture. */
  gaps: Gap[];
  /** True when either picture stopped early or left folders unchecked. */
  partial: boolean;
  /** One human sentence about the gaps, empty when complete. */
  summary: string;
}

/** Options of {@link CheckpointObserver.callBegin}. */
export interface CallBeginOptions {
  /** What runs (recorded so an interrupted call can be named later). */
  command?: string;
  /** Aborts the picture. */
  signal?: AbortSignal;
  /** Progress of a long picture. */
  onProgress?: (progress: { walked: number; copied: number; toCopy: number }) => void;
}

/** What {@link CheckpointObserver.callBegin} took. */
export interface CallBeginResult {
  checkpointId: CheckpointId;
  partial: boolean;
  gaps: Gap[];
  summary: string;
}

/** A turn's change list, derived from its manifest. */
export interface TurnChanges {
  checkpointId: CheckpointId;
  changes: Change[];
  gaps: Gap[];
  /** True when the checkpoint was cut short or recorded gaps: the list may be incomplete. */
  partial: boolean;
}

/** Identifies a tool-call snapshot. */
export interface SnapshotScope {
  sessionId: string;
  /** The tool call, canonically the ACP `toolCallId`. */
  scopeId: string;
}

/** A snapshot as listed. */
export interface SnapshotInfo extends SnapshotScope {
  checkpointId: CheckpointId;
  createdAt: string;
  /** True while it is open and auto-capturing writes made inside its tool call. */
  open: boolean;
  paths: string[];
  bytes: number;
}

interface OpenTurn {
  writer: CheckpointWriter;
  /** Per path: the capture in flight or done, so a repeat touch costs one map lookup. */
  touched: Map<string, Promise<void>>;
}

/**
 * The {@link WriteObserver} that keeps checkpoints. One per agent session: call
 * {@link CheckpointObserver.beginTurn} at each user turn, install it on the write tools, and carry
 * the returned {@link CheckpointId}s in the session record.
 *
 * @example
 * const observer = await observerForConfig(configToml, { projectRoot });
 * const turn = await observer?.beginTurn({ label: 'fix the parser' });
 * await writeFile(observer, 'src/parser.ts', text);
 * await observer?.restore(turn!);
 */
export class CheckpointObserver implements WriteObserver {
  /** The store this observer writes to. */
  readonly store: CheckpointStore;
  /** The session name recorded in every checkpoint of this observer. */
  readonly sessionId: string;
  readonly #fs: FileSystem;
  readonly #capture: PathCaptureContext;
  readonly #restoreLockTimeoutMs: number;
  #turn: OpenTurn | undefined;
  #turnOpening: Promise<OpenTurn> | undefined;
  #gaps: Gap[] = [];
  #closed = false;
  readonly #coverage: ResolvedCoverage;
  readonly #snapshotCapBytes: number;
  #pictureCache: PictureCache | undefined;
  readonly #calls = new Map<string, { baseline: CallBaseline; picture: Picture; startedAt: string }>();
  #toolContext: AsyncLocalStorage<SnapshotScope> | undefined;
  #activeToolCalls = 0;
  readonly #openSnapshots = new Map<string, { writer: CheckpointWriter; scope: SnapshotScope; touched: Map<string, Promise<void>>; createdAt: string }>();

  constructor(options: CheckpointObserverOptions) {
    this.store = options.store;
    this.sessionId = options.sessionId ?? `session-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    this.#fs = options.fs ?? nodeFileSystem;
    this.#restoreLockTimeoutMs = options.restoreLockTimeoutMs ?? 5000;
    this.#capture = {
      fs: this.#fs,
      store: this.store,
      projectRoot: this.store.projectRoot,
      maxFileBytes: options.maxFileBytes ?? 100 * 1024 * 1024,
      lockTimeoutMs: options.lockTimeoutMs ?? 250,
    };
    this.#coverage = resolveCoverage(options.coverage ?? {});
    this.#snapshotCapBytes = options.snapshotCapBytes ?? 1024 * 1024 * 1024;
  }

  /** The canonical project root. */
  get projectRoot(): string {
    return this.store.projectRoot;
  }

  /** Gaps recorded since the observer was created (files not copied, a busy store). */
  get gaps(): readonly Gap[] {
    return this.#gaps;
  }

  /** The id of the open turn, if any. */
  get currentTurn(): CheckpointId | undefined {
    return this.#turn?.writer.id;
  }

  /**
   * Seals the previous turn and opens a new checkpoint. Returns its id, which a session record
   * carries to restore later.
   */
  async beginTurn(options: { label?: string } = {}): Promise<CheckpointId> {
    this.#assertOpen();
    if (options.label !== undefined && typeof options.label !== 'string') {
      throw new CheckpointError('INVALID_ARGUMENT', 'label must be a string');
    }
    await this.#sealTurn();
    const turn = await this.#openTurn(options.label);
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
    const projectPath = toProjectPath(this.projectRoot, path);
    const turn = this.#turn ?? (await this.#ensureTurn());
    const scope = this.#toolContext?.getStore();
    if (scope !== undefined) await this.#captureIntoSnapshot(scope, projectPath);
    const inFlight = turn.touched.get(projectPath);
    if (inFlight !== undefined) return inFlight;
    const capture = this.#captureInto(turn, projectPath, op?.callId);
    turn.touched.set(projectPath, capture);
    try {
      await capture;
    } catch (error) {
      turn.touched.delete(projectPath);
      throw error;
    }
  }

  /**
   * Records what `path` holds after the write: the fingerprint the restore guard compares against.
   */
  async afterWrite(path: string, op?: WriteOp): Promise<void> {
    this.#assertOpen();
    const projectPath = toProjectPath(this.projectRoot, path);
    const turn = this.#turn;
    const captured = turn?.touched.get(projectPath);
    if (turn === undefined || captured === undefined) {
      this.#recordGap({ path: projectPath, reason: 'no-pre-image', detail: 'afterWrite without beforeWrite in this turn: nothing to restore' });
      if (turn !== undefined) await turn.writer.append({ op: 'gap', gap: this.#gaps.at(-1) as Gap });
      return;
    }
    await captured;
    const disk = await readDiskState(this.#fs, this.projectRoot, projectPath);
    const scope = this.#toolContext?.getStore();
    const snapshot = scope === undefined ? undefined : this.#openSnapshots.get(snapshotKey(scope));
    if (snapshot !== undefined && snapshot.touched.has(projectPath)) {
      await snapshot.writer.append({ op: 'after', path: projectPath, after: diskFingerprint(disk), ...(disk.type === 'file' ? { afterMode: disk.mode } : {}) });
    }
    await turn.writer.append({
      op: 'after',
      path: projectPath,
      after: diskFingerprint(disk),
      ...(disk.type === 'file' ? { afterMode: disk.mode } : {}),
      ...(op?.callId !== undefined ? { callId: op.callId } : {}),
    });
  }

  /**
   * The restore plan to checkpoint `id`, without touching any file: for every path changed since
   * `id`, whether it would be skipped, refused, restored, recreated, deleted or left, and why.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `INVALID_PATH`, `OUTSIDE_ROOT`.
   */
  async plan(id: CheckpointId, options: RestoreOptions = {}): Promise<RestorePlan> {
    this.#assertOpen();
    return (await this.#plan(id, options)).plan;
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
    await this.#sealTurn();
    return this.store.withLock(() => this.#restoreLocked(id, options), { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /** Seals the open turn. The observer cannot be used afterwards. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#sealTurn();
    this.#closed = true;
  }

  /**
   * Takes a whole-tree picture before a tool or shell call: the baseline {@link callEnd} diffs
   * against. Reuses every unchanged file's stat record (a new process loads the store's stat
   * cache), copies changed files into the store, and persists the baseline so a crash mid-call
   * can be detected and reported by another process.
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for an empty call id or one already open.
   */
  async callBegin(callId: string, options: CallBeginOptions = {}): Promise<CallBeginResult> {
    this.#assertOpen();
    assertCallId(callId);
    if (this.#calls.has(callId)) throw new CheckpointError('INVALID_ARGUMENT', `call ${callId} is already open`);
    const turn = this.#turn ?? (await this.#ensureTurn());
    const picture = await this.#takePicture(options);
    const baseline = toBaseline(picture, {
      sessionId: this.sessionId,
      callId,
      checkpointId: turn.writer.id,
      pid: process.pid,
      ...(options.command !== undefined ? { command: options.command } : {}),
    });
    await this.store.writeState(baselineStateName(this.sessionId, callId), baseline);
    this.#calls.set(callId, { baseline, picture, startedAt: baseline.startedAt });
    return { checkpointId: turn.writer.id, partial: picture.partial, gaps: picture.gaps, summary: picture.summary };
  }

  /**
   * Pictures the tree again after a call and attributes each changed, created or deleted path,
   * with its pre-call state and post-call fingerprint, to the call — on the same timeline as
   * observer writes, so one restore undoes both. Works in a new process after a crash too: the
   * baseline is read back from the store.
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for an unknown call or side-effect class.
   */
  async callEnd(callId: string, options: { sideEffect?: SideEffect; signal?: AbortSignal } = {}): Promise<CallAttribution> {
    this.#assertOpen();
    assertCallId(callId);
    const sideEffect = options.sideEffect ?? 'filesystem';
    if (!SIDE_EFFECTS.has(sideEffect)) throw new CheckpointError('INVALID_ARGUMENT', `unknown side-effect class: ${String(sideEffect)}`);
    const stateName = baselineStateName(this.sessionId, callId);
    let call = this.#calls.get(callId);
    if (call === undefined) {
      const baseline = parseBaseline(await this.store.readState(stateName));
      if (baseline === undefined) throw new CheckpointError('INVALID_ARGUMENT', `no callBegin recorded for call ${callId}`);
      const view = baselinePicture(baseline);
      call = { baseline, picture: { ...view, copied: 0, copiedBytes: 0, summary: '' }, startedAt: baseline.startedAt };
    }
    const after = await this.#takePicture({ ...(options.signal !== undefined ? { signal: options.signal } : {}) }, call.picture);
    const changes = diffPictures(call.picture, after);
    const incomplete = incompletePaths(call.picture, after);
    // The call's records go to the turn it began in, or, after a restart, to a checkpoint of its own.
    const turn = this.#turn !== undefined && this.#turn.writer.id === call.baseline.checkpointId ? this.#turn : undefined;
    const writer = turn?.writer ?? (await this.store.openCheckpoint({ kind: 'call', sessionId: this.sessionId, label: call.baseline.command ?? callId }));
    for (const change of changes) {
      const before: PathState = change.before ?? { type: 'absent' };
      const afterPrint = change.after === undefined ? 'absent' : fingerprintOf(change.after);
      await writer.append({ op: 'before', path: change.path, state: before, callId });
      if (afterPrint !== undefined) {
        await writer.append({ op: 'after', path: change.path, after: afterPrint, ...(change.after?.type === 'file' ? { afterMode: change.after.mode } : {}), callId });
      }
      turn?.touched.set(change.path, Promise.resolve());
    }
    for (const path of incomplete) await writer.append({ op: 'incomplete', path, callId });
    const gaps = [...after.gaps];
    for (const gap of gaps) await writer.append({ op: 'gap', gap });
    await writer.append({
      op: 'call',
      call: { callId, sideEffect, startedAt: call.startedAt, endedAt: new Date().toISOString(), ...(incomplete.length > 0 ? { incompletePaths: incomplete } : {}) },
    });
    if (turn === undefined) await writer.seal({ complete: !after.partial && !call.picture.partial });
    else if (after.partial || call.picture.partial) await writer.append({ op: 'meta', complete: false });
    this.#calls.delete(callId);
    await this.store.writeState(stateName, null);
    return {
      callId,
      changes,
      incomplete,
      gaps,
      partial: after.partial || call.picture.partial,
      summary: after.summary || call.picture.summary,
    };
  }

  /**
   * The change list of a turn (or any timeline checkpoint): created, changed and deleted paths
   * with their pre-images, for turn-end lists and `show`.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`.
   */
  async turnChanges(id: CheckpointId): Promise<TurnChanges> {
    const manifest = await this.store.manifest(parseCheckpointId(id));
    return { checkpointId: manifest.id, changes: changesOf(manifest), gaps: manifest.gaps, partial: !manifest.complete || manifest.gaps.length > 0 };
  }

  /**
   * Runs `fn` as tool call `scope`: writes through this observer inside it (in its async context)
   * are captured into the scope's open snapshot, if one was registered. The async context is
   * only active while a tool call runs, which keeps Node 20's AsyncLocalStorage cost scoped.
   */
  async withToolCall<T>(scope: SnapshotScope, fn: () => Promise<T>): Promise<T> {
    this.#assertOpen();
    assertScope(scope);
    const context = (this.#toolContext ??= new AsyncLocalStorage<SnapshotScope>());
    this.#activeToolCalls++;
    try {
      return await context.run({ sessionId: scope.sessionId, scopeId: scope.scopeId }, fn);
    } finally {
      const open = this.#openSnapshots.get(snapshotKey(scope));
      if (open !== undefined) {
        this.#openSnapshots.delete(snapshotKey(scope));
        await Promise.allSettled(open.touched.values());
        await open.writer.seal();
        await this.#enforceSnapshotCap(scope.sessionId);
      }
      this.#activeToolCalls--;
      if (this.#activeToolCalls === 0 && this.#toolContext === context) {
        // Node 20 keeps promise hooks on while any AsyncLocalStorage is enabled: switch it off.
        context.disable();
        this.#toolContext = undefined;
      }
    }
  }

  /**
   * Registers a per-tool-call snapshot. With `paths`, their bytes are copied now and the snapshot
   * is sealed; without, it stays open and every write through this observer made inside
   * {@link withToolCall} for the same scope captures its pre-image into it.
   */
  async snapshot(request: SnapshotScope & { paths?: string[] }): Promise<SnapshotInfo> {
    this.#assertOpen();
    assertScope(request);
    const key = snapshotKey(request);
    if (this.#openSnapshots.has(key)) throw new CheckpointError('INVALID_ARGUMENT', `snapshot ${request.scopeId} is already open`);
    const only = request.paths === undefined ? undefined : this.#pathFilter(request.paths);
    const writer = await this.store.openCheckpoint({ kind: 'snapshot', sessionId: request.sessionId, scopeId: request.scopeId, label: request.scopeId });
    const createdAt = new Date().toISOString();
    const scope = { sessionId: request.sessionId, scopeId: request.scopeId };
    const touched = new Map<string, Promise<void>>();
    if (only !== undefined) {
      await loadHasher();
      for (const path of only) {
        const captured = await capturePath(this.#capture, path);
        if (captured.gap !== undefined) await writer.append({ op: 'gap', gap: captured.gap });
        await writer.append({ op: 'before', path, state: captured.state });
        touched.set(path, Promise.resolve());
      }
    }
    // Explicit or not, the snapshot stays open until its tool call ends (or it is restored or
    // dropped), so writes through the observer inside the call record the post-write state the
    // restore guard needs.
    this.#openSnapshots.set(key, { writer, scope, touched, createdAt });
    return { ...scope, checkpointId: writer.id, createdAt, open: true, paths: [...touched.keys()].sort(), bytes: 0 };
  }

  /** The snapshots of a session, sorted by capture time. */
  async listSnapshots(sessionId: string): Promise<SnapshotInfo[]> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
    const metas = (await this.store.list()).filter((m) => m.kind === 'snapshot' && m.sessionId === sessionId);
    const infos: SnapshotInfo[] = [];
    for (const meta of metas) {
      const open = [...this.#openSnapshots.values()].some((o) => o.writer.id === meta.id);
      infos.push(snapshotInfo(await this.store.manifest(meta.id), open));
    }
    return infos;
  }

  /**
   * Writes a snapshot's pre-images back and deletes the paths it saw as absent — guarded like
   * every restore, and saved first so it can be undone.
   */
  async restoreSnapshot(request: SnapshotScope & { paths?: string[] }): Promise<RestoreReport> {
    this.#assertOpen();
    assertScope(request);
    const meta = await this.#findSnapshot(request);
    await this.#sealTurn();
    return this.store.withLock(async () => {
      const manifest = await this.store.manifest(meta.id);
      const options: RestoreOptions = { created: 'delete', modePolicy: 'exact', ...(request.paths !== undefined ? { paths: request.paths } : {}) };
      return this.#applyPlanned(await this.#planFrom(meta.id, [manifest], options, true), options);
    }, { timeoutMs: this.#restoreLockTimeoutMs });
  }

  /** Removes a snapshot's state; its objects go at the next prune unless something else uses them. */
  async dropSnapshot(request: SnapshotScope): Promise<void> {
    assertScope(request);
    const open = this.#openSnapshots.get(snapshotKey(request));
    if (open !== undefined) {
      this.#openSnapshots.delete(snapshotKey(request));
      await open.writer.seal();
    }
    const metas = (await this.store.list()).filter((m) => m.kind === 'snapshot' && m.sessionId === request.sessionId && m.scopeId === request.scopeId);
    for (const meta of metas) await this.store.deleteCheckpoint(meta.id);
  }

  /**
   * Releases everything a session left in the store: its checkpoints, snapshots and call
   * baselines, then the objects nothing else references.
   */
  async drop(sessionId: string): Promise<{ removedCheckpoints: number }> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
    if (sessionId === this.sessionId) {
      await this.#sealTurn();
      for (const callId of this.#calls.keys()) await this.store.writeState(baselineStateName(sessionId, callId), null);
      this.#calls.clear();
    }
    for (const [key, open] of this.#openSnapshots) {
      if (open.scope.sessionId === sessionId) {
        this.#openSnapshots.delete(key);
        await open.writer.seal();
      }
    }
    const metas = (await this.store.list()).filter((m) => m.sessionId === sessionId);
    for (const meta of metas) await this.store.deleteCheckpoint(meta.id);
    await this.store.prune({ retain: Number.MAX_SAFE_INTEGER, graceMs: 0 });
    return { removedCheckpoints: metas.length };
  }

  async #takePicture(options: Pick<CallBeginOptions, 'signal' | 'onProgress'>, cache?: PictureCache): Promise<Picture> {
    await loadHasher();
    this.#pictureCache ??= await loadPictureCache(this.store, STAT_CACHE);
    const picture = await takePicture({
      store: this.store,
      projectRoot: this.projectRoot,
      coverage: this.#coverage,
      cache: cache ?? this.#pictureCache,
      exclude: [this.store.root],
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
    });
    this.#pictureCache = { records: picture.records, ...(this.#pictureCache.ignores !== undefined ? { ignores: this.#pictureCache.ignores } : {}) };
    await savePictureCache(this.store, STAT_CACHE, picture);
    return picture;
  }

  async #captureIntoSnapshot(scope: SnapshotScope, projectPath: string): Promise<void> {
    const snapshot = this.#openSnapshots.get(snapshotKey(scope));
    if (snapshot === undefined) return;
    const inFlight = snapshot.touched.get(projectPath);
    if (inFlight !== undefined) return inFlight;
    const capture = (async () => {
      const captured = await capturePath(this.#capture, projectPath);
      if (captured.gap !== undefined) await snapshot.writer.append({ op: 'gap', gap: captured.gap });
      await snapshot.writer.append({ op: 'before', path: projectPath, state: captured.state });
    })();
    snapshot.touched.set(projectPath, capture);
    await capture;
  }

  async #findSnapshot(scope: SnapshotScope): Promise<CheckpointMeta> {
    const open = this.#openSnapshots.get(snapshotKey(scope));
    if (open !== undefined) {
      this.#openSnapshots.delete(snapshotKey(scope));
      await Promise.allSettled(open.touched.values());
      await open.writer.seal();
    }
    const metas = (await this.store.list()).filter((m) => m.kind === 'snapshot' && m.sessionId === scope.sessionId && m.scopeId === scope.scopeId);
    const meta = metas.at(-1);
    if (meta === undefined) throw new CheckpointError('UNKNOWN_CHECKPOINT', `no snapshot for tool call ${scope.scopeId} in session ${scope.sessionId}`);
    return meta;
  }

  async #enforceSnapshotCap(sessionId: string): Promise<void> {
    const snapshots = await this.listSnapshots(sessionId);
    let total = snapshots.reduce((sum, s) => sum + s.bytes, 0);
    for (const snapshot of snapshots) {
      if (total <= this.#snapshotCapBytes) break;
      if (snapshot.open) continue;
      await this.store.deleteCheckpoint(snapshot.checkpointId);
      total -= snapshot.bytes;
    }
  }

  async #restoreLocked(id: CheckpointId, options: RestoreOptions): Promise<RestoreReport> {
    const checked = parseCheckpointId(id);
    return this.#applyPlanned(await this.#planFrom(checked, await this.#timelineFrom(checked), options, false), options);
  }

  async #applyPlanned({ plan, irreversible }: { plan: RestorePlan; irreversible: IrreversibleCall[] }, options: RestoreOptions): Promise<RestoreReport> {
    void options;
    const writing = plan.entries.filter((e) => e.action === 'restore' || e.action === 'recreate' || e.action === 'delete');
    const report: RestoreReport = {
      available: true,
      checkpointId: plan.checkpointId as CheckpointId,
      preRestoreId: undefined,
      restored: [],
      refused: plan.entries.filter((e) => e.action === 'refuse'),
      skipped: plan.entries.filter((e) => e.action === 'skip' || e.action === 'leave'),
      failed: [],
      irreversible,
      cleanupPending: [],
    };
    if (writing.length === 0) return report;

    // Save first: record what each write will overwrite, so this restore can itself be undone.
    const saver = await this.store.openCheckpoint({ kind: 'pre-restore', sessionId: this.sessionId, restoreOf: plan.checkpointId as CheckpointId });
    report.preRestoreId = saver.id;
    const toApply: PlanEntry[] = [];
    for (const entry of writing) {
      const saved = await capturePath(this.#capture, entry.path);
      if (saved.state.type === 'uncopied') {
        // One it cannot save is left alone: overwriting it would lose bytes with no way back.
        report.skipped.push({ ...entry, action: 'leave', reason: `cannot-save-first:${saved.state.reason}` });
        continue;
      }
      await saver.append({ op: 'before', path: entry.path, state: saved.state });
      toApply.push(entry);
    }
    const applied = await applyRestore(
      { fs: this.#fs, projectRoot: this.projectRoot, readObject: (object) => this.store.readObject(object) },
      toApply,
    );
    for (const entry of applied.restored) {
      await saver.append({ op: 'after', path: entry.path, after: targetFingerprint(entry.target, entry.action), ...(entry.mode !== undefined && entry.action !== 'delete' ? { afterMode: entry.mode } : {}) });
    }
    const unchanged = [...applied.refused, ...applied.failed.map((f) => toApply.find((e) => e.path === f.path))];
    for (const entry of unchanged) {
      if (entry?.expectedHash !== undefined) await saver.append({ op: 'after', path: entry.path, after: entry.expectedHash });
    }
    await saver.seal({ complete: applied.failed.length === 0 });
    report.restored = applied.restored;
    report.refused.push(...applied.refused);
    report.skipped.push(...applied.skipped);
    report.failed = applied.failed;
    report.cleanupPending = [...applied.cleanupPending, ...(await this.#strayTempFiles(writing, applied.cleanupPending))];
    return report;
  }

  /**
   * Staged or displaced files that an earlier, killed restore left beside the paths this one
   * touched. Their content is in the store (every restore saves first), so they are reported for
   * a person to remove, never deleted silently and never read as project files.
   */
  async #strayTempFiles(entries: PlanEntry[], known: string[]): Promise<string[]> {
    const folders = new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')));
    const seen = new Set(known);
    const strays: string[] = [];
    for (const folder of folders) {
      const names = await this.#fs.readdir(folder === '' ? this.projectRoot : `${this.projectRoot}/${folder}`).catch(() => [] as string[]);
      for (const name of names) {
        const rel = folder === '' ? name : `${folder}/${name}`;
        if ((name.startsWith('.turnback-stage-') || name.startsWith('.turnback-displaced-')) && !seen.has(rel)) strays.push(rel);
      }
    }
    return strays.sort();
  }

  async #plan(idInput: CheckpointId, options: RestoreOptions): Promise<{ plan: RestorePlan; irreversible: IrreversibleCall[] }> {
    const id = parseCheckpointId(idInput);
    return this.#planFrom(id, await this.#timelineFrom(id), options, false);
  }

  async #planFrom(
    id: CheckpointId,
    manifests: CheckpointManifest[],
    options: RestoreOptions,
    anyKind: boolean,
  ): Promise<{ plan: RestorePlan; irreversible: IrreversibleCall[] }> {
    const created = options.created ?? 'delete';
    const modePolicy = options.modePolicy ?? 'exact';
    if (created !== 'delete' && created !== 'keep') throw new CheckpointError('INVALID_ARGUMENT', `created must be 'delete' or 'keep'`);
    if (modePolicy !== 'exact' && modePolicy !== 'never-widen') throw new CheckpointError('INVALID_ARGUMENT', `modePolicy must be 'exact' or 'never-widen'`);
    const only = this.#pathFilter(options.paths);
    const { paths, irreversible } = foldTimeline(manifests, anyKind);
    await loadHasher();
    const selected = only === undefined ? paths : paths.filter((p) => only.has(p.path));
    const inputs: PlanInput[] = await mapLimit(selected, 32, async (p) => ({
      path: p.path,
      target: p.target,
      ...(p.lastAfter !== undefined ? { lastAfter: p.lastAfter } : {}),
      incomplete: p.incomplete,
      disk: await this.#diskStateOrOther(p.path),
    }));
    let entries = planRestore(inputs, { created, modePolicy });
    if (options.expect !== undefined) entries = holdToPreview(entries, options.expect);
    if (only !== undefined) {
      const covered = new Set(selected.map((p) => p.path));
      for (const path of only) {
        if (!covered.has(path)) entries.push({ path, action: 'skip', reason: 'not-changed-since', target: { type: 'absent' } });
      }
      entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    }
    return {
      plan: { checkpointId: id, workspace: this.projectRoot, createdAt: new Date().toISOString(), options: { created, modePolicy }, entries },
      irreversible,
    };
  }

  async #diskStateOrOther(projectPath: string): Promise<DiskState> {
    try {
      return await readDiskState(this.#fs, this.projectRoot, projectPath);
    } catch (error) {
      // A path whose folder became a symlink is planned as "in the way"; apply re-validates anyway.
      if (isCheckpointError(error, 'INVALID_PATH')) return { type: 'other', kind: 'unknown' };
      throw error;
    }
  }

  #pathFilter(paths: unknown): Set<string> | undefined {
    if (paths === undefined) return undefined;
    if (!Array.isArray(paths) || paths.length === 0) {
      throw new CheckpointError('INVALID_ARGUMENT', 'paths must be a non-empty list when given');
    }
    return new Set(paths.map((p) => toProjectPath(this.projectRoot, p)));
  }

  async #timelineFrom(id: CheckpointId): Promise<CheckpointManifest[]> {
    // Read the anchor directly: a corrupt or foreign manifest must fail loudly, not read as unknown.
    const anchor = await this.store.manifest(id);
    const later = (await this.store.list()).filter((m) => m.id > id && isTimelineKind(m.kind));
    return [anchor, ...(await Promise.all(later.map((m) => this.store.manifest(m.id))))];
  }

  async #captureInto(turn: OpenTurn, projectPath: string, callId: string | undefined): Promise<void> {
    const captured = await capturePath(this.#capture, projectPath);
    if (captured.gap !== undefined) {
      this.#recordGap(captured.gap);
      await turn.writer.append({ op: 'gap', gap: captured.gap });
    }
    await turn.writer.append({ op: 'before', path: projectPath, state: captured.state, ...(callId !== undefined ? { callId } : {}) });
  }

  #recordGap(gap: Gap): void {
    this.#gaps.push(gap);
  }

  async #ensureTurn(): Promise<OpenTurn> {
    return this.#turn ?? this.#openTurn(undefined);
  }

  async #openTurn(label: string | undefined): Promise<OpenTurn> {
    if (this.#turnOpening !== undefined) return this.#turnOpening;
    this.#turnOpening = (async () => {
      await loadHasher();
      const writer = await this.store.openCheckpoint({ kind: 'turn', sessionId: this.sessionId, ...(label !== undefined ? { label } : {}) });
      const turn: OpenTurn = { writer, touched: new Map() };
      this.#turn = turn;
      return turn;
    })();
    try {
      return await this.#turnOpening;
    } finally {
      this.#turnOpening = undefined;
    }
  }

  async #sealTurn(): Promise<void> {
    const turn = this.#turn;
    if (turn === undefined) return;
    this.#turn = undefined;
    await Promise.allSettled(turn.touched.values());
    await turn.writer.seal();
  }

  #assertOpen(): void {
    if (this.#closed) throw new CheckpointError('INVALID_ARGUMENT', 'this observer is closed');
  }
}

function targetFingerprint(target: PathState, action: PlanEntry['action']): Fingerprint {
  if (action === 'delete') return 'absent';
  if (target.type === 'file') return `file:${target.hash}`;
  if (target.type === 'symlink') return `symlink:${target.target}`;
  return 'absent';
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

const STAT_CACHE = 'stat-cache';
const SIDE_EFFECTS = new Set<string>(['none', 'filesystem', 'network', 'desktop_control']);

function assertCallId(callId: unknown): asserts callId is string {
  if (typeof callId !== 'string' || callId.length === 0 || callId.length > 512) {
    throw new CheckpointError('INVALID_ARGUMENT', 'callId must be a non-empty string of at most 512 characters');
  }
}

function assertScope(scope: unknown): asserts scope is SnapshotScope {
  const candidate = scope as Partial<SnapshotScope> | null;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.sessionId !== 'string' || candidate.sessionId.length === 0 || typeof candidate.scopeId !== 'string' || candidate.scopeId.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'a snapshot needs a non-empty sessionId and scopeId');
  }
}

function snapshotKey(scope: SnapshotScope): string {
  return `${scope.sessionId}\0${scope.scopeId}`;
}

function snapshotInfo(manifest: CheckpointManifest, open: boolean): SnapshotInfo {
  const bytes = manifest.entries.reduce((sum, e) => sum + (e.before.type === 'file' ? e.before.size : 0), 0);
  return {
    sessionId: manifest.sessionId ?? '',
    scopeId: manifest.scopeId ?? '',
    checkpointId: manifest.id,
    createdAt: manifest.createdAt,
    open,
    paths: manifest.entries.map((e) => e.path),
    bytes,
  };
}

/** Paths whose attribution a call cannot vouch for: under a folder either picture could not read. */
function incompletePaths(before: Pick<Picture, 'records' | 'unchecked'>, after: Pick<Picture, 'records' | 'unchecked' | 'gaps'>): string[] {
  const unreadable = [...before.unchecked, ...after.unchecked].filter((u) => u.reason === 'unreadable' || u.reason === 'unreadable-name');
  const result = new Set<string>();
  for (const folder of unreadable) {
    const prefix = folder.path === '.' ? '' : `${folder.path}/`;
    for (const path of before.records.keys()) if (path.startsWith(prefix) || path === folder.path) result.add(path);
  }
  for (const gap of after.gaps) {
    if (gap.path !== undefined && (gap.reason === 'vanished' || gap.reason === 'changed-during-capture')) result.add(gap.path);
  }
  return [...result].sort();
}

/** A manifest's entries as a change list; entries whose content ended where it began are dropped. */
function changesOf(manifest: CheckpointManifest): Change[] {
  const changes: Change[] = [];
  for (const entry of manifest.entries) {
    const before = fingerprintOf(entry.before);
    if (entry.after !== undefined && before !== undefined && before === entry.after) continue;
    if (entry.before.type === 'absent') changes.push({ path: entry.path, kind: 'created', before: entry.before });
    else if (entry.after === 'absent') changes.push({ path: entry.path, kind: 'deleted', before: entry.before });
    else changes.push({ path: entry.path, kind: 'changed', before: entry.before });
  }
  return changes;
}

/** Refuses every write the previewed plan did not show with the same disk state. */
function holdToPreview(entries: PlanEntry[], preview: RestorePlan): PlanEntry[] {
  if (typeof preview !== 'object' || preview === null || !Array.isArray(preview.entries)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'expect must be a plan returned by plan()');
  }
  const shown = new Map(preview.entries.map((e) => [e.path, e]));
  return entries.map((entry) => {
    if (entry.action !== 'restore' && entry.action !== 'recreate' && entry.action !== 'delete') return entry;
    const previewed = shown.get(entry.path);
    if (previewed !== undefined && previewed.action === entry.action && previewed.expectedHash === entry.expectedHash) return entry;
    return {
      ...entry,
      action: 'refuse',
      reason: 'changed-since-plan',
      ...(previewed?.expectedHash !== undefined ? { expectedHash: previewed.expectedHash } : {}),
      ...(entry.expectedHash !== undefined ? { foundHash: entry.expectedHash } : {}),
    };
  });
}
