// One walk: the fresh listing, the settled-listing reuse, the watcher-vouched reuse and the
// tracked-file pass share the loop's state (deadline, memo, counts); split apart they would pass
// a dozen variables back and forth. Its shapes live in scan-types.ts.
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import type { Gap, LeftByLimit } from '../core/model.js';
import type { FolderOutcome, PendingFolder, ScanOptions, ScanResult, UncheckedPath, UncheckedReason, VouchedChanges } from './scan-types.js';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { isTurnbackTempName } from '../fs/file-system.js';
import { isWatchmanCookieName } from '../fs/watchman-service.js';
import { PARALLEL_MIN_PATHS } from '../fs/parallel-lstat.js';
import { LISTING_SETTLE_MS, prefetchListed, type FolderMemo, type ListedBatch, type SettledListing } from './scan-memo.js';
import { entryFromBatch, folderFromBatch, fresh, lstatFolder, memoByName, readDirSync, statEntry, type StatRecord } from './stat-record.js';
import { trackedBeyondWalk, trackedUnderUnchecked } from './tracked-files.js';
import { carryIgnored, carryWhole, touchedFolders, wholeOf, type CarryContext, type WholeSubtree } from './subtree-carry.js';
import { DEFAULT_SKIPPED_FOLDERS, IgnoreStack, isIgnoredBy, type IgnoreFrame, type ResolvedCoverage } from './coverage.js';
import { withThousands } from '../core/numbers.js';
import { leftText } from '../core/left-text.js';

export { ScanMemo } from './scan-memo.js';
export type { StatRecord } from './stat-record.js';
export type { ScanOptions, ScanResult, UncheckedPath, UncheckedReason, VouchedChanges } from './scan-types.js';

const SKIPPED_WITHOUT_GIT = new Set(DEFAULT_SKIPPED_FOLDERS);
/** How many entries pass between deadline checks and event-loop yields. */
const CHECK_EVERY = 512;
const YIELD_EVERY = 4096;
const STOP_DETAIL: Record<'walk-entries' | 'time-limit', string> = {
  'walk-entries': 'the walk reached its entry limit',
  'time-limit': 'the picture ran out of time',
};

/**
 * Walks the covered tree and returns its stat index, without reading any file's content.
 *
 * Speed matters more than overlap here: on a warm cache, synchronous `readdir` + `lstat` are
 * about twice as fast as the promise API (no thread-pool hop per call), so each folder is listed
 * and statted synchronously and the loop yields to the event loop every few thousand entries so
 * an AbortSignal or a timer can still fire. A folder is checked whole or not at all: if the
 * deadline passes while its files are statted, its partial results are dropped and it is
 * reported unchecked.
 *
 * @throws CheckpointError `UNAVAILABLE` when the project root is not a readable folder;
 *   the signal's reason when aborted.
 */
