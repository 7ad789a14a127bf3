import { assertNever } from '../core/errors.js';
import type { Fingerprint, PathState, UncopiedReason } from '../core/model.js';
import { fingerprintOf, isStatFingerprint } from '../core/model.js';
import type { DiskState } from '../fs/disk-state.js';
import { diskFingerprint } from '../fs/disk-state.js';
import type { ModePolicy } from './modes.js';
import { restoredMode } from './modes.js';
import { deletesCreated, planStructure } from './plan-structure.js';

/** One path to plan: where it should go back to, what the session last recorded, what is on disk now. */
export interface PlanInput {
  /** Canonical project-relative path. */
  path: string;
  /** The state to restore (the checkpoint's `before`). */
  target: PathState;
  /** Fingerprint after the latest recorded change; `undefined` when no post-change record exists. */
  lastAfter?: Fingerprint;
  /** True when attribution for this path is unreliable; restore refuses it. */
  incomplete?: boolean;
  /** The path's state on disk now (from `readDiskState`). */
  disk: DiskState;
  /** Set when the disk state could not be read (an errno or a message): the path is left. */
  unreadable?: string;
  /** True when the target's stored copy is not in the store: the path is left, the rest goes ahead. */
  objectMissing?: boolean;
}

/** Restore choices, resolved by the caller. */
export interface PlanOptions {
  /** What to do with paths created since the checkpoint: remove them, or keep them (`leave`). */
  created: 'delete' | 'keep';
  /** How file modes are restored. */
  modePolicy: ModePolicy;
  /**
   * Paths to restore although their last change has no record or what is there now is not what
   * the session last recorded (a write killed mid-way, or before its record was down, leaves a
   * file whose pre-image is kept): asked for by name, never implied; still guarded against what
   * the plan found. @default none
   */
  force?: ReadonlySet<string>;
  /**
   * Paths the checkpoint itself created (and nothing later changed): with `created: 'keep'` they
   * are deleted all the same, while still exactly what was recorded (the guard). @default none
   */
  ownCreated?: ReadonlySet<string>;
}

/** What restore does with one path. `restore`, `recreate` and `delete` write; the rest do not. */
export type PlanAction = 'skip' | 'refuse' | 'restore' | 'recreate' | 'delete' | 'leave';

/**
 * Why a path got its action. Writing actions carry no reason except `mode-only` (content already
 * matches, only the mode is restored); `changed-since-plan` is added by apply when the guard fails
 * just before the swap.
 */
export type PlanReason =
  | 'already-matches'
  | 'mode-only'
  | 'incomplete-attribution'
  | 'no-post-record'
  | 'changed-outside'
  | 'changed-since-plan'
  | 'created-since'
  | `no-copy:${UncopiedReason}`
  | 'not-a-file'
  | 'directory-in-the-way'
  | 'special-file-in-the-way'
  /** A new file stands where the path's folder was; `created: 'delete'` removes it. */
  | 'file-in-the-way'
  /** A writing entry: removes what stands where a folder of recorded files was (a link, or a file created since). */
  | 'in-the-way'
  /** A writing entry: the folder standing at the path is emptied by this restore and replaced. */
  | 'folder-in-the-way'
  /** The path could not be read now (the guard has nothing to compare): left as it is. */
  | 'unreadable'
  /** The stored copy to write back is missing or damaged: left; the other paths are restored. */
  | 'object-missing'
  /** A writing entry the caller forced: its last change has no record (see {@link PlanOptions.force}). */
  | 'forced'
  /** Set by the session layer: a path the caller named that no checkpoint since changed. */
  | 'not-changed-since'
  /** Set by the session layer: the pre-restore save could not copy the file that would be overwritten. */
  | `cannot-save-first:${UncopiedReason}`;

/** One row of a restore plan. */
export interface PlanEntry {
  path: string;
  action: PlanAction;
  reason?: PlanReason;
  /**
   * For `refuse`: the fingerprint the guard wanted (the last recorded one). For writing actions:
   * the fingerprint on disk when planned, which apply re-checks just before the swap.
   */
  expectedHash?: Fingerprint;
  /** For `refuse` / `changed-since-plan`: the fingerprint actually found on disk. */
  foundHash?: Fingerprint;
  /** The state the path is restored to. */
  target: PathState;
  /** For writing a file: the permission bits to give it. */
  mode?: number;
  /** For a `recreate` under a link or file this restore removes first (`in-the-way`): that path. */
  afterRemovalOf?: string;
}

/** A complete plan: what a dry run returns and what apply executes. */
export interface RestorePlan {
  checkpointId: string;
  /** Canonical project root the plan is for. */
  workspace: string;
  createdAt: string;
  options: PlanOptions;
  /** Sorted by path. */
  entries: PlanEntry[];
}

/** True for actions that change the disk. */
export function isWritingAction(action: PlanAction): action is 'restore' | 'recreate' | 'delete' {
  return action === 'restore' || action === 'recreate' || action === 'delete';
}

