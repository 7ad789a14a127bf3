import { capturePath, type PathCaptureContext } from '../capture/capture-path.js';
import { isCredentialPath } from '../capture/coverage.js';
import { mapLimit } from '../core/pool.js';
import { CheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { fingerprintOf, type CheckpointManifest, type Fingerprint, type PathState } from '../core/model.js';
import type { Change } from '../capture/diff.js';
import { readDiskState, type DiskState } from '../fs/disk-state.js';
import { toProjectPath, type AncestorMemo } from '../fs/paths.js';
import { removeEmptiedFolders } from '../restore/emptied-folders.js';
import { applyRestore, type GuardSight, type SwapDecision } from '../restore/apply.js';
import { planRestore, type PlanEntry, type PlanInput, type RestorePlan } from '../restore/plan.js';
import type { CheckpointStore, CheckpointWriter } from '../store/store.js';
import { readDiscards } from './discards.js';
import { applyingRecord, recoverInterruptedRestoresLocked, type RecoveredRestore } from './interrupted-restore.js';
import type { PostWriteHasher } from './post-write.js';
import type { RestoreOptions, RestoreReport } from './restore-types.js';
import { DISCARDS_STATE, discardHolding, foldTimeline, isTimelineKind, recordDiscard, withoutDiscarded, type Discard, type IrreversibleCall } from './timeline.js';

interface Planned {
  plan: RestorePlan;
  irreversible: IrreversibleCall[];
}

/**
 * State documents (`made-folders-<save id>`) naming the folders a restore made, so the restore of
 * its save (a redo) removes them once emptied without asking the clock which came first.
 */
export const MADE_FOLDERS_PREFIX = 'made-folders-';

/** Disk states read for a plan at once (small files are hashed synchronously). */
const PLAN_READS_IN_FLIGHT = 32;
/** The event loop gets a turn at least this often (ms) while a plan reads the disk. */
const YIELD_EVERY_MS = 10;

/**
 * Restore orchestration: folds the timeline from a checkpoint (minus what earlier restores
 * discarded), plans against the disk, and applies the plan through the one engine, saving what
 * each write overwrites into a `pre-restore` checkpoint first so the restore can be undone.
 */
export class Restorer {
  constructor(
    private readonly capture: PathCaptureContext,
    private readonly sessionId: string,
    private readonly hasher: PostWriteHasher,
    /** Reports a gap the caller keeps (a discard that could not be recorded). */
    private readonly recordGap: (gap: { reason: 'discard-not-recorded'; detail: string }) => void,
  ) {}

  private get store(): CheckpointStore {
    return this.capture.store;
  }

  private get projectRoot(): string {
    return this.capture.projectRoot;
  }

  /** The plan to checkpoint `id` over the timeline from it. */
  async plan(idInput: CheckpointId, options: RestoreOptions): Promise<Planned> {
    const id = parseCheckpointId(idInput);
    return this.#planFrom(id, await this.#timelineFrom(id, await readDiscards(this.store)), options, false);
  }

  /**
   * Rolls back every restore a dead process left half done and removes its stage and displaced
   * files (see interrupted-restore.ts). The caller holds the store lock.
   */
  recoverInterrupted(): Promise<RecoveredRestore[]> {
    return recoverInterruptedRestoresLocked(this.store, this.capture.fs);
  }

  /** Restores to `id`; the caller holds the store lock. */
  async restoreLocked(id: CheckpointId, options: RestoreOptions): Promise<RestoreReport> {
    const checked = parseCheckpointId(id);
    const discards = await readDiscards(this.store);
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
        this.recordGap({ reason: 'discard-not-recorded', detail: `restore to ${checked} done, but its discard could not be recorded: ${(error as Error).message}` });
      }
    }
    return report;
  }

  /** Restores a tool call's snapshots, oldest first, folded (each path to its first pre-image); the caller holds the store lock. */
  async restoreSnapshotLocked(ids: readonly CheckpointId[], paths: string[] | undefined): Promise<RestoreReport> {
    const first = ids[0];
    if (first === undefined) throw new CheckpointError('INVALID_ARGUMENT', 'no snapshot to restore');
    const manifests = await Promise.all(ids.map((id) => this.store.manifest(id)));
    const options: RestoreOptions = { created: 'delete', modePolicy: 'exact', ...(paths !== undefined ? { paths } : {}) };
    return this.#applyPlanned(await this.#planFrom(first, manifests, options, true), options);
  }

  /**
   * Restores a savepoint (see savepoints.ts) whose stored copies the caller read and checked
   * (`verified`, by object key): every file it names is
   * overwritten or recreated (`force`: a savepoint records no later change to guard against),
   * modes by `never-widen`, files created since are kept, and what is overwritten is saved first.
   * A read-only preflight comes first: when any path cannot be written (a folder or a special
   * file in the way, an unreadable destination, a missing stored copy) nothing is written.
   * The caller holds the store lock.
   *
   * @throws CheckpointError `CONFLICT` naming the paths the preflight found blocked.
   */
  async restoreSavepointLocked(manifest: CheckpointManifest, verified: ReadonlyMap<string, Buffer>, signal?: AbortSignal): Promise<RestoreReport> {
    const id = manifest.id;
    const paths = manifest.entries.map((entry) => entry.path);
    const options: RestoreOptions = {
      created: 'keep',
      modePolicy: 'never-widen',
      saveLabel: `before restore of savepoint ${id}`,
      ...(paths.length > 0 ? { force: paths } : {}),
      ...(signal !== undefined ? { signal } : {}),
    };
    const planned = await this.#planFrom(id, [manifest], options, true);
    const blocked = planned.plan.entries.filter((entry) => entry.action === 'refuse' || entry.action === 'leave');
    if (blocked.length > 0) {
      const shown = blocked.slice(0, 20).map((entry) => `${entry.path} (${entry.reason ?? entry.action})`);
      throw new CheckpointError('CONFLICT', `the savepoint cannot be restored, nothing was written: ${shown.join(', ')}${blocked.length > shown.length ? ` and ${blocked.length - shown.length} more` : ''}`, {
        path: (blocked[0] as PlanEntry).path,
      });
    }
    signal?.throwIfAborted();
    // The stored copies were read and checked against their SHA-256 by the caller: written from there.
    return this.#applyPlanned(planned, options, async (object) => verified.get(object) ?? this.store.readObject(object));
  }

  /**
   * Restores one call's own pre-call states (`changes`, as `callEnd` attributed them), guarded
   * by the post-call states: a path changed again since is refused, a path the call created is
   * deleted, and what is overwritten is saved first (`restoreOf` is `turn`, the call's
   * checkpoint). The caller holds the store lock.
   */
  async restoreCallLocked(turn: CheckpointId, changes: readonly Change[], signal?: AbortSignal): Promise<RestoreReport> {
    const absent: PathState = { type: 'absent' };
    const entries = changes.map((change) => {
      const after = fingerprintOf(change.after ?? absent);
      return { path: change.path, before: change.before ?? absent, ...(after !== undefined ? { after } : {}) };
    });
    const call: CheckpointManifest = { format: 'turnback-manifest', version: 1, id: turn, kind: 'call', createdAt: new Date().toISOString(), workspace: this.projectRoot, complete: true, entryCount: entries.length, entries, gaps: [], calls: [] };
    const options: RestoreOptions = { created: 'delete', modePolicy: 'exact', ...(signal !== undefined ? { signal } : {}) };
    return this.#applyPlanned(await this.#planFrom(turn, [call], options, true), options);
  }

  /** The project paths of a `paths` option. @throws CheckpointError for an empty list or a bad path. */
  pathFilter(paths: unknown): Set<string> | undefined {
    if (paths === undefined) return undefined;
    if (!Array.isArray(paths) || paths.length === 0) {
      throw new CheckpointError('INVALID_ARGUMENT', 'paths must be a non-empty list when given');
    }
    return new Set(paths.map((p) => toProjectPath(this.projectRoot, p)));
  }

  async #planFrom(id: CheckpointId, manifests: CheckpointManifest[], options: RestoreOptions, anyKind: boolean): Promise<Planned> {
    const created = options.created ?? 'delete';
    const modePolicy = options.modePolicy ?? 'exact';
    if (created !== 'delete' && created !== 'keep' && created !== 'own') throw new CheckpointError('INVALID_ARGUMENT', `created must be 'delete', 'keep' or 'own'`);
    if (modePolicy !== 'exact' && modePolicy !== 'never-widen') throw new CheckpointError('INVALID_ARGUMENT', `modePolicy must be 'exact' or 'never-widen'`);
    const only = this.pathFilter(options.paths);
    const force = options.force === undefined ? undefined : this.pathFilter(options.force);
    const { paths, irreversible } = foldTimeline(manifests, anyKind);
    await loadHasher();
    const selected = only === undefined ? paths : paths.filter((p) => only.has(p.path));
    // The plan writes nothing: each ancestor folder is inspected once (apply checks each again).
    const ancestors: AncestorMemo = new Map();
    const inputs: PlanInput[] = await mapLimit(
      selected,
      PLAN_READS_IN_FLIGHT,
      async (p) => {
        const read = await this.#diskStateOrWhyNot(p.path, ancestors);
        // Only a file target needs a stored copy; a missing one leaves that path, not the restore.
        const objectMissing = p.target.type === 'file' && !(await this.store.hasObject(p.target.object).catch(() => false));
        return {
          path: p.path,
          target: p.target,
          ...(p.lastAfter !== undefined ? { lastAfter: p.lastAfter } : {}),
          incomplete: p.incomplete,
          disk: read.disk,
          ...(read.unreadable !== undefined ? { unreadable: read.unreadable } : {}),
          ...(objectMissing ? { objectMissing } : {}),
        };
      },
      { yieldEveryMs: YIELD_EVERY_MS },
    );
    const ownCreated = created === 'own' ? ownCreations(manifests) : undefined;
    const planOptions = { created: created === 'own' ? ('keep' as const) : created, modePolicy, ...(ownCreated !== undefined ? { ownCreated } : {}) };
    let entries = planRestore(inputs, { ...planOptions, ...(force !== undefined ? { force } : {}) });
    if (options.expect !== undefined) entries = holdToPreview(entries, options.expect);
    if (only !== undefined) {
      const covered = new Set(selected.map((p) => p.path));
      for (const path of only) {
        if (!covered.has(path)) entries.push({ path, action: 'skip', reason: 'not-changed-since', target: { type: 'absent' } });
      }
      entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    }
    return {
      plan: { checkpointId: id, workspace: this.projectRoot, createdAt: new Date().toISOString(), options: planOptions, entries },
      irreversible,
    };
  }

  async #diskStateOrWhyNot(projectPath: string, ancestors: AncestorMemo): Promise<{ disk: DiskState; unreadable?: string }> {
    try {
      // A file hashed moments ago (a turn's seal) and still the very same version costs one lstat.
      return { disk: (await this.hasher.takeRecent(projectPath)) ?? (await readDiskState(this.capture.fs, this.projectRoot, projectPath, { seen: ancestors })) };
    } catch (error) {
      // A path whose folder became a symlink is planned as "in the way"; apply re-validates anyway.
      if (isCheckpointError(error, 'INVALID_PATH')) return { disk: { type: 'other', kind: 'unknown' } };
      // Unreadable now (EACCES, EIO): that path is left with its reason; the rest is planned.
      const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
      return { disk: { type: 'other', kind: 'unknown' }, unreadable: code ?? (error instanceof Error ? error.message : String(error)) };
    }
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

  async #applyPlanned({ plan, irreversible }: Planned, options: RestoreOptions, readObject: (object: string) => Promise<Buffer> = (object) => this.store.readObject(object)): Promise<RestoreReport> {
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
      removedLeftovers: [],
      removedFolders: [],
    };
    if (writing.length === 0) {
      // Nothing to write, but a killed earlier restore may have left temp files beside these paths.
      report.cleanupPending = await this.#strayTempFiles(plan.entries, []);
      return report;
    }

    // Save first: record what each write will overwrite, so this restore can itself be undone.
    // The save happens inside the apply, from what the guard just read (see #saveFirst).
    const saver = await this.store.openCheckpoint({
      kind: 'pre-restore',
      sessionId: this.sessionId,
      restoreOf: plan.checkpointId as CheckpointId,
      ...(options.saveLabel !== undefined ? { label: options.saveLabel } : {}),
    });
    report.preRestoreId = saver.id;
    const toApply: PlanEntry[] = [];
    for (const entry of writing) {
      if (entry.expectedHash?.startsWith('file:') === true && (this.capture.isUncopiedCredential ?? isCredentialPath)(entry.path)) {
        // Credential files are never copied, so one cannot be saved first: it is left alone.
        report.skipped.push({ ...entry, action: 'leave', reason: 'cannot-save-first:credential' });
        continue;
      }
      toApply.push(entry);
    }
    const saved = new Set<string>();
    // Recorded before any stage exists: if this process dies mid-apply, the next restore (of any
    // process) finds the folders and the name base, and removes what was left (its content is in
    // the pre-restore checkpoint, saved before each swap).
    const { name: inProgress, record } = applyingRecord({
      folders: foldersOf(toApply),
      save: saver.id,
      restoreOf: plan.checkpointId as CheckpointId,
      ...(options.saveLabel !== undefined ? { label: options.saveLabel } : {}),
      writes: toApply.map((entry) => [entry.path, targetFingerprint(entry.target, entry.action)]),
    });
    await this.store.writeState(inProgress, record, { durable: false }).catch(() => undefined);
    const applied = await applyRestore(
      {
        fs: this.capture.fs,
        projectRoot: this.projectRoot,
        readObject,
        beforeSwap: (entry, sight) => this.#saveFirst(saver, saved, entry, sight),
      },
      toApply,
      { ...(options.durable === true ? { durable: true } : {}), ...(options.signal !== undefined ? { signal: options.signal } : {}) },
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
    await this.store.deleteState(inProgress).catch(() => undefined);
    report.restored = applied.restored;
    // With created files deleted, the folders those deletes emptied that were made since the
    // checkpoint go too: an undo leaves no empty folder behind.
    if ((plan.options.created === 'delete' || plan.options.ownCreated !== undefined) && !applied.rolledBack) {
      const deleted = applied.restored.filter((entry) => entry.action === 'delete').map((entry) => entry.path);
      const since = Date.parse((await this.store.list()).find((m) => m.id === plan.checkpointId)?.createdAt ?? '');
      // Restoring a save (a redo): the folders its own restore made are newer than it by sequence,
      // whatever the clocks say (a folder's birth time comes from the file system's coarse clock,
      // and can read as older than the save opened a moment before it).
      const madeAfter = await this.#foldersMadeAfter(plan.checkpointId as CheckpointId);
      if (deleted.length > 0 && Number.isFinite(since)) report.removedFolders = await removeEmptiedFolders(this.capture.fs, this.projectRoot, deleted, since, madeAfter);
    }
    if (applied.madeFolders !== undefined && !applied.rolledBack) {
      await this.store.writeState(`${MADE_FOLDERS_PREFIX}${saver.id}`, { version: 1, folders: applied.madeFolders }, { durable: false }).catch(() => undefined);
    }
    report.refused.push(...applied.refused);
    report.skipped.push(...applied.skipped);
    report.failed = applied.failed;
    report.cleanupPending = [...applied.cleanupPending, ...(await this.#strayTempFiles(plan.entries, applied.cleanupPending))];
    return report;
  }

  /** The folders the restore that made save `id` created (its record), or none. */
  async #foldersMadeAfter(id: CheckpointId): Promise<ReadonlySet<string>> {
    const record = (await this.store.readState(`${MADE_FOLDERS_PREFIX}${id}`).catch(() => undefined)) as { folders?: unknown } | undefined;
    return new Set(Array.isArray(record?.folders) ? record.folders.filter((f): f is string => typeof f === 'string') : []);
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
    } else if (seen.type === 'file' && sight.bytes !== undefined && sight.bytes.length <= this.capture.maxFileBytes) {
      try {
        // Raw: the save sits between a guard and its swap, where every microsecond widens the window.
        // `seen.hash` is the guard's xxh64 of these very bytes: not computed a second time.
        const ref = this.store.putHashedSync(sight.bytes, seen.hash, { compress: false }) ?? (await this.store.putHashed(sight.bytes, seen.hash, { compress: false }));
        state = { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: seen.mode, ...(seen.ino !== undefined ? { ino: seen.ino } : {}) };
      } catch (error) {
        const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
        return { leave: code === 'ENOSPC' || code === 'EDQUOT' ? 'cannot-save-first:store-full' : 'cannot-save-first:unreadable' };
      }
    } else {
      const captured = await capturePath(this.capture, entry.path);
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
   * planned (written or not). Their content is in the store (every restore saves first), so they
   * are reported for a person to remove, never deleted silently and never read as project files.
   */
  async #strayTempFiles(entries: PlanEntry[], known: string[]): Promise<string[]> {
    const folders = new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')));
    const seen = new Set(known);
    const strays: string[] = [];
    const { fs } = this.capture;
    const sync = fs.sync;
    for (const folder of folders) {
      const abs = folder === '' ? this.projectRoot : `${this.projectRoot}/${folder}`;
      // One readdir per touched folder; synchronous when available (a folder listing of a
      // project folder is small, and a restore of many files touches many folders).
      let names: string[];
      try {
        names = sync !== undefined ? sync.readdirSync(abs) : await fs.readdir(abs);
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
}

/**
 * The paths the span's first checkpoint itself created that no later turn, call or snapshot
 * changed (a restore's save does not count: an undo and its redo leave the file as the checkpoint
 * did, and the guard still checks it is exactly that).
 */
function ownCreations(manifests: readonly CheckpointManifest[]): Set<string> {
  const [anchor, ...later] = manifests;
  const own = new Set((anchor?.entries ?? []).filter((entry) => entry.before.type === 'absent').map((entry) => entry.path));
  for (const manifest of later) {
    if (manifest.kind === 'pre-restore') continue;
    for (const entry of manifest.entries) own.delete(entry.path);
  }
  return own;
}

/** The folders (project paths, `''` for the root) the entries live in. */
function foldersOf(entries: readonly PlanEntry[]): string[] {
  return [...new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')))].sort();
}

function targetFingerprint(target: PathState, action: PlanEntry['action']): Fingerprint {
  if (action === 'delete') return 'absent';
  if (target.type === 'file') return `file:${target.hash}`;
  if (target.type === 'symlink') return `symlink:${target.target}`;
  return 'absent';
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
