import type { PathCaptureContext } from '../capture/capture-path.js';
import { CheckpointError } from '../core/errors.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { fingerprintOf, type CheckpointManifest, type PathState } from '../core/model.js';
import type { Change } from '../capture/diff.js';
import type { PlanEntry } from '../restore/plan.js';
import type { CheckpointStore } from '../store/store.js';
import { readDiscards } from './discards.js';
import { recoverInterruptedRestoresLocked, type RecoveredRestore } from './interrupted-restore.js';
import type { PostWriteHasher } from './post-write.js';
import { applyPlannedRestore } from './restore-apply.js';
import { planOverManifests, projectPathFilter, timelineFrom, type PlannedRestore } from './restore-planner.js';
import type { RestoreOptions, RestoreReport } from './restore-types.js';
import { DISCARDS_STATE, recordDiscard } from './timeline.js';

// The observer's restores, one method per kind (a turn's timeline, a tool call's snapshots, a
// savepoint, one shell call), each choosing what to fold and with which options, then planning
// (restore-planner.ts) and applying with a save first (restore-apply.ts). A restore to a
// checkpoint also records what it discarded, so later plans leave that range out.

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
  async plan(idInput: CheckpointId, options: RestoreOptions): Promise<PlannedRestore> {
    const id = parseCheckpointId(idInput);
    return this.#planFrom(id, await timelineFrom(this.store, id, await readDiscards(this.store)), options, false);
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
    const report = await this.#applyPlanned(await this.#planFrom(checked, await timelineFrom(this.store, checked, discards), options, false), options);
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
    return projectPathFilter(this.projectRoot, paths);
  }

  #planFrom(id: CheckpointId, manifests: CheckpointManifest[], options: RestoreOptions, anyKind: boolean): Promise<PlannedRestore> {
    return planOverManifests({ capture: this.capture, hasher: this.hasher }, id, manifests, options, anyKind);
  }

  #applyPlanned(planned: PlannedRestore, options: RestoreOptions, readObject?: (object: string) => Promise<Buffer>): Promise<RestoreReport> {
    return applyPlannedRestore({ capture: this.capture, sessionId: this.sessionId }, planned, options, readObject);
  }
}
