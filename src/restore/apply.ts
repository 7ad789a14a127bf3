import { errnoCode, isCheckpointError, type CheckpointErrorCode } from '../core/errors.js';
import { Left, Refused, isLarge, throwIfAborted, type ApplyContext, type Prepared, type WritingEntry } from './apply-types.js';
import type { PlanEntry } from './plan.js';
import { isWritingAction } from './plan.js';
import { PreflightFailure, preflight } from './preflight.js';
import { RestoreTransaction, type Staged } from './swap.js';

export type { ApplyContext, GuardSight, SwapDecision } from './apply-types.js';

/** The event loop gets a turn at least this often (ms) while entries are applied synchronously. */
const YIELD_EVERY_MS = 10;

/** How many entries ahead of the one being swapped have their stage created. */
const STAGES_AHEAD = 16;

/** Options for {@link applyRestore}. */
export interface ApplyOptions {
  /**
   * Cancels the restore before its commit point; completed steps are rolled back.
   * @default undefined
   */
  signal?: AbortSignal;
  /**
   * Power-loss durability: fsync every staged file before it is published and every touched
   * folder after the commit. Off by default, like `git checkout` (which does not fsync either)
   * and like the captures a restore undoes: a process crash loses nothing either way; only a
   * power loss right after the restore may leave restored files empty or old (the pre-restore
   * checkpoint, not fsynced either, is the way back). Costs about one journal commit per file.
   * @default false
   */
  durable?: boolean;
}

/** Why a writing entry did not complete: a {@link CheckpointErrorCode}, an errno code (`EACCES`, …), or `ABORT_ERR`. */
export type RestoreFailureCode = CheckpointErrorCode | 'ABORT_ERR' | `E${string}`;

/** A writing entry that did not complete. */
export interface ApplyFailure {
  path: string;
  error: string;
  /** Absent when the failure carried no code. */
  code?: RestoreFailureCode;
}

/** The receipt of an apply. */
export interface ApplyResult {
  /** Entries written (restored, recreated, deleted). Empty when the restore rolled back. */
  restored: PlanEntry[];
  /** Entries refused by the plan, or by the guard just before the swap (`changed-since-plan`). */
  refused: PlanEntry[];
  /** `skip` and `leave` entries, with their reasons. */
  skipped: PlanEntry[];
  /** Writing entries that failed, were rolled back, or were never attempted. */
  failed: ApplyFailure[];
  /** Project-relative paths of turnback temp files or folders that could not be removed. */
  cleanupPending: string[];
  /** True when a failure or cancellation undid every completed write. */
  rolledBack: boolean;
  /** Folders the restore made that it left holding what it wrote (project paths), after a commit. */
  madeFolders?: string[];
}

/**
 * Executes the writing entries of a plan as one transaction.
 *
 * 1. Preflight, read-only: every writing entry's path is re-validated (canonical, inside the root,
 *    no symlinked or non-folder ancestor, never `.git`) and every object is read and verified.
 *    Any failure fails every writing entry and touches nothing.
 * 2. Per entry, in order: create missing folders, stage the bytes beside the destination
 *    (`.turnback-stage-*`, exclusive create, final mode), re-check the guard, then move the
 *    destination aside (`.turnback-displaced-*`) and publish the stage with a create-only link.
 *    A hard-linked destination is instead copied aside and rewritten in place, so its other links
 *    see the restored content. Links are never followed: a symlink is replaced, not written through.
 * 3. On any failure or cancellation every completed step is undone in reverse; on success the
 *    displaced originals are removed (commit).
 *
 * Small files go through the file system's synchronous calls when it has them (`fs.sync`), the
 * rest through the promise API; both run the same steps. Nothing is fsynced unless
 * `options.durable` is set. Failures to remove temp files after commit or during rollback are
 * reported in `cleanupPending`, never thrown. Non-writing entries pass through to `refused` /
 * `skipped`.
 */
