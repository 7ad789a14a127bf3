// Over ~450 lines: one job — taking a picture (the walk's options, the reuse and quiet rules it
// asks per record, the copies and the summary) — whose helpers share its record shape and rules.
import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Gap, LeftByLimit, PathState } from '../core/model.js';
import type { ParallelLstat } from '../fs/parallel-lstat.js';
import type { IgnoreStack, ResolvedCoverage } from './coverage.js';
import { scanTree, type ScanMemo, type ScanOptions, type ScanResult, type StatRecord, type UncheckedPath } from './scan.js';
import { FileRecord } from './stat-record.js';
import { withThousands } from '../core/numbers.js';
import { leftText } from '../core/left-text.js';
import { gitBlobIdOf, isGitObjectKey } from '../core/git-blob.js';
import { orderForBudget, restingCheck, stillTheSameBlob } from './picture-coverage.js';
import { indexKeyOf, trackedPathSharer } from './tracked-files.js';
import { copyFiles, describeBudget, uncopiedState, withState } from './picture-copy.js';
import { LayeredRecords, flattenedIfLarge } from './layered-records.js';
import { noteChange } from './picture-change.js';

export { pictureChange, type PictureChange } from './picture-change.js';

/**
 * The store calls a picture needs to copy files. {@link pictureStoreOf} makes one over the
 * checkpoint store; tests pass a small fake.
 */
/**
 * A store's copy check for one picture (`CheckpointStore.copyCheck`): true when a stored copy is
 * good. With an `epoch` (the store's copy epoch when the check began: while it lasts, no pack copy
 * seen good since changed), `unchanged` (the epoch still lasts) and `looseSince` (the keys handed
 * out or confirmed resting on loose files since the check began, which no epoch covers), a picture
 * whose copies were all seen good lets the next picture reuse them without asking per copy.
 */
export interface PictureCopyCheck {
  (object: string): boolean;
  readonly epoch?: number;
  unchanged?(): boolean;
  looseSince?(): readonly string[] | undefined;
}

/**
 * What a picture's map vouches for (see {@link PictureCopyCheck}): every stored copy its records
 * name was seen good (checked, written, or compared byte for byte) in copy epoch `epoch`, those on
 * loose files being `loose`. Kept by the map object, so a picture handed on in the process (the
 * next command's, a kept picture) carries it; a map loaded from disk has none.
 */
const vouchedCopies = new WeakMap<ReadonlyMap<string, PictureRecord>, { epoch: number; loose: ReadonlySet<string> }>();


/**
 * True when every stored copy `records` names is still vouched for by `check`: the map's copies
 * were all seen good in the copy epoch `check` began in, which still lasts, and its loose copies
 * still check out. A store without a copy check (`check` undefined) has nothing to vouch. The
 * watcher's "nothing changed" hands the last picture on only while this holds: a copy damaged in
 * the store since then must be copied again from the file, which is still intact (issue #27).
 */
export function copiesStillVouched(records: ReadonlyMap<string, PictureRecord>, check: PictureCopyCheck | undefined): boolean {
  if (check === undefined) return true;
  const claim = vouchedCopies.get(records);
  if (claim === undefined || check.epoch === undefined || claim.epoch !== check.epoch) return false;
  for (const object of claim.loose) if (!check(object)) return false;
  return true;
}

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
  checkCopies?(): Promise<PictureCopyCheck>;
  /**
   * Optional: the copy calls of one picture as a batch (the store writes small files together,
   * compressed as blocks). The picture calls `end` once its copies are done, before it returns
   * any record: the objects it names are in the store from then on, except the ones `end` names,
   * whose files the picture records as not copied.
   */
  batch?(): PictureCopies;
}

