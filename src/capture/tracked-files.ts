import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { GITLINK_MODE, parseGitIndexTable, tableObject, type GitIndexTable } from '../core/git-index.js';
import { cleanEntries, sameObject, type CleanEntries } from './clean-entries.js';
import { gitDirFromFile, objectIdBytes } from '../fs/git-files.js';
import { resolveInsideRootSync, type AncestorMemo } from '../fs/paths.js';
import { statEntry, type StatRecord } from './stat-record.js';

// The files git tracks in the project, read from its index (read-only: nothing is ever written
// into `.git`). A tracked file is covered by every picture whatever the ignore rules say, as git
// itself treats it: a `.gitignore` hides untracked files from git, never tracked ones.

/** The largest index read; a larger one is not used (pictures then follow the ignore rules alone). */
const INDEX_MAX_BYTES = 256 * 1024 * 1024;

/** One reading of a repository's index, and what is derived from it on first use. */
interface IndexReading {
  /** The index file's identity and stat when read: a different one is read again. */
  key: string;
  /** The index file's own mtime: an entry at or after it may be racily clean (git re-reads it). */
  indexMtimeMs: number;
  /**
   * The parsed entries, read on first use; `undefined` when the file cannot be parsed. Columns,
   * not an object an entry: a server keeps this for as long as the index stays the same.
   */
  readonly entries: GitIndexTable | undefined;
  paths?: readonly string[];
  /** Stage-0 regular files by path (see {@link CleanEntries}). */
  clean?: CleanEntries;
  /** The tracked paths the last walk's hidden entries cover, and those entries (joined): a repeat walk hides the same. */
  hiddenTracked?: { hidden: string; paths: string[] };
}

/** One reading per index version, for long-lived observers that picture again and again. */
const readings = new Map<string, IndexReading>();

/**
 * What the hidden-tracked pass found for one index version and one set of hidden entries, as an
 * earlier process saw it (see {@link hiddenTrackedAnswer} and {@link seedHiddenTracked}).
 */
export interface HiddenTrackedAnswer {
  /** The index file's identity and stat. */
  index: string;
  /** The hidden entries, joined by NUL. */
  hidden: string;
  /** The tracked paths they cover. */
  paths: string[];
}

/** Per work-tree root, an answer an earlier process saved, used while its index key holds. */
const seeds = new Map<string, HiddenTrackedAnswer>();

/** The last answer of the hidden-tracked pass for `root`, to persist; `undefined` before one. */
export function hiddenTrackedAnswer(root: string): HiddenTrackedAnswer | undefined {
  const reading = readings.get(root);
  if (reading?.hiddenTracked !== undefined) return { index: reading.key, hidden: reading.hiddenTracked.hidden, paths: reading.hiddenTracked.paths };
  return seeds.get(root);
}

/**
 * Gives this process an answer an earlier one saved: while the index file keeps that key and a
 * walk hides the same entries, the index is not read for the pass at all.
 */
export function seedHiddenTracked(root: string, answer: HiddenTrackedAnswer): void {
  seeds.set(root, answer);
}
/**
 * The index of the work tree rooted at `root` as this process keeps it (parsed on first use, kept
 * while the index file keeps its identity): `key` is that identity, `indexFile` the file it is of,
 * `entries` the table (`undefined`: it cannot be parsed). `undefined` without a readable index. For
 * `run`'s note of what a command staged: it compares two of these instead of holding the index
 * file's bytes (~33 MB at 250,000 files) through every command.
 */
export function keptIndexOf(root: string): { key: string; indexFile: string; entries: GitIndexTable | undefined } | undefined {
  const gitDir = gitDirOf(root);
  const reading = gitDir === undefined ? undefined : readingOf(root);
  if (gitDir === undefined || reading === undefined) return undefined;
  return { key: reading.key, indexFile: path.join(gitDir, 'index'), entries: reading.entries };
}