export async function applyRestore(
  context: ApplyContext,
  entries: PlanEntry[],
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const result: ApplyResult = { restored: [], refused: [], skipped: [], failed: [], cleanupPending: [], rolledBack: false };
  const writing: WritingEntry[] = [];
  for (const entry of entries) {
    if (isWritingAction(entry.action)) writing.push(entry as WritingEntry);
    else if (entry.action === 'refuse') result.refused.push(entry);
    else result.skipped.push(entry);
  }
  if (writing.length === 0) return result;
  inStructuralOrder(writing);

  let prepared: Prepared[];
  try {
    throwIfAborted(options.signal);
    prepared = await preflight(context, writing);
  } catch (error) {
    const culprit = error instanceof PreflightFailure ? error.entry : undefined;
    const cause = error instanceof PreflightFailure ? error.cause : error;
    for (const entry of writing) {
      result.failed.push(
        culprit === undefined || entry === culprit
          ? describeFailure(entry.path, cause, options.signal)
          : { path: entry.path, error: `not attempted: preflight failed for ${culprit.path}` },
      );
    }
    return result;
  }

  // Entries preflight could not prepare (a missing or damaged object) are left, reported.
  prepared = prepared.filter((item) => {
    if (item.left === undefined) return true;
    result.skipped.push({ ...item.entry, action: 'leave', reason: item.left });
    return false;
  });
  const tx = new RestoreTransaction(context, options.durable === true);
  const done: WritingEntry[] = [];
  const launched: Staged[] = [];
  let lastYield = performance.now();
  for (let i = 0; i < prepared.length; i++) {
    const item = prepared[i] as Prepared;
    try {
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        // Synchronous steps would otherwise hold the event loop for the whole restore.
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
      throwIfAborted(options.signal);
      // Stages are created up to STAGES_AHEAD entries ahead, through the thread pool, so the
      // kernel's inode work overlaps the guards and swaps of earlier entries. A large file is
      // staged only when its turn comes (memory).
      while (launched.length < prepared.length && launched.length <= i + STAGES_AHEAD) {
        const next = prepared[launched.length] as Prepared;
        // A large file, and a file under a link this restore removes first, are staged when their turn comes.
        if (launched.length > i && (isLarge(next) || next.entry.afterRemovalOf !== undefined)) break;
        launched.push(await tx.launch(next));
      }
      const outcome = await tx.swap(item, launched[i] as Staged, options.signal);
      if (outcome instanceof Refused) {
        result.refused.push({ ...item.entry, action: 'refuse', reason: 'changed-since-plan', foundHash: outcome.found });
      } else if (outcome instanceof Left) {
        result.skipped.push({ ...item.entry, action: 'leave', reason: outcome.reason });
      } else {
        done.push(item.entry);
      }
    } catch (error) {
      result.cleanupPending.push(...(await tx.rollback()));
      result.rolledBack = true;
      for (const entry of done) result.failed.push({ path: entry.path, error: 'rolled back' });
      result.failed.push(describeFailure(item.entry.path, error, options.signal));
      for (const rest of prepared.slice(i + 1)) {
        result.failed.push({ path: rest.entry.path, error: `not attempted: rolled back after ${item.entry.path} failed` });
      }
      return result;
    }
  }
  try {
    // The last publish may have raced a move of its folder: nothing is reported restored unless
    // every folder written in is still where it was.
    await tx.confirmWritten();
  } catch (error) {
    result.cleanupPending.push(...(await tx.rollback()));
    result.rolledBack = true;
    for (const entry of done) result.failed.push({ path: entry.path, error: 'rolled back' });
    result.failed.push(describeFailure(done.at(-1)?.path ?? '.', error, options.signal));
    return result;
  }
  result.cleanupPending.push(...(await tx.commit()));
  result.restored = done;
  if (tx.made.length > 0) result.madeFolders = [...tx.made].sort();
  return result;
}

/**
 * Moves each entry that replaces a folder (`folder-in-the-way`) after the entries inside that
 * folder: their deletes empty it first. Everything else keeps plan order (a path before the
 * paths under it), which already puts a removed link before the files recreated under it.
 */
function inStructuralOrder(writing: WritingEntry[]): void {
  for (let i = writing.length - 1; i >= 0; i--) {
    const entry = writing[i] as WritingEntry;
    if (entry.reason !== 'folder-in-the-way') continue;
    const prefix = `${entry.path}/`;
    let last = i;
    while (last + 1 < writing.length && (writing[last + 1] as WritingEntry).path.startsWith(prefix)) last += 1;
    if (last > i) writing.splice(last, 0, ...writing.splice(i, 1));
  }
}

function describeFailure(projectPath: string, error: unknown, signal?: AbortSignal): ApplyFailure {
  const message = error instanceof Error ? error.message : String(error);
  const errno = errnoCode(error);
  // A caller's own Error as the abort reason keeps its identity, and is still an abort.
  const aborted = isAbort(error) || (signal?.aborted === true && error === signal.reason);
  const code: RestoreFailureCode | undefined = isCheckpointError(error) ? error.code : aborted ? 'ABORT_ERR' : errno?.startsWith('E') === true ? (errno as `E${string}`) : undefined;
  return code === undefined ? { path: projectPath, error: message } : { path: projectPath, error: message, code };
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

