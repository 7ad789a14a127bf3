import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import type { Gap } from '../core/model.js';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { isTurnbackTempName } from '../fs/file-system.js';
import { DEFAULT_SKIPPED_FOLDERS, IgnoreStack, isIgnoredBy, type IgnoreFrame, type ResolvedCoverage } from './coverage.js';

/** The stat index entry of one covered path. Compact on purpose: a picture holds one per file. */
export interface StatRecord {
  /** Project-relative, `/`-separated. */
  path: string;
  /** Regular file or symlink; nothing else is covered. */
  type: 'file' | 'symlink';
  /** Size in bytes (for a symlink, the length of its target). */
  size: number;
  /** Permission bits (`st_mode & 0o7777`). */
  mode: number;
  /** Modification time in nanoseconds since the epoch, as a decimal string. */
  mtimeNs: string;
  /** Inode number, as a decimal string (inode numbers can exceed 2^53). */
  ino: string;
  /** The link target, for symlinks; never followed. */
  target?: string;
}

/**
 * Why a path was not checked. `unreadable`: listing failed; `unreadable-name`: a name that is not
 * valid UTF-8; `gitignore-unusable`: its `.gitignore` cannot be used whole; `too-deep`: past
 * `maxDepth`; `walk-entries` / `time-limit`: the walk stopped at that limit before reaching it.
 */
export type UncheckedReason = 'unreadable' | 'unreadable-name' | 'gitignore-unusable' | 'too-deep' | 'walk-entries' | 'time-limit';

/** A folder (or file) the walk did not check. Nothing under it may be called new or deleted. */
export interface UncheckedPath {
  /** Project-relative path; `'.'` is the whole project. */
  path: string;
  /** Why it was not checked. */
  reason: UncheckedReason;
}

/** The stat index of a project tree. */
export interface ScanResult {
  /** Every covered file and symlink, keyed by project path. */
  entries: Map<string, StatRecord>;
  /** Folders and files not checked, with reasons. */
  unchecked: UncheckedPath[];
  /** What was not covered and why; never silent. */
  gaps: Gap[];
  /** True when anything was left unchecked: the index must not be read as the whole tree. */
  partial: boolean;
  /** Folder entries listed. */
  walked: number;
}

/** Options of one {@link scanTree} call. */
export interface ScanOptions {
  /** Aborts the walk: the returned promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Epoch milliseconds after which the walk stops and leaves the rest unchecked.
   * @default Date.now() + coverage.maxPictureSeconds * 1000
   */
  deadline?: number;
  /** Absolute paths never walked (the store, when it sits inside the project). */
  exclude?: readonly string[];
  /** A stack kept across scans, so unchanged `.gitignore` files are not parsed again. */
  ignores?: IgnoreStack;
}