/** The git folder of a work tree rooted at `root`: `.git` itself, or where a `.git` file points. */
function gitDirOf(root: string): string | undefined {
  const dotGit = path.join(root, '.git');
  let stats: nodeFs.Stats | undefined;
  try {
    stats = nodeFs.lstatSync(dotGit);
  } catch {
    return undefined;
  }
  if (stats.isDirectory()) return dotGit;
  return stats.isFile() ? gitDirFromFile(root, dotGit) : undefined;
}

/** The identity and stat of the index file of the work tree rooted at `root` (`''`: none): a picture's tracked files follow it. */
export function indexKeyOf(root: string): string {
  const gitDir = gitDirOf(root);
  if (gitDir === undefined) return '';
  try {
    return keyOf(nodeFs.statSync(path.join(gitDir, 'index')));
  } catch {
    return '';
  }
}

function keyOf(stats: nodeFs.Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
}

/** The index of the work tree rooted at `root`, read again only when the index file changed. */
function readingOf(root: string): IndexReading | undefined {
  const gitDir = gitDirOf(root);
  if (gitDir === undefined) return undefined;
  const indexFile = path.join(gitDir, 'index');
  let stats: nodeFs.Stats;
  try {
    stats = nodeFs.statSync(indexFile);
  } catch {
    return undefined;
  }
  if (stats.size > INDEX_MAX_BYTES) return undefined;
  const key = keyOf(stats);
  const known = readings.get(root);
  if (known?.key === key) return known;
  let parsed: { entries: GitIndexTable | undefined } | undefined;
  const reading: IndexReading = {
    key,
    indexMtimeMs: stats.mtimeMs,
    get entries(): GitIndexTable | undefined {
      if (parsed === undefined) {
        try {
          parsed = { entries: parseGitIndexTable(nodeFs.readFileSync(indexFile), objectIdBytes(gitDir)) };
        } catch {
          parsed = { entries: undefined };
        }
      }
      return parsed.entries;
    },
  };
  const seed = seeds.get(root);
  if (seed?.index === key) reading.hiddenTracked = { hidden: seed.hidden, paths: seed.paths };
  readings.set(root, reading);
  return reading;
}

/** What {@link trackedBeyondWalk} needs of the scan that walked the tree. */
export interface WalkContext {
  /** The configured `skip` patterns: a person's explicit choice holds even for tracked files. */
  isSkipped(projectPath: string, isFolder: boolean): boolean;
  /** Project paths never covered (the store, when it sits inside the project). */
  excluded: ReadonlySet<string>;
  /** Folders and files the walk could not check: what lies under them stays unchecked, tracked or not. */
  unchecked: ReadonlySet<string>;
  /** The earlier index, so an unchanged file keeps its record. */
  previous?: ReadonlyMap<string, StatRecord>;
  reuse?: (record: StatRecord) => boolean;
}

/**
 * Records for the files git tracks that the walk's ignore rules left out (`hidden`: the files and
 * the folders, ending with `/`, the walk passed over). Each is reached from the root through real
 * folders only — a tracked path under a link is never followed — and `skip` patterns, excluded
 * and unchecked paths still hold. Empty outside a work tree's top, and free when the walk hid
 * nothing (the index is not even read).
 */
export function trackedBeyondWalk(root: string, hidden: readonly string[], context: WalkContext): StatRecord[] {
  if (hidden.length === 0) return [];
  const reading = readingOf(root);
  if (reading === undefined) return [];
  const ancestors: AncestorMemo = new Map();
  const extra: StatRecord[] = [];
  for (const projectPath of hiddenTrackedPaths(reading, hidden) ?? []) {
    if (!coverable(projectPath, context)) continue;
    let resolved;
    try {
      resolved = resolveInsideRootSync(nodeFs, root, projectPath, ancestors);
    } catch {
      // A link or a file on the way, or a name turnback never touches: not followed.
      continue;
    }
    if (resolved.missingDirs.length > 0) continue;
    const slash = projectPath.lastIndexOf('/');
    const record = statEntry(resolved.absolute, projectPath.slice(0, slash + 1), projectPath.slice(slash + 1), context.previous?.get(projectPath), context.reuse);
    if (typeof record !== 'string') extra.push(record);
  }
  return extra;
}

