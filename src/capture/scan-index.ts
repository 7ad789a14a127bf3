import type { IgnoreStack } from './coverage.js';
import type { FolderMemo, ScanMemo } from './scan-memo.js';
import type { StatRecord } from './stat-record.js';
import type { HiddenTrackedAnswer } from './tracked-files.js';
import { frontDecoded, pushFrontCoded } from './front-coding.js';

// What a scan learnt about settled folders, persisted so the first picture of a fresh process
// skips listing them and matching their names against the ignore rules, as git's untracked cache
// does. Pure: data in, data out; the keeper reads and writes the document.

const FORMAT = 'turnback-scan-index';
/**
 * Version 2 writes the folders as columns (paths sharing their start with the one before, inodes
 * as differences, each chain key once): what repeats lies side by side for the store's
 * compression. prettier's 3,353 folders: 101 KB compressed as version 1's tuples, 69 KB. Version 1
 * is still read.
 */
const VERSION = 2;

/** Flags of a persisted folder. */
const HAS_GITIGNORE = 1;
const HAS_GIT = 2;
const IN_REPOSITORY = 4;

/**
 * One settled folder: its project path, mtime, inode, flags, the chain key of its ignore rules,
 * its subfolders walked, its covered files (names, in listing order), and the entries its rules
 * left out (project paths; a folder ends with `/`).
 */
type FolderTuple = [string, number, number, number, string, string[], string[], string[]];

/** The folders of a version-2 document, as columns (one entry per folder in each). */
interface FolderColumns {
  /** How many leading characters each folder's path shares with the one before it. */
  shared: number[];
  /** The rest of each path. */
  tails: string[];
  mtimes: number[];
  /** Each inode less the one before it (the first less 0). */
  inos: number[];
  flags: number[];
  /** The distinct chain keys, and each folder's index into them. */
  keyTable: string[];
  keys: number[];
  subfolders: string[][];
  covered: string[][];
  ignored: string[][];
}

/** The persisted document. */
export interface ScanIndexDocument {
  format: typeof FORMAT;
  version: typeof VERSION;
  /** The scan's scope (root, skip patterns, exclusions): another scope uses nothing here. */
  scope: string;
  columns: FolderColumns;
  /** The hidden-tracked pass's last answer (tracked-files.ts), when there was one. */
  tracked?: HiddenTrackedAnswer;
}

/** The columns of `tuples`, in their order. */
function toColumns(tuples: readonly FolderTuple[]): FolderColumns {
  const columns: FolderColumns = { shared: [], tails: [], mtimes: [], inos: [], flags: [], keyTable: [], keys: [], subfolders: [], covered: [], ignored: [] };
  const keyIndex = new Map<string, number>();
  let previousPath = '';
  let previousIno = 0;
  for (const [rel, mtimeMs, ino, flags, key, subfolders, covered, ignored] of tuples) {
    pushFrontCoded(columns, previousPath, rel);
    previousPath = rel;
    columns.mtimes.push(mtimeMs);
    columns.inos.push(ino - previousIno);
    previousIno = ino;
    columns.flags.push(flags);
    let index = keyIndex.get(key);
    if (index === undefined) {
      index = columns.keyTable.length;
      keyIndex.set(key, index);
      columns.keyTable.push(key);
    }
    columns.keys.push(index);
    columns.subfolders.push(subfolders);
    columns.covered.push(covered);
    columns.ignored.push(ignored);
  }
  return columns;
}

/** The tuples of a version-2 document's columns; `undefined` when they are malformed. */
function fromColumns(value: unknown): unknown[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const c = value as Partial<Record<keyof FolderColumns, unknown>>;
  const count = Array.isArray(c.tails) ? c.tails.length : -1;
  const columns = [c.shared, c.mtimes, c.inos, c.flags, c.keys, c.subfolders, c.covered, c.ignored];
  if (count < 0 || !columns.every((column) => Array.isArray(column) && column.length === count) || !isStrings(c.keyTable)) return undefined;
  const [shared, mtimes, inos, flags, keys, subfolders, covered, ignored] = columns as unknown[][];
  const tuples: unknown[] = [];
  let previousPath = '';
  let ino = 0;
  for (let i = 0; i < count; i++) {
    const rel = frontDecoded(previousPath, (shared as unknown[])[i], (c.tails as unknown[])[i]);
    const step = (inos as unknown[])[i];
    const key = (c.keyTable as string[])[(keys as unknown[])[i] as number];
    if (rel === undefined || !Number.isSafeInteger(step) || key === undefined) return undefined;
    previousPath = rel;
    ino += step as number;
    tuples.push([rel, (mtimes as unknown[])[i], ino, (flags as unknown[])[i], key, (subfolders as unknown[])[i], (covered as unknown[])[i], (ignored as unknown[])[i]]);
  }
  return tuples;
}