/**
 * Decides, for every path, what restore does: a pure case table over (target, last recorded
 * fingerprint, disk now). Touches no file; the result is sorted by path.
 *
 * The guard: a path is only written when the disk still holds exactly what the session last
 * recorded (`lastAfter`), so an edit made outside the session is never overwritten.
 */
export function planRestore(inputs: PlanInput[], options: PlanOptions): PlanEntry[] {
  const entries = inputs.map((input) => planOne(input, options)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return planStructure(entries, inputs, options);
}

function planOne(input: PlanInput, options: PlanOptions): PlanEntry {
  const { path, target, disk } = input;
  const found = diskFingerprint(disk);
  if (input.incomplete === true) return { path, action: 'refuse', reason: 'incomplete-attribution', target, foundHash: found };
  if (input.unreadable !== undefined) return { path, action: 'leave', reason: 'unreadable', target };
  const planned = planByState(input, options, found);
  if (input.objectMissing === true && (planned.action === 'restore' || planned.action === 'recreate') && planned.reason !== 'mode-only') {
    return { path, action: 'leave', reason: 'object-missing', target };
  }
  return planned;
}

function planByState(input: PlanInput, options: PlanOptions, found: Fingerprint): PlanEntry {
  const { path, target, lastAfter, disk } = input;

  if (fingerprintOf(target) === found) {
    if (options.modePolicy === 'exact' && target.type === 'file' && disk.type === 'file') {
      const mode = restoredMode('exact', target.mode, disk.mode);
      if ((disk.mode & 0o777) !== mode) {
        return { path, action: 'restore', reason: 'mode-only', target, expectedHash: found, mode };
      }
    }
    return { path, action: 'skip', reason: 'already-matches', target };
  }

  // Nothing to write back whatever the guard says: the real reason is that no copy was kept.
  if (target.type === 'uncopied') return { path, action: 'leave', reason: `no-copy:${target.reason}`, target };
  const forced = options.force?.has(path) === true;
  if (lastAfter === undefined && !forced) return { path, action: 'refuse', reason: 'no-post-record', target, foundHash: found };
  if (lastAfter !== undefined && !forced && !matchesLastAfter(disk, found, lastAfter)) {
    return { path, action: 'refuse', reason: 'changed-outside', target, expectedHash: lastAfter, foundHash: found };
  }

  switch (target.type) {
    case 'other':
      return { path, action: 'leave', reason: 'not-a-file', target };
    case 'file':
    case 'symlink':
    case 'absent':
      return forced ? markForced(planWrite(input, target, found, options)) : planWrite(input, target, found, options);
    default:
      return assertNever(target);
  }
}

/**
 * True when the disk still holds what the session last recorded. A post-write record is a content
 * fingerprint, or — when the session ended before hashing it — the file's stat identity, which
 * matches only the very same file version (inode, size, nanosecond mtime and ctime).
 */
function matchesLastAfter(disk: DiskState, found: Fingerprint, lastAfter: Fingerprint): boolean {
  if (found === lastAfter) return true;
  return isStatFingerprint(lastAfter) && disk.type === 'file' && disk.statId === lastAfter;
}

/** A forced writing entry says so (the preview shows it); a non-writing one is left as it is. */
function markForced(entry: PlanEntry): PlanEntry {
  return entry.action === 'restore' || entry.action === 'recreate' || entry.action === 'delete' ? { ...entry, reason: 'forced' } : entry;
}

function planWrite(
  input: PlanInput,
  target: Extract<PathState, { type: 'file' | 'symlink' | 'absent' }>,
  found: Fingerprint,
  options: PlanOptions,
): PlanEntry {
  const { path, disk } = input;
  switch (disk.type) {
    case 'other':
      // Never remove a folder or special file to make room: that could destroy untracked content.
      return {
        path,
        action: 'refuse',
        reason: disk.kind === 'directory' ? 'directory-in-the-way' : 'special-file-in-the-way',
        target,
        foundHash: found,
      };
    case 'absent':
    case 'file':
    case 'symlink':
      break;
    default:
      return assertNever(disk);
  }
  switch (target.type) {
    case 'absent':
      // disk is not absent here: equal fingerprints were skipped above.
      return deletesCreated(options, path)
        ? { path, action: 'delete', target, expectedHash: found }
        : { path, action: 'leave', reason: 'created-since', target };
    case 'symlink':
      return { path, action: disk.type === 'absent' ? 'recreate' : 'restore', target, expectedHash: found };
    case 'file':
      return {
        path,
        action: disk.type === 'absent' ? 'recreate' : 'restore',
        target,
        expectedHash: found,
        mode: restoredMode(options.modePolicy, target.mode, disk.type === 'file' ? disk.mode : undefined),
      };
    default:
      return assertNever(target);
  }
}