/** What {@link trackedUnderUnchecked} found under the folders a stopped walk left. */
export interface TrackedUnderUnchecked {
  /** Records of the tracked files there, statted from the index's paths (no folder listed). */
  records: StatRecord[];
  /**
   * Every tracked path there that was statted, found or gone: a path in it that has no record
   * was deleted, though its folder was never walked.
   */
  vouched: Set<string>;
  /** Tracked paths there left without a stat (the deadline passed first). */
  missed: number;
}

/**
 * When a walk stopped at a limit, the files git tracks under the folders it left (`folders`,
 * project paths, `''` for the root), each statted by the path the index names — so what the limit
 * leaves unknown is only the untracked files there (git's index says which files are tracked; the
 * walk cannot know which are dirty without a stat, and a dirty tracked file's bytes exist nowhere
 * else). Reached through real folders only, as {@link trackedBeyondWalk}; `skip` patterns and
 * excluded paths still hold. Stops at `deadline` and counts what it left. `undefined` outside a
 * work tree's top or when the index cannot be read.
 */
export function trackedUnderUnchecked(root: string, folders: readonly string[], context: WalkContext & { deadline: number }): TrackedUnderUnchecked | undefined {
  const reading = readingOf(root);
  const entries = reading?.entries;
  if (reading === undefined || entries === undefined) return undefined;
  reading.paths ??= trackedPaths(entries);
  const whole = folders.includes('');
  const set = new Set(folders);
  const ancestors: AncestorMemo = new Map();
  const records: StatRecord[] = [];
  const vouched = new Set<string>();
  let missed = 0;
  let since = 0;
  for (const projectPath of reading.paths) {
    if (!whole && !set.has(projectPath) && !underAny(projectPath, set)) continue;
    if (!coverable(projectPath, context)) continue;
    if (missed > 0 || (since++ % 512 === 0 && Date.now() > context.deadline)) {
      missed += 1;
      continue;
    }
    let resolved;
    try {
      resolved = resolveInsideRootSync(nodeFs, root, projectPath, ancestors);
    } catch {
      // A link or a file on the way, or a name turnback never touches: not followed.
      continue;
    }
    vouched.add(projectPath);
    if (resolved.missingDirs.length > 0) continue;
    const slash = projectPath.lastIndexOf('/');
    const record = statEntry(resolved.absolute, projectPath.slice(0, slash + 1), projectPath.slice(slash + 1), context.previous?.get(projectPath), context.reuse);
    if (typeof record !== 'string') records.push(record);
    else if (record !== 'gone') vouched.delete(projectPath);
  }
  return { records, vouched, missed };
}

/** How many tracked paths lie under `folders` (project paths, `''` for the root); `undefined` without a readable index. */
export function trackedCountUnder(root: string, folders: readonly string[]): number | undefined {
  const reading = readingOf(root);
  const entries = reading?.entries;
  if (reading === undefined || entries === undefined) return undefined;
  reading.paths ??= trackedPaths(entries);
  if (folders.includes('')) return reading.paths.length;
  const set = new Set(folders);
  let count = 0;
  for (const projectPath of reading.paths) if (set.has(projectPath) || underAny(projectPath, set)) count += 1;
  return count;
}

/**
 * The tracked paths that `hidden` (files, and folders ending with `/`) covers, matched once per
 * index and set of hidden entries: a session's repeat walks hide the same entries, so a call pair
 * does not pass over every tracked path again.
 */
