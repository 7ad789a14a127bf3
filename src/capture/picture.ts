import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Gap, LeftByLimit, PathState } from '../core/model.js';
import { mapLimit } from '../core/pool.js';
import type { ParallelLstat } from '../fs/parallel-lstat.js';
import type { IgnoreStack, ResolvedCoverage } from './coverage.js';
import { scanTree, type ScanMemo, type ScanOptions, type ScanResult, type StatRecord, type UncheckedPath } from './scan.js';
import { withThousands } from '../core/numbers.js';
import { cleanTrackedBlob } from './tracked-files.js';
import { blobState, orderForBudget, stillTheSameBlob } from './picture-coverage.js';
import { FAILURE_DETAIL, describeBudget, failureReason, settled, summarize, uncopiedState, withState } from './picture-words.js';

/**
 * The store calls a picture needs to copy files. {@link pictureStoreOf} makes one over the
 * checkpoint store; tests pass a small fake.
 */
export interface PictureStore {
  /**
   * Copies a regular file into the store (deduplicated by content). `expected` carries the scan's
   * size and mtime: a file that no longer matches them throws `CONFLICT`.
   */
  putFile(absPath: string, expected?: { size?: number; mtimeMs?: number }): Promise<{ object: string; hash: string; size: number; mode: number }>;
  /**
   * Optional: `putFile` on the calling thread for a small file; `undefined` sends the file to
   * `putFile`. Throws as `putFile` rejects.
   */
  putFileSync?(absPath: string, expected?: { size?: number; mtimeMs?: number }): { object: string; hash: string; size: number; mode: number } | undefined;
  /**
   * Optional: a check, for one picture, that a stored copy is good. A record whose stat is
   * unchanged is reused only when its copy checks out; otherwise the file is copied again, so a
   * picture never points at a copy found missing or damaged.
   */
  checkCopies?(): Promise<(object: string) => boolean>;
}

/** One covered path in a picture: its stat index entry plus the recorded state. */
export type PictureRecord = StatRecord & { state: PathState };

/**
 * A whole-tree picture. `records` is authoritative only outside `unchecked`: a path under an
 * unchecked folder is unknown, never "deleted".
 */
export interface Picture {
  /**
   * Every covered file and symlink, keyed by project path. When nothing changed this is the
   * cache's own map (compare by identity to know); treat it as read-only.
   */
  records: Map<string, PictureRecord>;
  /** True when the picture stopped early or left anything unchecked or uncopied by budget. */
  partial: boolean;
  /** Everything not captured, with reasons. */
  gaps: Gap[];
  /** Folders (or files) not checked. */
  unchecked: UncheckedPath[];
  /** Tracked paths under folders a stopped walk left, statted from git's index (see {@link ScanResult.vouched}). */
  vouched?: ReadonlySet<string>;
  /** What a walk stopped by a limit left, as counts (see {@link LeftByLimit}). */
  left?: LeftByLimit;
  /** Files read into the store by this picture. */
  copied: number;
  /**
   * Of `copied`, the files git does not hold (untracked, modified, or no repository at all) that
   * were copied past the copy budget: their bytes exist nowhere else, so no budget leaves them.
   */
  copiedPastBudget: number;
  /** Bytes read into the store by this picture. */
  copiedBytes: number;
  /** One human sentence, e.g. "checkpoint partial: 10,000 copied; not checked: out/ (walk limit)". */
  summary: string;
  /** When {@link Picture.copiedPastBudget} is not 0, the sentence saying so (a person is told before the command runs). */
  pastBudget?: string;
  /** The `.gitignore` epoch the walk ended at (see {@link PictureCache.ignoreEpoch}). */
  ignoreEpoch?: number;
  /** Entries the ignore rules, `skip` and the default skipped folders left out (a folder counts once). */
  ignored?: number;
  /**
   * Those entries' paths (a folder ends with `/`): the walk passes them anyway, so keeping them is
   * free, and a later picture can tell which were deleted though neither copied them. In memory only.
   */
  ignoredPaths?: readonly string[];
}

/**
 * What a picture may reuse without reading a file: any earlier picture of the same project
 * (a {@link Picture} is one), or one loaded with {@link loadPictureCache}.
 */
export interface PictureCache {
  /** Earlier records, keyed by project path. */
  readonly records: ReadonlyMap<string, PictureRecord>;
  /** Parsed `.gitignore` rules kept in memory across pictures; not persisted. */
  ignores?: IgnoreStack;
  /**
   * The `ignores` epoch the records were taken at. When it still holds, files recorded earlier
   * in folders with unchanged rules skip the ignore match.
   */
  ignoreEpoch?: number;
  /** Per-folder listings kept in memory across pictures (see {@link ScanMemo}); not persisted. */
  memo?: ScanMemo;
  /** Two-thread `lstat` for repeat pictures of big trees (see {@link ScanOptions.parallel}). */
  parallel?: ParallelLstat;
}

