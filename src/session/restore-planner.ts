import type { PathCaptureContext } from '../capture/capture-path.js';
import { mapLimit } from '../core/pool.js';
import { CheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest } from '../core/model.js';
import { readDiskState, type DiskState } from '../fs/disk-state.js';
import { toProjectPath, type AncestorMemo } from '../fs/paths.js';
import { planRestore, type PlanEntry, type PlanInput, type RestorePlan } from '../restore/plan.js';
import type { CheckpointStore } from '../store/store.js';
import type { PostWriteHasher } from './post-write.js';
import type { RestoreOptions } from './restore-types.js';
import { discardHolding, foldTimeline, isTimelineKind, withoutDiscarded, type Discard, type IrreversibleCall } from './timeline.js';

// Planning a restore, the read-only half: which checkpoints it folds (the timeline from an anchor,
// minus what earlier restores discarded), what the disk holds now at each path, and the pure plan
// over both, held to a preview when the caller gives one. Nothing here writes; restore-apply.ts
// carries a plan out.

/** A restore plan and the calls after its checkpoint whose side effects no file restore undoes. */
export interface PlannedRestore {
  plan: RestorePlan;
  irreversible: IrreversibleCall[];
}

/** What a plan reads: the project and its store, and the hashes a turn's seal just took. */
export interface RestorePlanningContext {
  capture: PathCaptureContext;
  hasher: PostWriteHasher;
}

/** Disk states read for a plan at once (small files are hashed synchronously). */
const PLAN_READS_IN_FLIGHT = 32;
/** The event loop gets a turn at least this often (ms) while a plan reads the disk. */
const YIELD_EVERY_MS = 10;

/**
 * The manifests a restore to `id` folds: `id`'s own, read directly (a corrupt or foreign manifest
 * fails loudly, not as unknown), and every later timeline checkpoint, minus what `discards` took.
 *
 * @throws CheckpointError `CONFLICT` when a full restore discarded `id` (its redo is named).
 */
export async function timelineFrom(store: CheckpointStore, id: CheckpointId, discards: readonly Discard[]): Promise<CheckpointManifest[]> {
  // Read the anchor directly: a corrupt or foreign manifest must fail loudly, not read as unknown.
  const anchor = await store.manifest(id);
  const holding = discardHolding(id, discards);
  if (holding !== undefined) {
    throw new CheckpointError(
      'CONFLICT',
      `checkpoint ${id} was discarded when the project was restored to ${holding.from}; restore ${holding.preRestore} first (redo) to get back to it`,
      { expected: holding.preRestore },
    );
  }
  const later = (await store.list()).filter((m) => m.id > id && isTimelineKind(m.kind));
  return withoutDiscarded(id, [anchor, ...(await Promise.all(later.map((m) => store.manifest(m.id))))], discards);
}

/** The project paths of a `paths` option. @throws CheckpointError for an empty list or a bad path. */
export function projectPathFilter(projectRoot: string, paths: unknown): Set<string> | undefined {
  if (paths === undefined) return undefined;
  if (!Array.isArray(paths) || paths.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'paths must be a non-empty list when given');
  }
  return new Set(paths.map((p) => toProjectPath(projectRoot, p)));
}

/**
 * The plan to checkpoint `id` over `manifests` (folded; `anyKind` folds snapshots and other kinds
 * too), against the disk now, with `options` checked, its `paths` filter applied and, with
 * `expect`, every write the preview did not show refused.
 *
 * @throws CheckpointError `INVALID_ARGUMENT` for a bad `created`, `modePolicy`, `paths`, `force` or `expect`.
 */
export async function planOverManifests(context: RestorePlanningContext, id: CheckpointId, manifests: CheckpointManifest[], options: RestoreOptions, anyKind: boolean): Promise<PlannedRestore> {
  const { projectRoot, store } = context.capture;
  const created = options.created ?? 'delete';
  const modePolicy = options.modePolicy ?? 'exact';
  if (created !== 'delete' && created !== 'keep' && created !== 'own') throw new CheckpointError('INVALID_ARGUMENT', `created must be 'delete', 'keep' or 'own'`);
  if (modePolicy !== 'exact' && modePolicy !== 'never-widen') throw new CheckpointError('INVALID_ARGUMENT', `modePolicy must be 'exact' or 'never-widen'`);
  const only = projectPathFilter(projectRoot, options.paths);
  const force = options.force === undefined ? undefined : projectPathFilter(projectRoot, options.force);
  const { paths, irreversible } = foldTimeline(manifests, anyKind);
  await loadHasher();
  const selected = only === undefined ? paths : paths.filter((p) => only.has(p.path));
  // The plan writes nothing: each ancestor folder is inspected once (apply checks each again).
  const ancestors: AncestorMemo = new Map();
  const inputs: PlanInput[] = await mapLimit(
    selected,
    PLAN_READS_IN_FLIGHT,
    async (p) => {
      const read = await diskStateOrWhyNot(context, p.path, ancestors);
      // Only a file target needs a stored copy; a missing one leaves that path, not the restore.
      const objectMissing = p.target.type === 'file' && !(await store.hasObject(p.target.object).catch(() => false));
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
    plan: { checkpointId: id, workspace: projectRoot, createdAt: new Date().toISOString(), options: planOptions, entries },
    irreversible,
  };
}

async function diskStateOrWhyNot(context: RestorePlanningContext, projectPath: string, ancestors: AncestorMemo): Promise<{ disk: DiskState; unreadable?: string }> {
  try {
    // A file hashed moments ago (a turn's seal) and still the very same version costs one lstat.
    return { disk: (await context.hasher.takeRecent(projectPath)) ?? (await readDiskState(context.capture.fs, context.capture.projectRoot, projectPath, { seen: ancestors })) };
  } catch (error) {
    // A path whose folder became a symlink is planned as "in the way"; apply re-validates anyway.
    if (isCheckpointError(error, 'INVALID_PATH')) return { disk: { type: 'other', kind: 'unknown' } };
    // Unreadable now (EACCES, EIO): that path is left with its reason; the rest is planned.
    const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
    return { disk: { type: 'other', kind: 'unknown' }, unreadable: code ?? (error instanceof Error ? error.message : String(error)) };
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