function hiddenTrackedPaths(reading: IndexReading, hidden: readonly string[]): string[] | undefined {
  const joined = hidden.join('\u0000');
  if (reading.hiddenTracked?.hidden === joined) return reading.hiddenTracked.paths;
  const entries = reading.entries;
  if (entries === undefined) return undefined;
  const hiddenFiles = new Set<string>();
  const hiddenFolders = new Set<string>();
  for (const entry of hidden) {
    if (entry.endsWith('/')) hiddenFolders.add(entry.slice(0, -1));
    else hiddenFiles.add(entry);
  }
  // A path can lie under a hidden folder only if its first name is a hidden folder's first name:
  // one look-up rules out most paths (a first picture passes every tracked path here).
  const tops = new Set<string>();
  for (const folder of hiddenFolders) {
    const slash = folder.indexOf('/');
    tops.add(slash < 0 ? folder : folder.slice(0, slash));
  }
  // Over the index's own columns, not the deduplicated path list: that list of every tracked path
  // (a set, then an array) cost 0.2 s of a 250,000-file first picture and is needed only here.
  // Regular files and links git tracks; submodules are another repository's. A path found is
  // taken once (a conflicted path has up to three entries).
  const paths: string[] = [];
  const found = new Set<string>();
  for (let i = 0; i < entries.count; i++) {
    if (entries.modes[i] === GITLINK_MODE) continue;
    const p = entries.paths[i] as string;
    let hit = hiddenFiles.has(p);
    if (!hit && tops.size > 0) {
      const slash = p.indexOf('/');
      hit = slash > 0 && tops.has(p.slice(0, slash)) && underAny(p, hiddenFolders);
    }
    if (hit && !found.has(p)) {
      found.add(p);
      paths.push(p);
    }
  }
  reading.hiddenTracked = { hidden: joined, paths };
  return paths;
}

/** The paths of regular files and links git tracks, once each (a conflicted path has up to three entries). */
function trackedPaths(table: GitIndexTable): string[] {
  const paths = new Set<string>();
  for (let i = 0; i < table.count; i++) if (table.modes[i] !== GITLINK_MODE) paths.add(table.paths[i] as string);
  return [...paths];
}

/** True when a folder above `projectPath` is one of `folders`. */
function underAny(projectPath: string, folders: ReadonlySet<string>): boolean {
  for (let slash = projectPath.indexOf('/'); slash >= 0; slash = projectPath.indexOf('/', slash + 1)) {
    if (folders.has(projectPath.slice(0, slash))) return true;
  }
  return false;
}

/** False for a path a `skip` pattern, an excluded or an unchecked folder covers, itself or through a folder above it. */
function coverable(projectPath: string, context: WalkContext): boolean {
  if (context.isSkipped(projectPath, false) || context.excluded.has(projectPath) || context.unchecked.has(projectPath)) return false;
  for (let slash = projectPath.indexOf('/'); slash >= 0; slash = projectPath.indexOf('/', slash + 1)) {
    const folder = projectPath.slice(0, slash);
    if (context.excluded.has(folder) || context.unchecked.has(folder) || context.isSkipped(folder, true)) return false;
  }
  return true;
}

/**
 * The blob id of a file git tracks whose bytes are, by git's own rule, that blob: its index entry
 * names the same size, inode, modification time (to the microsecond) and executable bit as
 * `record`, and the entry is older than the index file (not racily clean). `undefined` for
 * anything else — the file is then copied, or left uncopied, as before.
 */
export function cleanTrackedBlob(root: string, record: Pick<StatRecord, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs' | 'ino'>): string | undefined {
  if (record.type !== 'file') return undefined;
  const reading = readingOf(root);
  const i = cleanEntryOf(reading, record);
  return i === undefined ? undefined : tableObject(reading?.entries as GitIndexTable, i);
}

/**
 * For the many records of one picture: {@link cleanTrackedBlob} with git's index looked at once,
 * on the first call, not once a record (asked per record, each answer stats `.git` and the index
 * file again: 3.3 s of a 250,000-file first picture, profiled).
 */
export function cleanTrackedBlobs(root: string): (record: Pick<StatRecord, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs' | 'ino'>) => string | undefined {
  const finder = cleanEntryFinder(root);
  return (record) => {
    const i = finder.entryOf(record);
    return i === undefined ? undefined : tableObject(finder.table, i);
  };
}

/**
 * As {@link cleanTrackedBlobs}, with the index's own string of the path beside the blob: a record
 * that rests on git can hold that string instead of its own copy of the same text (the index table
 * is kept, so at 250,000 files each path was held twice, ~20 MiB).
 */