/** Progress of a running picture. */
export interface PictureProgress {
  /** `scan`: the tree was walked; `copy`: files are being copied. */
  phase: 'scan' | 'copy';
  /** Folder entries listed (files and folders). */
  walked: number;
  /** Files (and links) the walk found to cover: what a person calls "files seen". */
  files: number;
  /** Files that need a copy (stat changed or never copied). */
  toCopy: number;
  /** Files copied so far. */
  copied: number;
}

/** Options of {@link takePicture}. */
export interface TakePictureOptions {
  /** Where file contents go. */
  store: PictureStore;
  /** The project folder. */
  projectRoot: string;
  /** Coverage rules and limits, resolved. */
  coverage: ResolvedCoverage;
  /** An earlier picture or loaded cache: files whose stat is unchanged are not read again. */
  cache?: PictureCache;
  /** Aborts the picture; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Epoch milliseconds by which the picture must end.
   * @default Date.now() + coverage.maxPictureSeconds * 1000
   */
  deadline?: number;
  /** Absolute paths never covered (the store itself, when it sits inside the project). */
  exclude?: readonly string[];
  /** Called after the walk and as copies complete. */
  onProgress?: (progress: PictureProgress) => void;
  /** Lists one folder; for tests only (see {@link ScanOptions.readDir}). */
  readDir?: ScanOptions['readDir'];
  /** What a watcher vouched changed since `cache` was pictured (see {@link ScanOptions.changes}). */
  changes?: ScanOptions['changes'];
}

/** Files copied at once: enough to overlap reads and store writes, few enough to bound memory. */
const COPY_CONCURRENCY = 8;
/** Files up to this size are offered to the store's synchronous copy (its pack limit). */
const SYNC_COPY_MAX_BYTES = 256 * 1024;
/** How long the synchronous copies may hold the event loop before yielding a turn. */
const YIELD_EVERY_MS = 10;
const PROGRESS_EVERY = 256;

/** Which copy budget stopped a copy. */
export type BudgetStop = 'files' | 'bytes' | 'time';

/**
 * Takes a whole-tree picture: walks the covered tree ({@link scanTree}), reuses the cached state
 * of every file whose (size, mtime, inode, mode) is unchanged, and copies the rest into the store
 * within the picture's budgets. Credential files and files over `maxFileMib` are recorded, never
 * read. The budgets govern only files git holds: a clean tracked file past them is recorded by its
 * blob id (a later picture copies it in); every other file is copied past them, since its bytes
 * exist nowhere else ({@link Picture.copiedPastBudget}).
 *
 * Known limit: a same-size edit within one file-system mtime tick is invisible to the stat check.
 *
 * @throws CheckpointError `UNAVAILABLE` when the project root cannot be listed; the signal's
 *   reason when aborted. Per-file failures never throw: they become uncopied records and gaps.
 */
