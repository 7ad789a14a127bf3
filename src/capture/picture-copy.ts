import * as path from 'node:path';
import type { Gap, PathState, UncopiedReason } from '../core/model.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { mapLimit } from '../core/pool.js';
import { withThousands } from '../core/numbers.js';
import type { ResolvedCoverage } from './coverage.js';
import type { StatRecord } from './scan.js';
import { cleanTrackedBlobs } from './tracked-files.js';
import { blobState } from './picture-coverage.js';
import type { PictureCopies, PictureProgress, PictureRecord, PictureStore } from './picture.js';

// The copy phase of a picture: every file that needs a copy, within the picture's budgets, small
// files on the calling thread and large ones a few at a time, as one batch of the store's.

/** Files copied at once: enough to overlap reads and store writes, few enough to bound memory. */
const COPY_CONCURRENCY = 8;
/** Files up to this size are offered to the store's synchronous copy (its pack limit), unless the batch says more. */
const SYNC_COPY_MAX_BYTES = 256 * 1024;
/** How long the synchronous copies may hold the event loop before yielding a turn. */
const YIELD_EVERY_MS = 10;
const PROGRESS_EVERY = 256;

/** Which of a picture's copy budgets a file went past. */
export type BudgetStop = 'files' | 'bytes' | 'time';

/** What the copy phase needs. */
export interface CopyPhaseInput {
  store: PictureStore;
  /** Canonical project root. */
  root: string;
  coverage: ResolvedCoverage;
  deadline: number;
  toCopy: readonly StatRecord[];
  /** Where per-file failures go. */
  gaps: Gap[];
  signal?: AbortSignal;
  onProgress?: (progress: PictureProgress) => void;
  /** For progress: the walk's counts. */
  walked: number;
  files: number;
}

/** What the copy phase did. */
export interface CopyPhase {
  /** One record per file of `toCopy` (copied, left on git's blob, or not copied and why). */
  results: (PictureRecord | undefined)[];
  copied: number;
  copiedBytes: number;
  copiedPastBudget: number;
  budgetStops: Set<BudgetStop>;
}

const directCopies = (store: PictureStore): PictureCopies => ({
  putFile: (file, expected) => store.putFile(file, expected),
  ...(store.putFileSync !== undefined ? { putFileSync: store.putFileSync.bind(store) } : {}),
  end: async () => new Map(),
});

/**
 * Copies `toCopy` into the store within the picture's budgets. The budgets govern only files git
 * holds: a clean tracked file past them is recorded by its blob id; every other file is copied
 * past them. The copies are one batch of the store's ({@link PictureStore.batch}), ended before
 * this returns: a record never names a copy that is not written, and a file whose copy could not
 * be written is recorded as not copied.
 */