export function cleanTrackedEntries(root: string): (record: Pick<StatRecord, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs' | 'ino'>) => { blob: string; path: string } | undefined {
  const finder = cleanEntryFinder(root);
  return (record) => {
    const i = finder.entryOf(record);
    return i === undefined ? undefined : { blob: tableObject(finder.table, i), path: finder.table.paths[i] as string };
  };
}

/**
 * Fresh records a walk makes before {@link trackedPathSharer} reads git's index: a small tree's
 * walk never pays for the index, and a big one's first records keep their own strings.
 */
export const SHARE_PATHS_AFTER = 20_000;

/**
 * For a walk: the kept index's own string for a path git tracks as a stage-0 regular file, else
 * the path itself, so a fresh record holds the one copy a record resting on git ends up with
 * (see {@link cleanTrackedEntries}). Returns its argument for its first `after` calls
 * ({@link SHARE_PATHS_AFTER}), and always outside a work tree's top or without a readable index.
 * The text is always the argument's: only which copy of it is returned differs.
 */
export function trackedPathSharer(root: string, after: number = SHARE_PATHS_AFTER): (path: string) => string {
  let calls = 0;
  let lookup: ((path: string) => string) | undefined;
  return (p) => {
    if (lookup !== undefined) return lookup(p);
    if (++calls <= after) return p;
    const reading = readingOf(root);
    const entries = reading?.entries;
    if (reading === undefined || entries === undefined) {
      lookup = (same) => same;
      return p;
    }
    reading.clean ??= cleanEntries(entries);
    const clean = reading.clean;
    lookup = (path) => {
      const i = clean.entryOf(path);
      return i === undefined ? path : (entries.paths[i] as string);
    };
    return lookup(p);
  };
}

/**
 * The clean entry number of each record asked about (git's index read on the first call), and the
 * table it numbers; nothing allocated per record, as it is asked of many.
 */
function cleanEntryFinder(root: string): { entryOf(record: Pick<StatRecord, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs' | 'ino'>): number | undefined; readonly table: GitIndexTable } {
  let reading: IndexReading | undefined | null = null;
  return {
    entryOf(record) {
      if (record.type !== 'file') return undefined;
      if (reading === null) reading = readingOf(root);
      return cleanEntryOf(reading, record);
    },
    // Asked only after entryOf found an entry, so the reading and its table exist.
    get table() {
      return (reading as IndexReading).entries as GitIndexTable;
    },
  };
}

/**
 * For the many records of one picture: whether {@link cleanTrackedBlob} of a record is `blob` (hex,
 * read past its first `from` characters: 4 for a git object key), compared against the index's
 * bytes without making a string. Git's index is looked at once, on the first call, not once a record.
 */
export function cleanTrackedBlobIs(root: string): (record: Pick<StatRecord, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs' | 'ino'>, blob: string, from?: number) => boolean {
  const finder = cleanEntryFinder(root);
  return (record, blob, from = 0) => {
    const i = finder.entryOf(record);
    return i !== undefined && sameObject(finder.table, i, blob, from);
  };
}

/** The entry number of `record`'s clean index entry (see {@link cleanTrackedBlob}), if any. */
function cleanEntryOf(reading: IndexReading | undefined, record: Pick<StatRecord, 'path' | 'size' | 'mode' | 'mtimeMs' | 'ino'>): number | undefined {
  const entries = reading?.entries;
  if (reading === undefined || entries === undefined) return undefined;
  reading.clean ??= cleanEntries(entries);
  const i = reading.clean.entryOf(record.path);
  if (i === undefined) return undefined;
  if (entries.sizes[i] !== record.size % 2 ** 32 || entries.inos[i] !== record.ino % 2 ** 32) return undefined;
  const mtimeMs = entries.mtimes[i] as number;
  if (Math.abs(mtimeMs - record.mtimeMs) > 0.002 || mtimeMs >= reading.indexMtimeMs) return undefined;
  if ((((entries.modes[i] as number) & 0o111) !== 0) !== ((record.mode & 0o100) !== 0)) return undefined;
  return i;
}
