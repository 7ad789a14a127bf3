import * as path from 'node:path';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import { gitBlobIdOf, isGitBlob } from '../core/git-blob.js';
import type { PathState } from '../core/model.js';
import { TEMP_PREFIX } from '../fs/file-system.js';
import { assertCanonicalProjectPath, resolveInsideRoot, type AncestorMemo } from '../fs/paths.js';
import { mapLimit } from '../core/pool.js';
import type { ApplyContext, Prepared, WritingEntry } from './apply-types.js';
import { restoredMode } from './modes.js';
import type { PlanEntry } from './plan.js';

/** Object bytes held between preflight and the writes; past this, objects are read again. */
const HELD_BYTES_BUDGET = 64 * 1024 * 1024;

/** Objects read and verified at once during preflight. */
const PREFLIGHT_READS_IN_FLIGHT = 8;

/** The event loop gets a turn at least this often (ms) while objects are read. */
const YIELD_EVERY_MS = 10;

/** Preflight failed for `entry`: nothing was written. */
export class PreflightFailure {
  constructor(
    readonly entry: WritingEntry,
    readonly cause: unknown,
  ) {}
}

/**
 * The read-only first phase of an apply: every writing entry's path is re-validated (canonical,
 * inside the root, no symlinked or non-folder ancestor, never `.git`, never a turnback temp name)
 * and every object is read and verified against its record. An entry whose object is missing or
 * damaged comes back `left` (`object-missing`); any other failure fails them all.
 *
 * @throws PreflightFailure naming the first entry (in plan order) that failed.
 */
export async function preflight(context: ApplyContext, writing: WritingEntry[]): Promise<Prepared[]> {
  if (!path.isAbsolute(context.projectRoot)) {
    throw new CheckpointError('INVALID_ARGUMENT', `project root must be absolute: ${context.projectRoot}`);
  }
  await loadHasher();
  // Paths first, in plan order (cheap, and the first bad one is the culprit), then the objects.
  // Nothing is written yet, so each ancestor folder is inspected once for all the entries under it.
  const seen = new Set<string>();
  const ancestors: AncestorMemo = new Map();
  const removed = new Set(writing.filter((entry) => entry.action === 'delete').map((entry) => entry.path));
  for (const entry of writing) {
    try {
      await checkEntry(context, entry, seen, ancestors, removed);
    } catch (error) {
      throw new PreflightFailure(entry, error);
    }
  }
  // Which objects stay in memory is decided in plan order from the recorded sizes, so the budget
  // holds however the reads interleave.
  let heldBytes = 0;
  const hold = writing.map((entry) => {
    if (entry.action === 'delete' || entry.target.type !== 'file') return false;
    if (heldBytes + entry.target.size > HELD_BYTES_BUDGET) return false;
    heldBytes += entry.target.size;
    return true;
  });
  return mapLimit(
    writing,
    PREFLIGHT_READS_IN_FLIGHT,
    async (entry, index) => {
      try {
        return await prepareOne(context, entry, hold[index] === true);
      } catch (error) {
        // A stored copy missing or damaged leaves that entry (reported); the others go ahead.
        if (isCheckpointError(error, 'INTEGRITY')) return { entry, mode: 0, left: 'object-missing' as const };
        throw new PreflightFailure(entry, error);
      }
    },
    // Object reads may be synchronous (small objects): keep the event loop responsive.
    { yieldEveryMs: YIELD_EVERY_MS, stopOnError: true },
  );
}

async function checkEntry(context: ApplyContext, entry: WritingEntry, seen: Set<string>, ancestors: AncestorMemo, removed: ReadonlySet<string>): Promise<void> {
  assertCanonicalProjectPath(entry.path);
  if (seen.has(entry.path)) {
    throw new CheckpointError('INVALID_ARGUMENT', `path appears twice in the plan: ${entry.path}`, { path: entry.path });
  }
  seen.add(entry.path);
  if (path.posix.basename(entry.path).startsWith(TEMP_PREFIX)) {
    throw new CheckpointError('INVALID_PATH', `refusing to restore a turnback temp file: ${entry.path}`, { path: entry.path });
  }
  if (entry.expectedHash === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', `writing entry without a guard fingerprint: ${entry.path}`, { path: entry.path });
  }
  const blocker = entry.afterRemovalOf;
  if (blocker !== undefined) {
    // A link or file on the way that this plan deletes first: the way up to it is checked now,
    // the rest when the folders are made (each reached with no link followed).
    if (!entry.path.startsWith(`${blocker}/`) || !removed.has(blocker)) {
      throw new CheckpointError('INVALID_ARGUMENT', `${entry.path} is planned after removing ${blocker}, which the plan does not delete`, { path: entry.path });
    }
    await resolveInsideRoot(context.fs, context.projectRoot, blocker, ancestors);
  } else {
    await resolveInsideRoot(context.fs, context.projectRoot, entry.path, ancestors);
  }
  const target = entry.target;
  if (entry.action === 'delete') {
    if (target.type !== 'absent') throw mismatch(entry);
    return;
  }
  if (target.type === 'symlink') {
    if (target.target.length === 0 || target.target.includes('\0')) {
      throw new CheckpointError('INVALID_ARGUMENT', `invalid recorded link target for ${entry.path}`, { path: entry.path });
    }
    return;
  }
  if (target.type !== 'file') throw mismatch(entry);
}

async function prepareOne(context: ApplyContext, entry: WritingEntry, hold: boolean): Promise<Prepared> {
  const target = entry.target;
  if (entry.action === 'delete' || target.type !== 'file') return { entry, mode: 0 };
  const bytes = await readVerified(context, entry.path, target);
  // A plan always sets the mode; a hand-built entry without one gets the conservative policy.
  const mode = entry.mode === undefined ? restoredMode('never-widen', target.mode) : entry.mode & 0o777;
  return hold ? { entry, bytes, mode } : { entry, mode };
}

function mismatch(entry: PlanEntry): CheckpointError {
  return new CheckpointError('INVALID_ARGUMENT', `${entry.action} cannot restore a ${entry.target.type} state: ${entry.path}`, {
    path: entry.path,
  });
}

/** An object's bytes, checked against the entry's record whatever `readObject` checks. */
export async function readVerified(
  context: ApplyContext,
  projectPath: string,
  target: Extract<PathState, { type: 'file' }>,
): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await context.readObject(target.object);
  } catch (error) {
    if (isCheckpointError(error)) throw new CheckpointError(error.code, error.message, { path: projectPath, cause: error });
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} is missing or unreadable`, {
      path: projectPath,
      cause: error,
    });
  }
  // The store verifies too; checking here keeps apply safe with any readObject. A file recorded
  // by its blob id is checked against that id.
  const blob = gitBlobIdOf(target.hash);
  const hash = blob !== undefined ? (isGitBlob(bytes, blob) ? target.hash : 'not-that-blob') : contentHash(bytes);
  if (bytes.length !== target.size || hash !== target.hash) {
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} does not match its record`, {
      path: projectPath,
      expected: `${target.size}:${target.hash}`,
      found: `${bytes.length}:${hash}`,
    });
  }
  return bytes;
}

