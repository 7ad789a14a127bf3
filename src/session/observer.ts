import { AsyncLocalStorage } from 'node:async_hooks';
import { IgnoreStack, isCredentialPath, resolveCoverage, type CoverageOptions, type ResolvedCoverage } from '../capture/coverage.js';
import { diffPictures, type Change } from '../capture/diff.js';
import { ScanMemo } from '../capture/scan.js';
import { ParallelLstat } from '../fs/parallel-lstat.js';
import { loadPictureCache, pictureDelta, prunePictureBases, savePictureCache, takePicture, writePictureBase, type Picture, type PictureBase, type PictureCache, type PictureRecord, type PersistedRecords, type TakePictureOptions } from '../capture/picture.js';
import { CheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { fingerprintOf, isStatFingerprint, type CheckpointManifest, type CheckpointMeta, type Fingerprint, type Gap, type PathState, type SideEffect } from '../core/model.js';
import { diskFingerprint, readDiskState, readPostWriteState, readVersionSync, type DiskState } from '../fs/disk-state.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import { toProjectPath } from '../fs/paths.js';
import { applyRestore, type GuardSight, type SwapDecision } from '../restore/apply.js';
import type { ModePolicy } from '../restore/modes.js';
import { planRestore, type PlanEntry, type PlanInput, type RestorePlan } from '../restore/plan.js';
import type { CheckpointStore, CheckpointWriter } from '../store/store.js';
import { baselineGeneration, baselineStateName, loadBaselinePicture, parseBaseline, toBaseline, type CallBaseline } from './baseline.js';
import { capturePath, type PathCaptureContext } from './capture-path.js';
import { readDiscards } from './discards.js';
import { DISCARDS_STATE, discardHolding, foldTimeline, isTimelineKind, recordDiscard, withoutDiscarded, type Discard, type IrreversibleCall } from './timeline.js';
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
  /**
   * fsync every restored file before it is published and its folder after (power-loss
   * durability). Off by default: like `git checkout`, a restore survives a process crash but not
   * necessarily a power loss right after it (see the durability table in CHECKPOINT-DESIGN.md).
   * @default false
   */
  durable?: boolean;
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
  /**
   * Lists one folder during pictures. For tests only: it lets a test make a folder unreadable
   * (tests run as root, where `chmod 000` hides nothing). @default `fs.readdirSync`
   */
  pictureReadDir?: TakePictureOptions['readDir'];
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
  /** Paths whose `after` record is in the journal: a later one only supersedes it. */
  afterWritten: Set<string>;
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
  /** The picture base the stat cache and call baselines are persisted against. */
  #pictureBase: PictureBase | undefined;
  /** The records the persisted stat cache describes, to skip saving an unchanged picture. */
  #savedRecords: ReadonlyMap<string, PictureRecord> | undefined;
  /** The newest picture whose stat cache is not saved yet (see {@link CACHE_SAVE_DELAY_MS}). */
  #unsavedPicture: Picture | undefined;
  #cacheSaveTimer: NodeJS.Timeout | undefined;
  /** Stat cache saves, one after another. */
  #cacheSaving: Promise<void> = Promise.resolve();
  /** The last delta computed, reused while the picture map and the base are the same objects. */
  #lastDelta: { records: ReadonlyMap<string, PictureRecord>; base: PictureBase | undefined; delta: PersistedRecords } | undefined;
  readonly #ignores = new IgnoreStack();
  readonly #scanMemo = new ScanMemo();
  /** The helper thread of big repeat pictures; stopped by {@link CheckpointObserver.close}. */
  readonly #parallelLstat = new ParallelLstat();
  readonly #readDir: TakePictureOptions['readDir'];
  readonly #calls = new Map<string, { baseline: CallBaseline; picture: Pick<Picture, 'records' | 'unchecked' | 'partial' | 'gaps' | 'summary' | 'ignoreEpoch'>; startedAt: string }>();
  #toolContext: AsyncLocalStorage<SnapshotScope> | undefined;
  /** Files whose post-write record is still a stat identity, with the checkpoints to update. */
  readonly #unhashed = new Map<string, { statId: Fingerprint; callId?: string; writers: CheckpointWriter[] }>();
  #hashing: Promise<void> = Promise.resolve();
  readonly #projectPaths = new Map<string, string>();
  /**
   * Files #hashPending just read, by path: a plan right after (a restore seals, then plans) takes
   * one whose stat identity still matches instead of reading and hashing it again. Each entry is
   * used once; the restore guard reads the disk again before any write.
   */
  readonly #recentlyHashed = new Map<string, Extract<DiskState, { type: 'file' }> & { statId: Fingerprint }>();
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
    this.#readDir = options.pictureReadDir;
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
    const projectPath = this.#projectPathOf(path);
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
    const projectPath = this.#projectPathOf(path);
    const turn = this.#turn;
    const captured = turn?.touched.get(projectPath);
    if (turn === undefined || captured === undefined) {
      this.#recordGap({ path: projectPath, reason: 'no-pre-image', detail: 'afterWrite without beforeWrite in this turn: nothing to restore' });
      if (turn !== undefined) await turn.writer.append({ op: 'gap', gap: this.#gaps.at(-1) as Gap });
      return;
    }
    await captured;
    // One lstat: a file's content is hashed later (#hashPending), while this identity still holds.
    const post = await readPostWriteState(this.#fs, this.projectRoot, projectPath);
    const scope = this.#toolContext?.getStore();
    const snapshot = scope === undefined ? undefined : this.#openSnapshots.get(snapshotKey(scope));
    const writers = snapshot !== undefined && snapshot.touched.has(projectPath) ? [turn.writer, snapshot.writer] : [turn.writer];
    const callId = op?.callId;
    if (isStatFingerprint(post.fingerprint)) {
      this.#unhashed.set(projectPath, { statId: post.fingerprint, writers, ...(callId !== undefined ? { callId } : {}) });
    } else {
      this.#unhashed.delete(projectPath);
    }
    const record = {
      op: 'after' as const,
      path: projectPath,
      after: post.fingerprint,
      ...(post.mode !== undefined ? { afterMode: post.mode } : {}),
    };
    // A repeat touch's record only supersedes the last one: written within milliseconds (or
    // before any other record), not with a system call of its own.
    const turnRecord = callId !== undefined ? { ...record, callId } : record;
    if (turn.afterWritten.has(projectPath)) await turn.writer.appendSoon(turnRecord);
    else {
      await turn.writer.append(turnRecord);
      turn.afterWritten.add(projectPath);
    }
    if (writers.length > 1) await (writers[1] as CheckpointWriter).append(record);
    if (this.#unhashed.size >= MAX_UNHASHED) await this.#hashPending();
  }

  /**
   * The restore plan to checkpoint `id`, without touching any file: for every path changed since
   * `id`, whether it would be skipped, refused, restored, recreated, deleted or left, and why.
   *
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT`, `INVALID_PATH`, `OUTSIDE_ROOT`.
   */
  async plan(id: CheckpointId, options: RestoreOptions = {}): Promise<RestorePlan> {
    this.#assertOpen();
    await this.#hashPending();
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
    await this.#saveCacheNow();
    await this.#parallelLstat.close();
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
    // The picture must not read a half-recorded write as a shell change: settle the records first.
    await this.#hashPending();
    const picture = await this.#takePicture(options);
    // Persisted relative to the current picture base: only what differs from it is written.
    const baseline = toBaseline(
      picture,
      {
        sessionId: this.sessionId,
        callId,
        checkpointId: turn.writer.id,
        pid: process.pid,
        ...(options.command !== undefined ? { command: options.command } : {}),
      },
      this.#pictureBase,
      this.#deltaOf(picture.records),
    );
    // Not fsynced, like the captures it refers to: it survives a process crash; after a power loss
    // a missing baseline makes callEnd report the call as unknown, never attribute it wrongly.
    // Registered first: a stat cache save that runs meanwhile must see the base this baseline names.
    this.#calls.set(callId, { baseline, picture, startedAt: baseline.startedAt });
    try {
      await this.store.writeState(baselineStateName(this.sessionId, callId), baseline, { durable: false });
    } catch (error) {
      this.#calls.delete(callId);
      throw error;
    }
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
      const view = await loadBaselinePicture(this.store, baseline, this.#pictureBase);
      if (view === undefined) throw new CheckpointError('INVALID_ARGUMENT', `the picture taken before call ${callId} can no longer be read`);
      call = { baseline, picture: { ...view, summary: '' }, startedAt: baseline.startedAt };
    }
    const after = await this.#takePicture(
      { ...(options.signal !== undefined ? { signal: options.signal } : {}) },
      // The baseline's own records: unchanged files come back as the same objects, so the diff
      // below compares identities.
      this.#cacheOf(call.picture.records, call.picture.ignoreEpoch),
    );
    // The very same map means every record is the baseline's own: nothing to compare.
    const changes = after.records === call.picture.records ? [] : diffPictures(call.picture, after);
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
    const changedPaths = new Set(changes.map((c) => c.path));
    for (const path of incomplete) {
      // The pre-call state puts the path on the timeline, so a restore lists it and refuses it
      // (incomplete attribution) instead of silently leaving it out of the plan.
      const before = call.picture.records.get(path)?.state;
      if (before !== undefined && !changedPaths.has(path)) {
        await writer.append({ op: 'before', path, state: before, callId });
        turn?.touched.set(path, Promise.resolve());
      }
      await writer.append({ op: 'incomplete', path, callId });
    }
    const gaps = [...after.gaps];
    for (const gap of gaps) await writer.append({ op: 'gap', gap });
    await writer.append({
      op: 'call',
      call: { callId, sideEffect, startedAt: call.startedAt, endedAt: new Date().toISOString(), ...(incomplete.length > 0 ? { incompletePaths: incomplete } : {}) },
    });
    if (turn === undefined) await writer.seal({ complete: !after.partial && !call.picture.partial });
    else if (after.partial || call.picture.partial) await writer.append({ op: 'meta', complete: false });
    this.#calls.delete(callId);
    await this.store.deleteState(stateName);
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
    await this.#hashPending();
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
      if (await this.#closeSnapshot(scope)) await this.#enforceSnapshotCap(scope.sessionId);
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
      for (const callId of this.#calls.keys()) await this.store.deleteState(baselineStateName(sessionId, callId));
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
    // With no grace period, the objects this process's unsaved stat cache names must be on record.
    await this.#saveCacheNow();
    await this.store.prune({ retain: Number.MAX_SAFE_INTEGER, graceMs: 0 });
    return { removedCheckpoints: metas.length };
  }

  async #takePicture(options: Pick<CallBeginOptions, 'signal' | 'onProgress'>, cache?: PictureCache): Promise<Picture> {
    await loadHasher();
    if (this.#pictureCache === undefined) {
      const loaded = await loadPictureCache(this.store, STAT_CACHE);
      this.#pictureCache = this.#cacheOf(loaded.records, undefined);
      this.#pictureBase = loaded.base;
      this.#savedRecords = loaded.records;
    }
    const picture = await takePicture({
      store: this.store,
      projectRoot: this.projectRoot,
      coverage: this.#coverage,
      cache: cache ?? this.#pictureCache,
      exclude: [this.store.root],
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
      ...(this.#readDir !== undefined ? { readDir: this.#readDir } : {}),
    });
    this.#pictureCache = this.#cacheOf(picture.records, picture.ignoreEpoch);
    this.#unsavedPicture = picture;
    // A new base is written before the picture is used, so the baseline built from it is a small
    // delta; a cache head alone can wait.
    if (picture.records !== this.#savedRecords && this.#baseRewriteDue(this.#deltaOf(picture.records))) await this.#saveCacheNow();
    else this.#saveCacheSoon();
    return picture;
  }

  /**
   * Saves the stat cache of the newest picture within {@link CACHE_SAVE_DELAY_MS} (or at turn end
   * or close), not before returning it: a call pair takes two pictures back to back, and a new
   * process only needs a recent cache, not the latest one (files changed since are re-read).
   */
  #saveCacheSoon(): void {
    if (this.#cacheSaveTimer !== undefined) return;
    this.#cacheSaveTimer = setTimeout(() => void this.#saveCacheNow(), CACHE_SAVE_DELAY_MS);
    this.#cacheSaveTimer.unref();
  }

  /**
   * Saves the newest unsaved stat cache now. Never rejects: the cache only saves re-reading files,
   * so a save that fails is retried by the next one (at the latest on close) and otherwise costs a
   * slower first picture in the next process, never a wrong one.
   */
  #saveCacheNow(): Promise<void> {
    if (this.#cacheSaveTimer !== undefined) clearTimeout(this.#cacheSaveTimer);
    this.#cacheSaveTimer = undefined;
    this.#cacheSaving = this.#cacheSaving.then(async () => {
      const picture = this.#unsavedPicture;
      this.#unsavedPicture = undefined;
      if (picture === undefined) return;
      try {
        await this.#persistPictureCache(picture);
      } catch {
        this.#unsavedPicture ??= picture;
      }
    });
    return this.#cacheSaving;
  }

  /** A picture cache over `records` with this observer's in-memory helpers. */
  #cacheOf(records: ReadonlyMap<string, PictureRecord>, ignoreEpoch: number | undefined): PictureCache {
    return { records, ignores: this.#ignores, memo: this.#scanMemo, parallel: this.#parallelLstat, ...(ignoreEpoch !== undefined ? { ignoreEpoch } : {}) };
  }

  /**
   * Persists the stat cache after a picture, costing what changed rather than what exists: an
   * unchanged picture writes nothing; a few changed files rewrite only the small cache head (a
   * reference to the current base plus the records that differ from it); once the difference
   * grows past an eighth of the base (at least 256 files), a new base is written in chunks and
   * bases nothing refers to any more are removed.
   */
  async #persistPictureCache(picture: Picture): Promise<void> {
    const saved = this.#savedRecords;
    if (saved === picture.records) return;
    if (saved !== undefined && saved.size === picture.records.size) {
      let same = true;
      for (const [path, record] of picture.records) {
        if (saved.get(path) !== record) {
          same = false;
          break;
        }
      }
      if (same) return;
    }
    const base = this.#pictureBase;
    const delta = this.#deltaOf(picture.records);
    if (this.#baseRewriteDue(delta)) {
      this.#pictureBase = await writePictureBase(this.store, picture.records);
      await savePictureCache(this.store, STAT_CACHE, picture, this.#pictureBase, this.#deltaOf(picture.records));
      await this.#pruneBases();
    } else {
      await savePictureCache(this.store, STAT_CACHE, picture, base, delta);
    }
    this.#savedRecords = picture.records;
  }

  /** True once `delta` (against the current base) has grown past an eighth of it, and 256 files. */
  #baseRewriteDue(delta: PersistedRecords): boolean {
    let drift = delta.removed.length;
    for (const record of delta.records) if (record.type === 'file' && record.state.type === 'file') drift++;
    return drift > Math.max(BASE_REWRITE_MIN, (this.#pictureBase?.ref.count ?? 0) / 8);
  }

  /** What `records` holds beyond the current base; one pass per picture map (begin and save share it). */
  #deltaOf(records: ReadonlyMap<string, PictureRecord>): PersistedRecords {
    const last = this.#lastDelta;
    if (last !== undefined && last.records === records && last.base === this.#pictureBase) return last.delta;
    const delta = pictureDelta(records, this.#pictureBase);
    this.#lastDelta = { records, base: this.#pictureBase, delta };
    return delta;
  }

  /** Removes picture bases that neither the cache nor any call baseline (here or on disk) names. */
  async #pruneBases(): Promise<void> {
    const keep = new Set<string>();
    if (this.#pictureBase !== undefined) keep.add(this.#pictureBase.ref.generation);
    for (const call of this.#calls.values()) {
      const generation = baselineGeneration(call.baseline);
      if (generation !== undefined) keep.add(generation);
    }
    try {
      const head = (await this.store.readState(STAT_CACHE).catch(() => undefined)) as { base?: { generation?: unknown } } | null | undefined;
      if (typeof head?.base?.generation === 'string') keep.add(head.base.generation);
      for (const name of await this.store.listState('call-')) {
        const baseline = parseBaseline(await this.store.readState(name).catch(() => undefined));
        const generation = baseline === undefined ? undefined : baselineGeneration(baseline);
        if (generation !== undefined) keep.add(generation);
      }
    } catch {
      return; // Unsure what is referenced: keep everything.
    }
    await prunePictureBases(this.store, keep, BASE_GRACE_MS);
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

  /**
   * Stops auto-capture into the scope's open snapshot and seals it once its captures and
   * post-write hashes have settled. False when no snapshot was open.
   */
  async #closeSnapshot(scope: SnapshotScope): Promise<boolean> {
    const open = this.#openSnapshots.get(snapshotKey(scope));
    if (open === undefined) return false;
    this.#openSnapshots.delete(snapshotKey(scope));
    await Promise.allSettled(open.touched.values());
    await this.#hashPending();
    await open.writer.seal();
    return true;
  }

  async #findSnapshot(scope: SnapshotScope): Promise<CheckpointMeta> {
    await this.#closeSnapshot(scope);
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
    const discards = await this.#discards();
    const report = await this.#applyPlanned(await this.#planFrom(checked, await this.#timelineFrom(checked, discards), options, false), options);
    if (report.preRestoreId !== undefined && report.restored.length > 0) {
      // Nothing refused, failed or left, no path filter: the tree is back at `checked` for every
      // path attributed since, so the whole range leaves later plans. Otherwise only what was
      // written leaves, and a retry still finds the rest with its guard.
      const full = options.paths === undefined && report.refused.length === 0 && report.failed.length === 0 && report.skipped.every((e) => e.action === 'skip');
      const restored = report.restored.map((e) => e.path);
      const next = recordDiscard(discards, checked, report.preRestoreId, restored, full);
      // Ranges older than every remaining checkpoint can no longer matter.
      try {
        const oldest = (await this.store.list())[0]?.id;
        await this.store.writeState(DISCARDS_STATE, { version: 1, discards: next.filter((d) => oldest === undefined || d.preRestore >= oldest) });
      } catch (error) {
        // The files are restored; without the record later plans fold the range as before
        // discards existed (still guarded). Reported, not thrown, so the receipt is not lost.
        this.#recordGap({ reason: 'discard-not-recorded', detail: `restore to ${checked} done, but its discard could not be recorded: ${(error as Error).message}` });
      }
    }
    return report;
  }

  /** The ranges earlier restores discarded (see {@link withoutDiscarded}). */
  async #discards(): Promise<Discard[]> {
    return readDiscards(this.store);
  }

  async #applyPlanned({ plan, irreversible }: { plan: RestorePlan; irreversible: IrreversibleCall[] }, options: RestoreOptions): Promise<RestoreReport> {
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
    if (writing.length === 0) {
      // Nothing to write, but a killed earlier restore may have left temp files beside these paths.
      report.cleanupPending = await this.#strayTempFiles(plan.entries, []);
      return report;
    }

    // Save first: record what each write will overwrite, so this restore can itself be undone.
    // The save happens inside the apply, from what the guard just read (see #saveFirst).
    const saver = await this.store.openCheckpoint({ kind: 'pre-restore', sessionId: this.sessionId, restoreOf: plan.checkpointId as CheckpointId });
    report.preRestoreId = saver.id;
    const toApply: PlanEntry[] = [];
    for (const entry of writing) {
      if (entry.expectedHash?.startsWith('file:') === true && isCredentialPath(entry.path)) {
        // Credential files are never copied, so one cannot be saved first: it is left alone.
        report.skipped.push({ ...entry, action: 'leave', reason: 'cannot-save-first:credential' });
        continue;
      }
      toApply.push(entry);
    }
    const saved = new Set<string>();
    const applied = await applyRestore(
      {
        fs: this.#fs,
        projectRoot: this.projectRoot,
        readObject: (object) => this.store.readObject(object),
        beforeSwap: (entry, sight) => this.#saveFirst(saver, saved, entry, sight),
      },
      toApply,
      options.durable === true ? { durable: true } : {},
    );
    await saver.appendMany(
      applied.restored.map((entry) => ({
        op: 'after' as const,
        path: entry.path,
        after: targetFingerprint(entry.target, entry.action),
        ...(entry.mode !== undefined && entry.action !== 'delete' ? { afterMode: entry.mode } : {}),
      })),
    );
    // Saved but not written (rolled back): their record says "unchanged", so the pre-restore
    // checkpoint never claims a change that did not happen.
    for (const failure of applied.failed) {
      const entry = toApply.find((e) => e.path === failure.path);
      if (entry?.expectedHash !== undefined && saved.has(entry.path)) await saver.append({ op: 'after', path: entry.path, after: entry.expectedHash });
    }
    await saver.seal({ complete: applied.failed.length === 0 });
    report.restored = applied.restored;
    report.refused.push(...applied.refused);
    report.skipped.push(...applied.skipped);
    report.failed = applied.failed;
    report.cleanupPending = [...applied.cleanupPending, ...(await this.#strayTempFiles(plan.entries, applied.cleanupPending))];
    return report;
  }

  /**
   * The pre-restore save of one entry, called by the apply between its guard and its swap with
   * what the guard read, so a small file is read once for both. An absent path or a symlink is
   * fully described by what was seen; a larger file is captured as by `beforeWrite`, and refused
   * if it no longer matches. The record is appended before the swap, so a crash after the swap
   * still finds the original in the pre-restore checkpoint.
   */
  async #saveFirst(saver: CheckpointWriter, saved: Set<string>, entry: PlanEntry, sight: GuardSight): Promise<SwapDecision> {
    let state: PathState;
    const seen = sight.state;
    if (seen.type === 'absent') {
      state = { type: 'absent' };
    } else if (seen.type === 'symlink') {
      state = { type: 'symlink', target: seen.target };
    } else if (seen.type === 'file' && sight.bytes !== undefined && sight.bytes.length <= this.#capture.maxFileBytes) {
      try {
        // Raw: the save sits between a guard and its swap, where every microsecond widens the window.
        const ref = await this.store.putBytes(sight.bytes, { compress: false });
        state = { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: seen.mode };
      } catch (error) {
        const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
        return { leave: code === 'ENOSPC' || code === 'EDQUOT' ? 'cannot-save-first:store-full' : 'cannot-save-first:unreadable' };
      }
    } else {
      const captured = await capturePath(this.#capture, entry.path);
      if (captured.state.type === 'uncopied') return { leave: `cannot-save-first:${captured.state.reason}` };
      state = captured.state;
      const found = fingerprintOf(state);
      if (found !== entry.expectedHash) return { refuse: found ?? 'unknown' };
    }
    await saver.append({ op: 'before', path: entry.path, state });
    saved.add(entry.path);
    return 'go';
  }

  /**
   * Staged or displaced files that an earlier, killed restore left beside the paths this one
   * planned (written or not). Their content is in the store (every restore saves first), so they are reported for
   * a person to remove, never deleted silently and never read as project files.
   */
  async #strayTempFiles(entries: PlanEntry[], known: string[]): Promise<string[]> {
    const folders = new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')));
    const seen = new Set(known);
    const strays: string[] = [];
    const sync = this.#fs.sync;
    for (const folder of folders) {
      const abs = folder === '' ? this.projectRoot : `${this.projectRoot}/${folder}`;
      // One readdir per touched folder; synchronous when available (a folder listing of a
      // project folder is small, and a restore of many files touches many folders).
      let names: string[];
      try {
        names = sync !== undefined ? sync.readdirSync(abs) : await this.#fs.readdir(abs);
      } catch {
        names = [];
      }
      for (const name of names) {
        const rel = folder === '' ? name : `${folder}/${name}`;
        if ((name.startsWith('.turnback-stage-') || name.startsWith('.turnback-displaced-')) && !seen.has(rel)) strays.push(rel);
      }
    }
    return strays.sort();
  }

  async #plan(idInput: CheckpointId, options: RestoreOptions): Promise<{ plan: RestorePlan; irreversible: IrreversibleCall[] }> {
    const id = parseCheckpointId(idInput);
    return this.#planFrom(id, await this.#timelineFrom(id, await this.#discards()), options, false);
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
      // A file hashed moments ago (a turn's seal) and still the very same version costs one lstat.
      const recent = this.#recentlyHashed.get(projectPath);
      if (recent !== undefined) {
        this.#recentlyHashed.delete(projectPath);
        const now = await readPostWriteState(this.#fs, this.projectRoot, projectPath);
        if (now.fingerprint === recent.statId) return recent;
      }
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

  async #timelineFrom(id: CheckpointId, discards: readonly Discard[]): Promise<CheckpointManifest[]> {
    // Read the anchor directly: a corrupt or foreign manifest must fail loudly, not read as unknown.
    const anchor = await this.store.manifest(id);
    const holding = discardHolding(id, discards);
    if (holding !== undefined) {
      throw new CheckpointError(
        'CONFLICT',
        `checkpoint ${id} was discarded when the project was restored to ${holding.from}; restore ${holding.preRestore} first (redo) to get back to it`,
        { expected: holding.preRestore },
      );
    }
    const later = (await this.store.list()).filter((m) => m.id > id && isTimelineKind(m.kind));
    return withoutDiscarded(id, [anchor, ...(await Promise.all(later.map((m) => this.store.manifest(m.id))))], discards);
  }

  async #captureInto(turn: OpenTurn, projectPath: string, callId: string | undefined): Promise<void> {
    const captured = await capturePath(this.#capture, projectPath);
    if (captured.gap !== undefined) {
      this.#recordGap(captured.gap);
      await turn.writer.append({ op: 'gap', gap: captured.gap });
    }
    await turn.writer.append({ op: 'before', path: projectPath, state: captured.state, ...(callId !== undefined ? { callId } : {}) });
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
    if (this.#projectPaths.size >= 4096) this.#projectPaths.clear();
    this.#projectPaths.set(input, projectPath);
    return projectPath;
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
      const turn: OpenTurn = { writer, touched: new Map(), afterWritten: new Set() };
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
    // Content fingerprints, not identities, go into a sealed manifest: an identity stops matching
    // as soon as the same content is written back (a redo), and the guard would refuse it.
    await this.#hashPending();
    await turn.writer.seal();
    await this.#saveCacheNow();
  }

  /**
   * Replaces the stat identities `afterWrite` recorded with content fingerprints: each file still
   * holding the version its write left is hashed, and its `after` record appended again (the last
   * one counts). A file changed since keeps its identity, so the restore guard refuses it, as it
   * would refuse any change made outside the session. Runs before anything reads the records back
   * (plan, turn changes, pictures, seals); serialised, so each version is hashed once.
   */
  async #hashPending(): Promise<void> {
    const run = async (): Promise<void> => {
      for (const [path, entry] of [...this.#unhashed]) {
        let disk: DiskState | undefined;
        try {
          const version = readVersionSync(this.#fs, this.projectRoot, path, entry.statId);
          disk = version === 'changed' ? undefined : version === 'unknown' ? await readDiskState(this.#fs, this.projectRoot, path) : version;
        } catch {
          disk = undefined; // unreadable now: the identity stays, and the guard refuses the path
        }
        // Checked right before the synchronous appends: a newer afterWrite replaced the entry.
        if (this.#unhashed.get(path) !== entry) continue;
        this.#unhashed.delete(path);
        if (disk?.type !== 'file' || disk.statId !== entry.statId) continue;
        if (this.#recentlyHashed.size < MAX_UNHASHED * 4) this.#recentlyHashed.set(path, { ...disk, statId: entry.statId });
        const record = { op: 'after' as const, path, after: diskFingerprint(disk), afterMode: disk.mode };
        await Promise.all(
          entry.writers.map((writer, index) =>
            // A writer sealed meanwhile keeps the identity; nothing is lost but the shortcut.
            writer.append(index === 0 && entry.callId !== undefined ? { ...record, callId: entry.callId } : record).catch(() => undefined),
          ),
        );
      }
    };
    const next = this.#hashing.then(run);
    this.#hashing = next.catch(() => undefined);
    return next;
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
  let lastYield = performance.now();
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      if (performance.now() - lastYield > 10) {
        // Small files are read synchronously: give the event loop a turn every 10 ms of them.
        lastYield = performance.now();
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Other workers ran meanwhile: the queue may be empty now.
        if (!(next < items.length)) break;
      }
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

const STAT_CACHE = 'stat-cache';
/** Past this many unhashed post-write records, afterWrite hashes them before returning. */
const MAX_UNHASHED = 2048;
/** A new picture base is written once this many files (or an eighth of the base) differ from it. */
const BASE_REWRITE_MIN = 256;
/**
 * Longest a picture's stat cache waits to be saved. Saving it cost 2–4 ms a picture, a tenth of
 * a call pair; batched, a busy session saves it at most five times a second.
 */
const CACHE_SAVE_DELAY_MS = 200;
/** Bases younger than this are never removed: another process may be about to name one. */
const BASE_GRACE_MS = 10 * 60 * 1000;
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