/** A picture's copy calls as one batch (see {@link PictureStore.batch}). */
export interface PictureCopies extends Pick<PictureStore, 'putFile' | 'putFileSync'> {
  /** The largest file `putFileSync` takes (the batch keeps the files of a folder together, in walk order). @default 256 KiB */
  syncMaxBytes?: number;
  /** Writes what waits; resolves with the objects that could not be written, and why. Never rejects. */
  end(): Promise<ReadonlyMap<string, unknown>>;
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
   * free, and a later picture can tell which were deleted though neither copied them. Not in the
   * stat cache; a call's baseline keeps them (`CallBaseline.ignored`).
   */
  ignoredPaths?: readonly string[];
  /** Folders a change-set walk took with their whole subtree, unvisited: no change lay under them (subtree-carry.ts). */
  foldersTakenWhole?: number;
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

/**
 * Takes a whole-tree picture: walks the covered tree ({@link scanTree}), reuses the cached state
 * of every file whose (size, mtime, inode, mode) is unchanged, and copies the rest into the store
 * within the picture's budgets. Credential files and files over `maxFileMib` are recorded, never
 * read. The budgets govern only files git holds: a clean tracked file past them is recorded by its
 * blob id (the store copies it in outside pictures: `CheckpointStore.copyGitBlobsIn`); every other file is copied past them, since its bytes
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
  // Asked even with nothing to reuse: its epoch is what this picture's copies are vouched in.
  const check = await store.checkCopies?.();
  const intact = cached !== undefined && cached.size > 0 ? check : undefined;
  // The last picture's copies need no check while the epoch they were seen good in lasts (and
  // its loose files still check out): a reused record that is that picture's own skips the check.
  const claim = cached !== undefined && check?.epoch !== undefined ? vouchedCopies.get(cached) : undefined;
  const vouched = claim !== undefined && claim.epoch === check?.epoch && [...claim.loose].every((object) => (check as PictureCopyCheck)(object)) ? cached : undefined;
  // Taken before the index is read for `heldByGit`: if the index changes between the two, the
  // folders found quiet are marked with the older identity and asked again next time.
  const indexEpoch = indexKeyOf(canonicalRoot(options.projectRoot));
  const heldByGit = restingCheck(canonicalRoot(options.projectRoot));
  const scan = await scanTree(options.projectRoot, coverage, {
    deadline,
    sharedPath: trackedPathSharer(canonicalRoot(options.projectRoot)),
    ...(signal !== undefined ? { signal } : {}),
    ...(options.exclude !== undefined ? { exclude: options.exclude } : {}),
    ...(cache?.ignores !== undefined ? { ignores: cache.ignores } : {}),
    ...(cached !== undefined ? { previous: cached, reuse: (record: StatRecord) => settled(record as PictureRecord, coverage, vouched !== undefined && vouched.get(record.path) === record ? undefined : intact, heldByGit) } : {}),
    ...(cache?.ignoreEpoch !== undefined ? { previousEpoch: cache.ignoreEpoch } : {}),
    ...(cache?.memo !== undefined ? { memo: cache.memo } : {}),
    ...(cache?.parallel !== undefined ? { parallel: cache.parallel } : {}),
    ...(options.readDir !== undefined ? { readDir: options.readDir } : {}),
    ...(options.changes !== undefined ? { changes: options.changes } : {}),
    // Every copy of the vouched map still checks out, so a record of it that is quiet is reused as is.
    ...(vouched !== undefined && cached instanceof Map ? { quiet: (record: StatRecord) => quietRecord(record) || quietOnGit(record as PictureRecord, heldByGit), quietEpoch: indexEpoch } : {}),
  });
  const root = canonicalRoot(options.projectRoot);
  const gaps: Gap[] = [...scan.gaps];
  const toCopy: StatRecord[] = [];
  let reused = 0;
  for (const stat of scan.list) if ((stat as Partial<PictureRecord>).state !== undefined) reused++;
  // Nothing changed: every record is the cache's own object for its path and none is missing, so
  // the cache's map is this picture's map (no table to build; callers can compare maps by identity).
  const unchanged = cached instanceof Map && reused === scan.list.length && (scan.carried !== undefined ? scan.carried.dropped.length === 0 && scan.list.every((stat) => cached.get(stat.path) === stat) : reused === cached.size);
  const carried = scan.carried !== undefined && cached instanceof Map ? scan.carried : undefined;
  // A walk that carried the last map gives only what it looked at: the rest is that map's, read
  // through a layer (never written to: it stays the baseline of an open call).
  let records: Map<string, PictureRecord> = unchanged ? (cached as Map<string, PictureRecord>) : carried !== undefined ? new LayeredRecords(cached as Map<string, PictureRecord>) : new Map<string, PictureRecord>();

  // The paths whose record may not be the cache's own object, and how many of the cache's paths
  // the new map holds (fewer than the cache has: some were removed).
  const touched: string[] = [];
  let kept = 0;
  // Over an empty cache (a store's first picture) every path is new: no list of them is kept
  // (it held the scan's own copy of every path through the record pass, ~20 MiB at 250,000 files).
  const earlier = cached instanceof Map && (cached.size > 0 || carried !== undefined) ? (cached as ReadonlyMap<string, PictureRecord>) : undefined;
  for (const stat of unchanged ? [] : scan.list) {
    // The scan hands back the earlier record itself when its stat is unchanged and settled.
    if ((stat as Partial<PictureRecord>).state !== undefined) {
      if (carried !== undefined) {
        if ((earlier as ReadonlyMap<string, PictureRecord>).get(stat.path) !== stat) {
          records.set(stat.path, stat as PictureRecord);
          touched.push(stat.path);
        }
        continue;
      }
      records.set(stat.path, stat as PictureRecord);
      if (earlier !== undefined) {
        if (earlier.get(stat.path) === stat) kept++;
        else {
          touched.push(stat.path);
          if (earlier.has(stat.path)) kept++;
        }
      }
      continue;
    }
    if (earlier !== undefined) {
      touched.push(stat.path);
      if (earlier.has(stat.path)) kept++;
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
  for (const record of restOnGit) records.set(record.path, record);
  const walked = scan.walked;
  const files = scan.list.length;
  // The scan's list is no longer needed; free it before the copies allocate (a carried walk's is short, and names what it found).
  const listed = carried !== undefined ? scan.list : [];
  scan.list = [];
  onProgress?.({ phase: 'scan', walked, files, toCopy: toCopy.length, copied: 0 });

  const { results, copied, copiedBytes, copiedPastBudget, budgetStops } = await copyFiles({
    store,
    root,
    coverage,
    deadline,
    toCopy,
    gaps,
    ...(signal !== undefined ? { signal } : {}),
    ...(onProgress !== undefined ? { onProgress } : {}),
    walked,
    files,
  });
  for (const record of results) if (record !== undefined) records.set(record.path, record);
  results.length = 0;
  if (toCopy.length > 0) onProgress?.({ phase: 'copy', walked, files, toCopy: toCopy.length, copied });

  if (carried !== undefined && !unchanged && carried.dropped.length > 0) {
    const found = new Set<string>();
    for (const stat of listed) found.add(stat.path);
    for (const p of carried.dropped) if (!found.has(p) && records.delete(p)) touched.push(p);
  }
  if (carried !== undefined && !unchanged && touched.length === 0) {
    // Nothing differs from the last map after all: it is this picture's map, as when the walk found nothing.
    records = cached as Map<string, PictureRecord>;
  } else if (carried !== undefined && !unchanged) {
    records = flattenedIfLarge(records);
    noteChange(records, { from: earlier as ReadonlyMap<string, PictureRecord>, paths: touched });
  } else if (earlier !== undefined && !unchanged) {
    if (kept < earlier.size) earlier.forEach((_record, p) => void (records.has(p) || touched.push(p)));
    noteChange(records, { from: earlier, paths: touched });
  }
  cache?.memo?.bind(scan.memoGeneration, records);
  // Every copy this map names was seen good in the epoch the check began in, if it still lasts:
  // reused ones checked (or vouched by the last map), new ones written or compared to the bytes.
  const loose = check?.epoch !== undefined && check.unchanged?.() === true ? check.looseSince?.() : undefined;
  if (check?.epoch !== undefined && loose !== undefined) vouchedCopies.set(records, { epoch: check.epoch, loose: new Set(vouched !== undefined && claim !== undefined ? [...claim.loose, ...loose] : loose) });
  else vouchedCopies.delete(records);
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
    ...(scan.carried !== undefined && scan.carried.wholeFolders > 0 ? { foldersTakenWhole: scan.carried.wholeFolders } : {}),
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

/**
 * True for a record whose unchanged stat is all a later picture needs while its map's copies are
 * vouched for ({@link ScanOptions.quiet}): a stored copy of its bytes (not git's blob: that rests
 * on git's index: {@link quietOnGit}) or a symlink. Any other (uncopied) is looked at every picture.
 */
function quietRecord(stat: StatRecord): boolean {
  if (stat instanceof FileRecord && stat.repeatsStat) return !isGitObjectKey(stat.objectKey);
  const state = (stat as Partial<PictureRecord>).state;
  if (state === undefined) return false;
  if (state.type === 'symlink') return true;
  return state.type === 'file' && state.size === stat.size && gitBlobIdOf(state.object) === undefined;
}

/**
 * True for a record resting on git's blob that git's index still names, clean (`heldByGit`): its
 * unchanged stat is all a later picture needs while the index stays the same one
 * ({@link ScanOptions.quietEpoch} is the index's identity).
 */
function quietOnGit(record: PictureRecord, heldByGit: (record: PictureRecord) => boolean): boolean {
  if (record instanceof FileRecord && record.repeatsStat) return isGitObjectKey(record.objectKey) && heldByGit(record);
  const state = record.state;
  return state?.type === 'file' && state.size === record.size && gitBlobIdOf(state.object) !== undefined && heldByGit(record);
}

/**
 * True when an unchanged earlier record may stand as is: a stored copy (that checks out), a symlink, or a file that
 * is still not copied for a reason its unchanged stat cannot change. Files left by a budget or a
 * failed copy are tried again.
 */
function settled(record: PictureRecord, coverage: ResolvedCoverage, intact?: (object: string) => boolean, heldByGit?: (record: PictureRecord) => boolean): boolean {
  // Asked of every unchanged record of a sweep: a file state kept by its key (most records) is
  // answered from the key, without making the state object, by the rules of the 'file' case below.
  if (record instanceof FileRecord && record.repeatsStat) {
    const key = record.objectKey as string;
    return isGitObjectKey(key) ? heldByGit?.(record) === true : intact === undefined || intact(key);
  }
  const state = record.state;
  switch (state.type) {
    case 'file':
      // A file resting on git's blob stays so while git's index still names that blob for it: the
      // store copies the blob in outside any picture (store/git-copies.ts). A copy found missing
      // or damaged is never pointed at again: the file is copied anew.
      if (gitBlobIdOf(state.object) !== undefined) return state.size === record.size && heldByGit?.(record) === true;
      return state.size === record.size && (intact === undefined || intact(state.object));
    case 'symlink':
      return true;
    case 'uncopied':
      return (state.reason === 'credential' && !coverage.copyCredentials) || (state.reason === 'too-large' && record.size > coverage.maxFileBytes);
    default:
      return false;
  }
}

const UNCHECKED_WORDS: Record<UncheckedPath['reason'], string> = {
  unreadable: 'unreadable',
  'unreadable-name': 'unreadable name',
  'gitignore-unusable': '.gitignore unusable',
  'too-deep': 'too deep',
  'walk-entries': 'walk limit',
  'time-limit': 'time limit',
};

/** Builds the one-line summary: what was copied, and the folders a limit left unchecked. */
function summarize(total: number, copied: number, partial: boolean, unchecked: UncheckedPath[], left: LeftByLimit | undefined): string {
  if (!partial) return `checkpoint: ${withThousands(total)} file${total === 1 ? '' : 's'}, ${withThousands(copied)} copied`;
  const parts: string[] = [];
  parts.push(`${withThousands(copied)} copied`);
  let sentence = `checkpoint partial: ${parts.join(', ')}`;
  if (unchecked.length > 0) {
    // One clause per reason, so a walk stopped with 800 folders left stays one readable line.
    const byReason = new Map<UncheckedPath['reason'], string[]>();
    for (const u of unchecked) {
      const list = byReason.get(u.reason) ?? [];
      list.push(u.path === '.' ? 'the project' : `${u.path}/`);
      byReason.set(u.reason, list);
    }
    const clauses = [...byReason].map(([reason, list]) =>
      list.length === 1 ? `${list[0]} (${UNCHECKED_WORDS[reason]})` : `${withThousands(list.length)} folders (${UNCHECKED_WORDS[reason]}) such as ${list[0]}`,
    );
    sentence += `; not checked: ${clauses.join(', ')}`;
  }
  if (left !== undefined) sentence += ` — ${leftText(left)}`;
  return sentence;
}