/**
 * The document for the settled folders `memo` kept, with each folder's chain key from `ignores`;
 * `undefined` when there is nothing to keep (no scan yet, or no settled folder).
 */
export function scanIndexOf(memo: ScanMemo, ignores: IgnoreStack, tracked?: HiddenTrackedAnswer): ScanIndexDocument | undefined {
  const { folders, scope } = memo.kept;
  if (scope === undefined) return undefined;
  const keys = ignores.chainKeys();
  const tuples: FolderTuple[] = [];
  for (const [rel, known] of folders) {
    const listing = known.listing;
    const key = keys.get(rel);
    if (listing?.settled !== true || key === undefined) continue;
    const prefixLength = rel === '' ? 0 : rel.length + 1;
    const covered: string[] = [];
    for (const record of known.records) if (record !== undefined) covered.push(record.path.slice(prefixLength));
    const flags = (listing.hasGitignore ? HAS_GITIGNORE : 0) | (listing.hasGit ? HAS_GIT : 0) | (listing.inRepository ? IN_REPOSITORY : 0);
    tuples.push([rel, listing.mtimeMs, listing.ino, flags, key, listing.subfolders, covered, known.ignored ?? []]);
  }
  if (tuples.length === 0) return undefined;
  return { format: FORMAT, version: VERSION, scope, columns: toColumns(tuples), ...(tracked !== undefined ? { tracked } : {}) };
}

/** What a fresh process takes from a persisted scan index. */
export interface RestoredScanIndex {
  scope: string;
  folders: Map<string, FolderMemo>;
  /** Chain key per restored folder, for {@link IgnoreStack.seed}. */
  keys: Map<string, string>;
  tracked?: HiddenTrackedAnswer;
}

/**
 * Rebuilds the settled folders of `doc` over `records` (the stat cache loaded beside it): a folder
 * comes back only when every covered file it names has a record there, so a reused listing never
 * drops a file. A malformed document yields `undefined` (never half trusted); a folder the cache
 * cannot fill is simply listed again by the next scan.
 */
export function restoreScanIndex(doc: unknown, records: ReadonlyMap<string, StatRecord>): RestoredScanIndex | undefined {
  if (typeof doc !== 'object' || doc === null) return undefined;
  const d = doc as Partial<ScanIndexDocument> & { folders?: unknown; version?: unknown };
  if (d.format !== FORMAT || typeof d.scope !== 'string') return undefined;
  const tuples = d.version === VERSION ? fromColumns(d.columns) : d.version === 1 && Array.isArray(d.folders) ? (d.folders as unknown[]) : undefined;
  if (tuples === undefined) return undefined;
  const folders = new Map<string, FolderMemo>();
  const keys = new Map<string, string>();
  for (const tuple of tuples) {
    if (!isFolderTuple(tuple)) return undefined;
    const [rel, mtimeMs, ino, flags, key, subfolders, covered, ignored] = tuple;
    const prefix = rel === '' ? '' : `${rel}/`;
    const folderRecords: StatRecord[] = [];
    for (const name of covered) {
      const record = records.get(prefix + name);
      if (record === undefined) break;
      folderRecords.push(record);
    }
    if (folderRecords.length !== covered.length) continue;
    folders.set(rel, {
      records: folderRecords,
      ignored,
      // The index keeps no entry count: what it names is every entry a listing holds but the odd
      // ones (a socket, a name turnback or watchman made for a moment), which the walk limit counts.
      listing: { mtimeMs, ino, entries: covered.length + subfolders.length + ignored.length + ((flags & HAS_GIT) !== 0 ? 1 : 0), subfolders, hasGitignore: (flags & HAS_GITIGNORE) !== 0, hasGit: (flags & HAS_GIT) !== 0, inRepository: (flags & IN_REPOSITORY) !== 0, settled: true },
    });
    keys.set(rel, key);
  }
  const tracked = d.tracked;
  return { scope: d.scope, folders, keys, ...(isTrackedAnswer(tracked) ? { tracked } : {}) };
}

function isTrackedAnswer(value: unknown): value is HiddenTrackedAnswer {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<HiddenTrackedAnswer>;
  return typeof v.index === 'string' && typeof v.hidden === 'string' && isStrings(v.paths);
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isFolderTuple(value: unknown): value is FolderTuple {
  if (!Array.isArray(value) || value.length !== 8) return false;
  const [rel, mtimeMs, ino, flags, key, subfolders, covered, ignored] = value as unknown[];
  return (
    typeof rel === 'string' &&
    typeof mtimeMs === 'number' &&
    typeof ino === 'number' &&
    typeof flags === 'number' &&
    typeof key === 'string' &&
    isStrings(subfolders) &&
    isStrings(covered) &&
    isStrings(ignored)
  );
}