interface PendingFolder {
  abs: string;
  rel: string;
  depth: number;
  frame: IgnoreFrame | undefined;
}

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

  const entries = new Map<string, StatRecord>();
  const unchecked: UncheckedPath[] = [];
  const gaps: Gap[] = [];
  const tooDeep: string[] = [];
  let walked = 0;
  let sinceYield = 0;
  let isRepository = false;
  let stopped: 'walk-entries' | 'time-limit' | undefined;
  const pending: PendingFolder[] = [{ abs: root, rel: '', depth: 0, frame: undefined }];

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
    let dirents: nodeFs.Dirent[];
    try {
      dirents = nodeFs.readdirSync(folder.abs, { withFileTypes: true });
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
    if (folder.depth === 0) isRepository = dirents.some((d) => d.name === '.git');

    let frame = folder.frame;
    if (dirents.some((d) => d.name === '.gitignore')) {
      const loaded = ignores.load(frame, folder.rel, folder.abs);
      if (!loaded.ok) {
        leaveUnchecked(folder, 'gitignore-unusable', `${loaded.detail}; ${folder.rel === '' ? 'the project' : `${folder.rel}/`} is not checked`);
        continue;
      }
      frame = loaded.frame;
    }

    const found: StatRecord[] = [];
    const subfolders: PendingFolder[] = [];
    const problems: UncheckedPath[] = [];
    let timedOut = false;
    for (let i = 0; i < dirents.length; i++) {
      const dirent = dirents[i] as nodeFs.Dirent;
      const name = dirent.name;
      if (name === '.git' || isTurnbackTempName(name)) continue;
      const rel = folder.rel === '' ? name : `${folder.rel}/${name}`;
      if (excluded.size > 0 && excluded.has(rel)) continue;
      if (dirent.isDirectory()) {
        if (!isRepository && SKIPPED_WITHOUT_GIT.has(name)) continue;
        if (coverage.isSkipped(rel, true) || isIgnoredBy(frame, rel, true)) continue;
        subfolders.push({ abs: `${folder.abs}${path.sep}${name}`, rel, depth: folder.depth + 1, frame });
        continue;
      }
      // The dirent type only filters; the lstat in statEntry decides what is recorded.
      if (!dirent.isSymbolicLink() && !dirent.isFile()) continue;
      if (coverage.isSkipped(rel, false) || isIgnoredBy(frame, rel, false)) continue;
      if (i % CHECK_EVERY === CHECK_EVERY - 1 && Date.now() > deadline) {
        timedOut = true;
        break;
      }
      const abs = `${folder.abs}${path.sep}${name}`;
      const record = statEntry(abs, rel);
      if (typeof record === 'string') {
        if (record === 'gone') continue;
        problems.push({ path: rel, reason: record });
        continue;
      }
      found.push(record);
    }
    if (timedOut) {
      stopped = 'time-limit';
      pending.push(folder);
      break;
    }
    for (const record of found) entries.set(record.path, record);
    for (const problem of problems) {
      unchecked.push(problem);
      gaps.push({
        path: problem.path,
        reason: problem.reason,
        detail: problem.reason === 'unreadable-name' ? `${problem.path}: name is not valid UTF-8` : `${problem.path} cannot be read`,
      });
    }
    // Pushed in reverse so the stack pops them in listing order.
    for (let i = subfolders.length - 1; i >= 0; i--) pending.push(subfolders[i] as PendingFolder);

    sinceYield += dirents.length;
    if (sinceYield >= YIELD_EVERY) {
      sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  if (stopped !== undefined) {
    const reason = stopped;
    for (const folder of pending) unchecked.push({ path: folder.rel === '' ? '.' : folder.rel, reason });
    const limit = reason === 'walk-entries' ? `${coverage.maxWalkEntries.toLocaleString('en-US')} entries` : `${coverage.maxPictureSeconds} s`;
    gaps.push({
      reason,
      detail: `${STOP_DETAIL[reason]} (${limit}); ${pending.length.toLocaleString('en-US')} folder${pending.length === 1 ? '' : 's'} not checked`,
    });
  }
  if (tooDeep.length > 0) {
    gaps.push({
      path: tooDeep[0] as string,
      reason: 'too-deep',
      detail: `${tooDeep.length.toLocaleString('en-US')} folder${tooDeep.length === 1 ? '' : 's'} deeper than ${coverage.maxDepth} levels not checked`,
    });
  }
  return { entries, unchecked, gaps, partial: unchecked.length > 0, walked };
}

/** Stats one file or symlink; returns a reason string when it cannot be recorded. */
function statEntry(abs: string, rel: string): StatRecord | 'gone' | 'unreadable' | 'unreadable-name' {
  let stats: nodeFs.BigIntStats | undefined;
  try {
    stats = nodeFs.lstatSync(abs, { bigint: true, throwIfNoEntry: false });
  } catch {
    return 'unreadable';
  }
  if (stats === undefined) {
    // Node decodes a non-UTF-8 name lossily, so the listed name no longer reaches the file.
    return rel.includes('\uFFFD') ? 'unreadable-name' : 'gone';
  }
  const record: StatRecord = {
    path: rel,
    type: 'file',
    size: Number(stats.size),
    mode: Number(stats.mode & 0o7777n),
    mtimeNs: String(stats.mtimeNs),
    ino: String(stats.ino),
  };
  if (stats.isFile()) return record;
  if (!stats.isSymbolicLink()) return 'gone';
  try {
    record.type = 'symlink';
    record.target = nodeFs.readlinkSync(abs);
    return record;
  } catch (error) {
    return errnoCode(error) === 'ENOENT' ? 'gone' : 'unreadable';
  }
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