export async function copyFiles(input: CopyPhaseInput): Promise<CopyPhase> {
  const { root, coverage, deadline, toCopy, gaps, signal, onProgress, walked, files } = input;
  const copies = input.store.batch?.() ?? directCopies(input.store);
  let ended = false;
  let copied = 0;
  let copiedBytes = 0;
  let reservedFiles = 0;
  let reservedBytes = 0;
  const budgetStops = new Set<BudgetStop>();
  let copiedPastBudget = 0;
  const results: (PictureRecord | undefined)[] = new Array<PictureRecord | undefined>(toCopy.length);

  // git's index looked at once for the phase, not once a file past the budget.
  const blobOf = cleanTrackedBlobs(root);
  type StoredRef = { object: string; hash: string; size: number; mode: number };
  /** Budget check and reservation; false when the file is left uncopied by a budget. */
  const reserve = (index: number, stat: StatRecord): boolean => {
    const stop =
      Date.now() > deadline
        ? 'time'
        : reservedFiles + 1 > coverage.maxPictureFiles
          ? 'files'
          : reservedBytes + stat.size > coverage.maxPictureBytes
            ? 'bytes'
            : undefined;
    if (stop !== undefined) {
      // A clean tracked file needs no copy to come back: its bytes are git's blob, recorded by id.
      const blob = blobOf(stat);
      if (blob !== undefined) {
        results[index] = withState(stat, blobState(stat, blob));
        return false;
      }
      // Any other file's bytes exist nowhere else: the budget governs only what git holds.
      budgetStops.add(stop);
      copiedPastBudget += 1;
    }
    reservedFiles += 1;
    reservedBytes += stat.size;
    return true;
  };
  const settle = (index: number, stat: StatRecord, ref: StoredRef | undefined, error: unknown): void => {
    if (ref !== undefined) {
      copied += 1;
      copiedBytes += ref.size;
      results[index] = withState(stat, { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: ref.mode & 0o7777, ino: stat.ino });
    } else {
      reservedFiles -= 1;
      reservedBytes -= stat.size;
      const reason = failureReason(error);
      gaps.push({ path: stat.path, reason, detail: `${stat.path}: ${FAILURE_DETAIL[reason]}` });
      results[index] = withState(stat, uncopiedState(reason, stat));
    }
    if (onProgress !== undefined && copied % PROGRESS_EVERY === 0) {
      onProgress({ phase: 'copy', walked, files, toCopy: toCopy.length, copied });
    }
  };
  const absOf = (stat: StatRecord): string => (path.sep === '/' ? `${root}/${stat.path}` : path.join(root, ...stat.path.split('/')));
  /** Copies a file whose budget is reserved through the store's promise API. */
  const putReserved = async (index: number, stat: StatRecord): Promise<void> => {
    let ref: StoredRef;
    try {
      ref = await copies.putFile(absOf(stat), { size: stat.size, mtimeMs: stat.mtimeMs });
    } catch (error) {
      settle(index, stat, undefined, error);
      return;
    }
    settle(index, stat, ref, undefined);
  };

  try {
    // Small files first, on this thread: no promise per file, and the event loop gets a turn every
    // few milliseconds. What the store cannot take synchronously waits for the concurrent copies.
    const later: number[] = [];
    const putSync = copies.putFileSync;
    const syncMax = copies.syncMaxBytes ?? SYNC_COPY_MAX_BYTES;
    let lastYield = performance.now();
    for (let index = 0; index < toCopy.length; index++) {
      const stat = toCopy[index] as StatRecord;
      if (putSync === undefined || stat.size > syncMax) {
        later.push(index);
        continue;
      }
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
      signal?.throwIfAborted();
      if (!reserve(index, stat)) continue;
      let ref: StoredRef | undefined;
      try {
        ref = putSync(absOf(stat), { size: stat.size, mtimeMs: stat.mtimeMs });
      } catch (error) {
        settle(index, stat, undefined, error);
        continue;
      }
      if (ref !== undefined) {
        settle(index, stat, ref, undefined);
        continue;
      }
      // Not taken synchronously (a store not loaded yet, or a file that grew): through `putFile`
      // now, which also loads the store for the files after it.
      await putReserved(index, stat);
    }

    await mapLimit(
      later,
      COPY_CONCURRENCY,
      async (index) => {
        signal?.throwIfAborted();
        const stat = toCopy[index] as StatRecord;
        if (reserve(index, stat)) await putReserved(index, stat);
      },
      { stopOnError: true },
    );
    signal?.throwIfAborted();
    ended = true;
    const unwritten = await copies.end();
    if (unwritten.size > 0) {
      results.forEach((record, index) => {
        const state = record?.state;
        if (record === undefined || state?.type !== 'file' || !unwritten.has(state.object)) return;
        copied -= 1;
        copiedBytes -= state.size;
        const reason = failureReason(unwritten.get(state.object));
        gaps.push({ path: record.path, reason, detail: `${record.path}: ${FAILURE_DETAIL[reason]}` });
        results[index] = withState(record, uncopiedState(reason, record));
      });
    }
  } finally {
    // Thrown out of the copies (an abort): what waits is written anyway, and named by nothing.
    if (!ended) await copies.end();
  }
  return { results, copied, copiedBytes, copiedPastBudget, budgetStops };
}

/**
 * Turns the scan's own record into a picture record in place: the scan result is private to
 * the picture, and copying 100,000 records would double the peak memory of a picture.
 */
export function withState(stat: StatRecord, state: PathState): PictureRecord {
  const record = stat as PictureRecord;
  record.state = state;
  return record;
}

/** The state of a file recorded without a copy, and why. */
export function uncopiedState(reason: UncopiedReason, stat: StatRecord): PathState {
  return { type: 'uncopied', reason, size: stat.size, mode: stat.mode };
}

const FAILURE_DETAIL: Record<UncopiedReason, string> = {
  'too-large': 'no copy (over the size limit)',
  credential: 'no copy (credential file)',
  'picture-budget': 'no copy (picture budget)',
  'changed-during-capture': 'no copy (changed during capture)',
  unreadable: 'no copy (unreadable)',
  'store-busy': 'no copy (the checkpoint store is busy)',
  'store-full': 'no copy (the checkpoint store is full)',
};

function failureReason(error: unknown): UncopiedReason {
  if (isCheckpointError(error, 'CONFLICT')) return 'changed-during-capture';
  if (isCheckpointError(error, 'STORE_BUSY')) return 'store-busy';
  const code = errnoCode(error instanceof Error && error.cause !== undefined ? error.cause : error);
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'store-full';
  if (code === 'ENOENT') return 'changed-during-capture';
  return 'unreadable';
}

/** The budgets a picture's copies went past, in words. */
export function describeBudget(stops: Set<BudgetStop>, coverage: ResolvedCoverage): string {
  const parts: string[] = [];
  if (stops.has('files')) parts.push(`${withThousands(coverage.maxPictureFiles)} files`);
  if (stops.has('bytes')) parts.push(`${coverage.maxPictureMib} MiB`);
  if (stops.has('time')) parts.push(`${coverage.maxPictureSeconds} s`);
  return `copy budget (${parts.join(', ')})`;
}