export async function scanTree(projectRoot: string, coverage: ResolvedCoverage, options: ScanOptions = {}): Promise<ScanResult> {
  const { signal } = options;
  signal?.throwIfAborted();
  let root: string;
  try {
    root = nodeFs.realpathSync(projectRoot);
  } catch (error) {
    throw new CheckpointError('UNAVAILABLE', `the project folder cannot be opened: ${projectRoot}`, { cause: error });
  }
  const deadline = options.deadline ?? Date.now() + coverage.maxPictureSeconds * 1000;
  const excluded = excludedPaths(root, options.exclude ?? []);
  const ignores = options.ignores ?? new IgnoreStack();
  const readDir = options.readDir ?? readDirSync;
  const previous = options.previous;
  const reuse = options.reuse;
  const sharedPath = options.sharedPath;
  ignores.useCoverage(coverage);
  // Earlier ignore decisions hold only if no folder's rule chain changed since `previous` was taken.
  const trustPrevious = previous !== undefined && options.ignores !== undefined && options.previousEpoch === ignores.epoch;

  const list: StatRecord[] = [];
  const memo = options.memo;
  const memoStart = memo?.begin(previous, [root, ...coverage.skip, '', ...excluded].join('\0'));
  const memoFolders = memoStart?.folders;
  const nextMemo = memo !== undefined ? new Map<string, FolderMemo>() : undefined;
  // A watcher's change set is used only against the very listings `previous` was taken with.
  const trust = memoFolders !== undefined ? options.changes : undefined;
  // Carrying `previous` needs the tracked files the last walk found under ignored folders: they
  // are in no folder's records, and one no longer tracked must be dropped.
  const quiet = trust !== undefined && memoStart?.beyond !== undefined ? options.quiet : undefined;
  const dropped: string[] = [];
  // A carrying walk takes each subtree no change lies under whole (subtree-carry.ts); any other
  // walk may change records the subtree notes stand on, so it makes them stale.
  const touched = quiet !== undefined && trustPrevious ? touchedFolders(trust as VouchedChanges) : undefined;
  if (touched === undefined) memo?.forgetCarries();
  let carryContext: CarryContext | undefined;
  let takenWhole = 0;
  const carriedSubtrees: WholeSubtree[] = [];
  /** Folders of the last walk this one visited and kept (with `takenWhole`: all of them, or some were lost). */
  let keptVisited = 0;
  const batch = trust === undefined && memoFolders !== undefined && options.parallel?.parallel === true ? await prefetchListed(root, memoFolders, options.parallel) : undefined;
  signal?.throwIfAborted();
  const unchecked: UncheckedPath[] = [];
  const gaps: Gap[] = [];
  const tooDeep: string[] = [];
  let walked = 0;
  const ignored: string[] = [];
  let sinceYield = 0;
  let isRepository = false;
  let relisted = false;
  let stopped: 'walk-entries' | 'time-limit' | undefined;
  const pending: PendingFolder[] = [{ abs: root, rel: '', depth: 0, frame: undefined, trusted: trust !== undefined }];

  const leaveUnchecked = (folder: PendingFolder, reason: UncheckedReason, detail?: string): void => {
    const shown = folder.rel === '' ? '.' : folder.rel;
    unchecked.push({ path: shown, reason });
    if (detail !== undefined) gaps.push({ path: shown, reason, detail });
  };

  while (pending.length > 0) {
    const folder = pending.pop() as PendingFolder;
    if (signal?.aborted === true) signal.throwIfAborted();
    if (Date.now() > deadline) {
      stopped = 'time-limit';
      pending.push(folder);
      break;
    }
    if (folder.depth > coverage.maxDepth) {
      unchecked.push({ path: folder.rel, reason: 'too-deep' });
      tooDeep.push(folder.rel);
      continue;
    }
    const known = memoFolders?.get(folder.rel);
    if (touched !== undefined && known !== undefined) {
      if (folder.frameSame === true && folder.trusted && !touched.has(folder.rel)) {
        carryContext ??= { folders: memoFolders as Map<string, FolderMemo>, quiet: quiet as (record: StatRecord) => boolean, quietEpoch: options.quietEpoch, isRepository, epochs: `${memo?.carryEpoch}\u0000${options.quietEpoch ?? ''}\u0000${isRepository}` };
        const whole = wholeOf(folder.rel, known, carryContext);
        // Past the walk limit it is walked folder by folder, to stop where a sweep stops.
        if (whole !== undefined && walked + whole.entries <= coverage.maxWalkEntries) {
          carriedSubtrees.push(whole);
          carryIgnored(whole, ignored);
          walked += whole.entries;
          takenWhole += whole.folders;
          continue;
        }
      }
      // Visited: what it holds may change, and with it what is true of the subtrees above it.
      known.whole = undefined;
    }
    const prefix = folder.rel === '' ? '' : `${folder.rel}/`;
    // The folder's own stat: it decides whether a settled listing still holds, and is kept with a
    // new listing. A folder that cannot be statted is simply listed (and fails there if it must).
    const batchAt = known !== undefined ? batch?.at.get(known) : undefined;
    // A folder the watcher vouches for (trusted, and no change named it or an entry in it) is as listed.
    const clean = folder.trusted && known?.listing !== undefined && trust?.dirty.has(folder.rel) === false;
    const folderSeen = clean ? (known.listing as SettledListing) : batch !== undefined && batchAt !== undefined ? folderFromBatch(batch.stats, batchAt) : lstatFolder(folder.abs);
    // Replaced by a link or a file since its parent was listed: never listed through (a link
    // would lead out of the project). The parent's next listing records what is there now.
    if (folderSeen === 'not-folder' && folder.rel !== '') continue;
    const folderStat = folderSeen === 'not-folder' ? undefined : folderSeen;
    let outcome: FolderOutcome | 'stale' | 'timed-out' = 'stale';
    // The rules check of an attempt to reuse the listing: the frame is noted once per scan.
    let attempted: { same: boolean } | undefined;
    if (
      known?.listing !== undefined &&
      (known.listing.settled || clean) &&
      folderStat !== undefined &&
      folderStat.mtimeMs === known.listing.mtimeMs &&
      folderStat.ino === known.listing.ino &&
      (folder.depth === 0 || known.listing.inRepository === isRepository)
    ) {
      const listing = known.listing;
      if (walked + listing.entries > coverage.maxWalkEntries) {
        stopped = 'walk-entries';
        pending.push(folder);
        break;
      }
      const loaded = listing.hasGitignore ? ignores.load(folder.frame, folder.rel, folder.abs) : { ok: true as const, frame: folder.frame };
      if (loaded.ok) {
        const same = ignores.noteFrame(folder.rel, loaded.frame);
        attempted = { same };
        // Rules that changed may cover different names: only a fresh listing can tell.
        if (same && trustPrevious) {
          if (folder.depth === 0) isRepository = listing.hasGit;
          outcome = reuseListing(folder, known, loaded.frame, prefix, batchAt, clean);
          if (outcome !== 'stale' && outcome !== 'timed-out') walked += listing.entries;
        }
      }
    }
    if (outcome === 'stale') {
      const listedAt = Date.now();
      let dirents: nodeFs.Dirent[];
      try {
        dirents = readDir(folder.abs);
      } catch (error) {
        const code = errnoCode(error);
        // A folder deleted or replaced since its parent was listed is simply gone now.
        if (folder.rel !== '' && (code === 'ENOENT' || code === 'ENOTDIR')) continue;
        if (folder.rel === '') {
          throw new CheckpointError('UNAVAILABLE', `the project folder cannot be listed: ${root}`, { cause: error });
        }
        leaveUnchecked(folder, 'unreadable', `${folder.rel}/ cannot be listed (${code ?? 'error'})`);
        continue;
      }
      if (walked + dirents.length > coverage.maxWalkEntries) {
        stopped = 'walk-entries';
        pending.push(folder);
        break;
      }
      walked += dirents.length;
      const hasGit = dirents.some((d) => d.name === '.git');
      if (folder.depth === 0) isRepository = hasGit;
      let frame = folder.frame;
      const hasGitignore = dirents.some((d) => d.name === '.gitignore');
      if (hasGitignore) {
        const loaded = ignores.load(frame, folder.rel, folder.abs);
        if (!loaded.ok) {
          leaveUnchecked(folder, 'gitignore-unusable', `${loaded.detail}; ${folder.rel === '' ? 'the project' : `${folder.rel}/`} is not checked`);
          continue;
        }
        frame = loaded.frame;
      }
      // Same chain object as the last scan (frames are reused while rules are unchanged). After an
      // attempt to reuse the listing, the chain was noted already: both checks must hold.
      const sameRules = ignores.noteFrame(folder.rel, frame) && (attempted === undefined || attempted.same) && trustPrevious;
      // Under a folder made anew, renamed in, or not the one listed before, nothing is vouched for.
      const childrenTrusted = folder.trusted && known?.listing !== undefined && folderStat?.ino === known.listing.ino && trust?.replaced.has(folder.rel) === false;
      outcome = listFolder(folder, dirents, known, frame, sameRules, prefix, childrenTrusted, batchAt);
      relisted = true;
      if (outcome !== 'timed-out' && outcome.problems.length === 0 && outcome.memo !== undefined && folderStat !== undefined) {
        outcome.memo.listing = {
          settled: folderStat.mtimeMs < listedAt - LISTING_SETTLE_MS,
          mtimeMs: folderStat.mtimeMs,
          ino: folderStat.ino,
          entries: dirents.length,
          subfolders: outcome.subfolders.map((sub) => sub.rel.slice(prefix.length)),
          hasGitignore,
          hasGit,
          inRepository: isRepository,
        };
      }
    }
    if (outcome === 'timed-out') {
      stopped = 'time-limit';
      pending.push(folder);
      break;
    }
    for (const record of outcome.found) list.push(record);
    for (const hidden of outcome.ignored) ignored.push(hidden);
    if (nextMemo !== undefined && outcome.memo !== undefined) {
      nextMemo.set(folder.rel, outcome.memo);
      if (known !== undefined) keptVisited++;
    }
    for (const problem of outcome.problems) {
      unchecked.push(problem);
      gaps.push({
        path: problem.path,
        reason: problem.reason,
        detail: problem.reason === 'unreadable-name' ? `${problem.path}: name is not valid UTF-8` : `${problem.path} cannot be read`,
      });
    }
    // Pushed in reverse so the stack pops them in listing order.
    const subfolders = outcome.subfolders;
    for (let i = subfolders.length - 1; i >= 0; i--) pending.push(subfolders[i] as PendingFolder);

    sinceYield += outcome.found.length + subfolders.length;
    if (sinceYield >= YIELD_EVERY) {
      sinceYield = 0;
      ignores.trimCaches();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Takes a folder's entries from its settled listing: its covered files statted again, its
   * subfolders walked again. Anything that contradicts the listing (a file gone, or another
   * kind of entry now) makes it 'stale', and the folder is listed after all.
   */
  function reuseListing(folder: PendingFolder, known: FolderMemo, frame: IgnoreFrame | undefined, prefix: string, batchAt: number | undefined, clean: boolean): FolderOutcome | 'stale' | 'timed-out' {
    const listing = known.listing as SettledListing;
    const found: StatRecord[] = [];
    const changedAt: number[] = [];
    const changedTo: StatRecord[] = [];
    const records = known.records;
    const subfolders = listing.subfolders.map((name) => ({ abs: `${folder.abs}${path.sep}${name}`, rel: prefix + name, depth: folder.depth + 1, frame, trusted: folder.trusted && trust?.replaced.has(prefix + name) === false, frameSame: true }));
    // No change named the folder or an entry in it, and no record needs attention: reusing each
    // record would hand back that very record, so the picture carries them without a list.
    if (clean && quiet !== undefined) {
      if (known.quiet === undefined || known.quietEpoch !== options.quietEpoch) {
        known.quiet = records.every((record) => record === undefined || quiet(record));
        known.quietEpoch = options.quietEpoch;
      }
      if (known.quiet) return { found: [], subfolders, problems: [], memo: nextMemo !== undefined ? known : undefined, ignored: known.ignored ?? [] };
    }
    for (let i = 0; i < records.length; i++) {
      const earlier = records[i];
      if (earlier === undefined) continue;
      if (found.length % CHECK_EVERY === CHECK_EVERY - 1 && Date.now() > deadline) return 'timed-out';
      // The batch holds the folder, then its records in this same order.
      const record =
        clean && !(trust as VouchedChanges).paths.has(earlier.path)
          ? asVouched(earlier)
          : batch !== undefined && batchAt !== undefined
            ? entryFromBatch(batch.stats, batchAt + 1 + found.length, root, earlier, reuse)
            : statEntry(`${root}${path.sep}${earlier.path}`, '', earlier.path, earlier, reuse);
      if (typeof record === 'string' || record.type !== earlier.type) return 'stale';
      found.push(record);
      if (record !== earlier) {
        changedAt.push(i);
        changedTo.push(record);
      }
    }
    // Only now, with the whole folder read, does the memo take the new records.
    for (let k = 0; k < changedAt.length; k++) records[changedAt[k] as number] = changedTo[k];
    if (changedAt.length > 0) {
      known.byName = undefined;
      known.quiet = undefined;
    }
    return { found, subfolders, problems: [], memo: nextMemo !== undefined ? known : undefined, ignored: known.ignored ?? [] };
  }

  /** An unchanged file the watcher vouches for: the record itself, or a new one with its stat when `reuse` refuses it. */
  function asVouched(earlier: StatRecord): StatRecord {
    if (reuse === undefined || reuse(earlier)) return earlier;
    return fresh(earlier.path, earlier.type, earlier.size, earlier.mode, earlier.mtimeMs, earlier.ino, earlier.target);
  }

  /** Reads a folder's fresh listing: ignore rules matched, every covered entry statted. */
  function listFolder(
    folder: PendingFolder,
    dirents: nodeFs.Dirent[],
    known: FolderMemo | undefined,
    frame: IgnoreFrame | undefined,
    sameRules: boolean,
    prefix: string,
    childrenTrusted: boolean,
    batchAt: number | undefined,
  ): FolderOutcome | 'timed-out' {
    const found: StatRecord[] = [];
    const subfolders: PendingFolder[] = [];
    const problems: UncheckedPath[] = [];
    const memoRecords: (StatRecord | undefined)[] | undefined = nextMemo !== undefined ? new Array<StatRecord | undefined>(dirents.length) : undefined;
    const ignoredHere: string[] = [];
    // What the folder held may be gone: the picture drops each such path the listing does not give again.
    if (quiet !== undefined && known !== undefined) for (const record of known.records) if (record !== undefined) dropped.push(record.path);
    // The batch holds the folder, then the stat of each record of its last listing in order.
    let batchNext = batch !== undefined && batchAt !== undefined && known !== undefined ? batchAt + 1 : -1;
    for (let i = 0; i < dirents.length; i++) {
      const slotAt = batchNext >= 0 && (known as FolderMemo).records[i] !== undefined ? batchNext++ : -1;
      const dirent = dirents[i] as nodeFs.Dirent;
      const name = dirent.name;
      if (name === '.git' || isTurnbackTempName(name)) continue;
      // watchman's cookie files (turnback's service makes them at the root, each for one query;
      // someone else's service may too): never the user's files, never pictured.
      if (folder.depth === 0 && isWatchmanCookieName(name)) continue;
      if (dirent.isDirectory()) {
        const rel = prefix + name;
        if (excluded.size > 0 && excluded.has(rel)) continue;
        if ((!isRepository && SKIPPED_WITHOUT_GIT.has(name)) || coverage.isSkipped(rel, true) || isIgnoredBy(frame, rel, true)) {
          ignoredHere.push(`${rel}/`);
          continue;
        }
        subfolders.push({ abs: `${folder.abs}${path.sep}${name}`, rel, depth: folder.depth + 1, frame, trusted: childrenTrusted && trust?.replaced.has(rel) === false, frameSame: sameRules });
        continue;
      }
      // The dirent type only filters; the lstat in statEntry decides what is recorded.
      if (!dirent.isSymbolicLink() && !dirent.isFile()) continue;
      // The earlier record: by listing position from the memo, else by full path.
      let earlier: StatRecord | undefined;
      let rel: string | undefined;
      if (known !== undefined) {
        // The record's path ends with its name, so no name list is kept beside it.
        const atSamePlace = known.records[i];
        if (atSamePlace !== undefined && atSamePlace.path.length === prefix.length + name.length && atSamePlace.path.endsWith(name)) earlier = atSamePlace;
        else {
          known.byName ??= memoByName(known.records, prefix.length);
          earlier = known.byName.get(name);
        }
      } else if (previous !== undefined) {
        rel = prefix + name;
        earlier = previous.get(rel);
      }
      // Found where the last listing of this folder put it: its ignore decision still holds.
      const listedBefore = earlier !== undefined;
      if (earlier === undefined && known !== undefined && previous !== undefined) {
        // Not in the folder's last listing, yet in the last picture: a tracked file the ignore
        // rules hid then (pictured by its index entry). Its record is reused as a sweep would; its
        // ignore decision is made again below.
        rel = prefix + name;
        earlier = previous.get(rel);
      }
      if (!(sameRules && listedBefore)) {
        rel ??= prefix + name;
        if (excluded.size > 0 && excluded.has(rel)) continue;
        if (coverage.isSkipped(rel, false) || isIgnoredBy(frame, rel, false)) {
          ignoredHere.push(rel);
          continue;
        }
      }
      if (i % CHECK_EVERY === CHECK_EVERY - 1 && Date.now() > deadline) return 'timed-out';
      // The batch's stat of the name the last listing had here, taken moments before the names were
      // read: as good a stat of this scan as one taken now. A name the batch did not find is new.
      const batched = slotAt >= 0 && earlier !== undefined && earlier === (known as FolderMemo).records[i] ? entryFromBatch((batch as ListedBatch).stats, slotAt, root, earlier, reuse) : undefined;
      const record = batched !== undefined && typeof batched !== 'string' ? batched : statEntry(`${folder.abs}${path.sep}${name}`, prefix, name, earlier, reuse);
      if (typeof record === 'string') {
        if (record === 'gone') continue;
        problems.push({ path: prefix + name, reason: record });
        continue;
      }
      // A fresh record's path promoted with it would be garbage once the picture takes the
      // index's string for it (a first picture of a big tree: ~20 MiB at 250,000 files).
      if (sharedPath !== undefined && record !== earlier) record.path = sharedPath(record.path);
      found.push(record);
      if (memoRecords !== undefined) memoRecords[i] = record;
    }
    return { found, subfolders, problems, memo: memoRecords !== undefined ? { records: memoRecords, ignored: ignoredHere } : undefined, ignored: ignoredHere };
  }
  // Files git tracks are covered whatever the ignore rules say (not when the walk stopped early).
  const beyond: string[] = [];
  if (isRepository && stopped === undefined) {
    for (const record of trackedBeyondWalk(root, ignored, { isSkipped: coverage.isSkipped, excluded, unchecked: new Set(unchecked.map((u) => u.path)), ...(previous !== undefined ? { previous } : {}), ...(reuse !== undefined ? { reuse } : {}) })) {
      list.push(record);
      beyond.push(record.path);
    }
  }
  // A carrying walk that kept every folder of the last one (each visited or carried whole) changes
  // the memo in place: the folders it visited replace theirs, the rest stand as they are.
  const keptAll = touched !== undefined && stopped === undefined && memoFolders !== undefined && keptVisited + takenWhole === memoFolders.size;
  if (quiet !== undefined && !keptAll) {
    for (const whole of carriedSubtrees) carryWhole(whole, nextMemo);
    // Folders of the last walk this one did not keep (gone, left unchecked, not reached): their records are gone from the picture.
    for (const [rel, known] of memoFolders as Map<string, FolderMemo>) if (nextMemo?.has(rel) !== true) for (const record of known.records) if (record !== undefined) dropped.push(record.path);
  }
  if (quiet !== undefined) {
    for (const p of memoStart?.beyond ?? []) dropped.push(p);
  }
  let vouched: Set<string> | undefined;
  let left: LeftByLimit | undefined;
  if (stopped !== undefined) {
    const reason = stopped;
    const folders = pending.map((folder) => folder.rel);
    // In a repository, the files git tracks under the folders left are statted by the index's
    // paths, so the limit leaves only untracked files unknown (and a dirty tracked file, whose
    // bytes exist nowhere else, is pictured all the same). Asked of the index even when the
    // root listing did not say "repository": the walk may have stopped before listing the root.
    let tracked: { pictured: number; missed: number } | undefined;
    const beyond = trackedUnderUnchecked(root, folders, { isSkipped: coverage.isSkipped, excluded, unchecked: new Set(unchecked.map((u) => u.path)), deadline, ...(previous !== undefined ? { previous } : {}), ...(reuse !== undefined ? { reuse } : {}) });
    if (beyond !== undefined) {
      for (const record of beyond.records) list.push(record);
      vouched = beyond.vouched;
      tracked = { pictured: beyond.records.length, missed: beyond.missed };
    }
    for (const folder of pending) unchecked.push({ path: folder.rel === '' ? '.' : folder.rel, reason });
    left = { reason, folders: pending.length, ...(tracked !== undefined ? { trackedPictured: tracked.pictured, trackedMissed: tracked.missed } : {}) };
    const limit = reason === 'walk-entries' ? `${withThousands(coverage.maxWalkEntries)} entries` : `${coverage.maxPictureSeconds} s`;
    gaps.push({ reason, detail: `${STOP_DETAIL[reason]} (${limit}); ${leftText(left)}` });
  }
  if (tooDeep.length > 0) {
    gaps.push({
      path: tooDeep[0] as string,
      reason: 'too-deep',
      detail: `${withThousands(tooDeep.length)} folder${tooDeep.length === 1 ? '' : 's'} deeper than ${coverage.maxDepth} levels not checked`,
    });
  }
  ignores.trimCaches();
  // Only repeat scans count toward starting the helper: a first picture of a big tree copies
  // every file and peaks in memory, and a thread booting beside it (about 10 MB) measured 10–25 MB
  // higher peaks; a one-off pair of pictures (`turnback run`) never needs it.
  // A memo an earlier process left makes this process's first scan no repeat of its own.
  if (options.parallel !== undefined && trust === undefined && memoFolders !== undefined && memoStart?.restored !== true && list.length >= PARALLEL_MIN_PATHS) options.parallel.noteRepeatScan();
  const memoGeneration = memo !== undefined && memoStart !== undefined && nextMemo !== undefined && (keptAll ? memo.endKeeping(memoStart.generation, memoFolders, nextMemo, relisted, beyond) : memo.end(memoStart.generation, nextMemo, relisted, beyond)) ? memoStart.generation : undefined;
  let entries: Map<string, StatRecord> | undefined;
  return {
    list,
    get entries(): Map<string, StatRecord> {
      entries ??= new Map(list.map((r) => [r.path, r]));
      return entries;
    },
    unchecked,
    gaps,
    partial: unchecked.length > 0,
    ...(vouched !== undefined ? { vouched } : {}),
    ...(left !== undefined ? { left } : {}),
    walked,
    ignored,
    ignoreEpoch: ignores.epoch,
    memoGeneration,
    ...(quiet !== undefined ? { carried: { dropped, wholeFolders: takenWhole } } : {}),
  };
}

function excludedPaths(root: string, exclude: readonly string[]): Set<string> {
  const result = new Set<string>();
  for (const item of exclude) {
    let absolute = path.resolve(item);
    try {
      absolute = nodeFs.realpathSync(absolute);
    } catch {
      // Not there yet: compare as spelled.
    }
    const rel = path.relative(root, absolute);
    if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
    result.add(rel.split(path.sep).join('/'));
  }
  return result;
}