export async function takePicture(options: TakePictureOptions): Promise<Picture> {
  const { store, coverage, cache, signal, onProgress } = options;
  const deadline = options.deadline ?? Date.now() + coverage.maxPictureSeconds * 1000;
  const cached = cache?.records;
  const intact = cached !== undefined && cached.size > 0 ? await store.checkCopies?.() : undefined;
  const scan = await scanTree(options.projectRoot, coverage, {
    deadline,
    ...(signal !== undefined ? { signal } : {}),
    ...(options.exclude !== undefined ? { exclude: options.exclude } : {}),
    ...(cache?.ignores !== undefined ? { ignores: cache.ignores } : {}),
    ...(cached !== undefined ? { previous: cached, reuse: (record: StatRecord) => settled(record as PictureRecord, coverage, intact) } : {}),
    ...(cache?.ignoreEpoch !== undefined ? { previousEpoch: cache.ignoreEpoch } : {}),
    ...(cache?.memo !== undefined ? { memo: cache.memo } : {}),
    ...(cache?.parallel !== undefined ? { parallel: cache.parallel } : {}),
    ...(options.readDir !== undefined ? { readDir: options.readDir } : {}),
    ...(options.changes !== undefined ? { changes: options.changes } : {}),
  });
  const root = canonicalRoot(options.projectRoot);
  const gaps: Gap[] = [...scan.gaps];
  const toCopy: StatRecord[] = [];
  let reused = 0;
  for (const stat of scan.list) if ((stat as Partial<PictureRecord>).state !== undefined) reused++;
  // Nothing changed: every record is the cache's own object for its path and none is missing, so
  // the cache's map is this picture's map (no table to build; callers can compare maps by identity).
  const unchanged = cached instanceof Map && reused === scan.list.length && reused === cached.size;
  const records: Map<string, PictureRecord> = unchanged ? (cached as Map<string, PictureRecord>) : new Map<string, PictureRecord>();

  for (const stat of unchanged ? [] : scan.list) {
    // The scan hands back the earlier record itself when its stat is unchanged and settled.
    if ((stat as Partial<PictureRecord>).state !== undefined) {
      records.set(stat.path, stat as PictureRecord);
      continue;
    }
    if (stat.type === 'symlink') {
      records.set(stat.path, withState(stat, { type: 'symlink', target: stat.target ?? '' }));
      continue;
    }
    if (coverage.isUncopiedCredential(stat.path)) {
      records.set(stat.path, withState(stat, uncopiedState('credential', stat)));
      continue;
    }
    if (stat.size > coverage.maxFileBytes) {
      records.set(stat.path, withState(stat, uncopiedState('too-large', stat)));
      continue;
    }
    const sameBlob = stillTheSameBlob(root, cached?.get(stat.path), stat);
    if (sameBlob !== undefined) {
      records.set(stat.path, withState(stat, sameBlob));
      continue;
    }
    toCopy.push(stat);
  }
  // Past the budget, clean tracked files seen for the first time rest on git at once.
  const restOnGit = orderForBudget(toCopy, root, coverage, cached);
  for (const { stat, blob } of restOnGit) records.set(stat.path, withState(stat, blobState(stat, blob)));
  const walked = scan.walked;
  const files = scan.list.length;
  // The scan's list is no longer needed; free it before the copies allocate.
  scan.list = [];
  onProgress?.({ phase: 'scan', walked, files, toCopy: toCopy.length, copied: 0 });

  let copied = 0;
  let copiedBytes = 0;
  let reservedFiles = 0;
  let reservedBytes = 0;
  const budgetStops = new Set<BudgetStop>();
  let copiedPastBudget = 0;
  /** Files recorded by their git blob id instead of a copy. */
  let onGit = restOnGit.length;
  const results: (PictureRecord | undefined)[] = new Array<PictureRecord | undefined>(toCopy.length);

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
      const blob = cleanTrackedBlob(root, stat);
      if (blob !== undefined) {
        results[index] = withState(stat, blobState(stat, blob));
        onGit += 1;
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
      ref = await store.putFile(absOf(stat), { size: stat.size, mtimeMs: stat.mtimeMs });
    } catch (error) {
      settle(index, stat, undefined, error);
      return;
    }
    settle(index, stat, ref, undefined);
  };

  // Small files first, on this thread: no promise per file, and the event loop gets a turn every
  // few milliseconds. What the store cannot take synchronously waits for the concurrent copies.
  const later: number[] = [];
  const putSync = store.putFileSync?.bind(store);
  let lastYield = performance.now();
  for (let index = 0; index < toCopy.length; index++) {
    const stat = toCopy[index] as StatRecord;
    if (putSync === undefined || stat.size > SYNC_COPY_MAX_BYTES) {
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
  for (const record of results) if (record !== undefined) records.set(record.path, record);
  results.length = 0;
  if (toCopy.length > 0) onProgress?.({ phase: 'copy', walked, files, toCopy: toCopy.length, copied });

  cache?.memo?.bind(scan.memoGeneration, records);
  const partial = scan.partial;
  return {
    ignoreEpoch: scan.ignoreEpoch,
    records,
    partial,
    gaps,
    unchecked: scan.unchecked,
    ...(scan.vouched !== undefined ? { vouched: scan.vouched } : {}),
    ...(scan.left !== undefined ? { left: scan.left } : {}),
    copied,
    copiedBytes,
    copiedPastBudget,
    ...(copiedPastBudget > 0 ? { pastBudget: `${withThousands(copiedPastBudget)} file${copiedPastBudget === 1 ? '' : 's'} git does not hold copied past the ${describeBudget(budgetStops, coverage)}: they have no other copy` } : {}),
    summary: summarize(records.size, copied, partial, scan.unchecked, scan.left),
    ignored: scan.ignored.length,
    ignoredPaths: scan.ignored,
  };
}


function canonicalRoot(projectRoot: string): string {
  // scanTree already resolved (and validated) the root; resolve the same way for copies.
  try {
    return realpathSync(projectRoot);
  } catch {
    return path.resolve(projectRoot);
  }
}


