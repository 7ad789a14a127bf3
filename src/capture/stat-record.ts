import * as path from 'node:path';
import * as nodeFs from 'node:fs';
import { errnoCode } from '../core/errors.js';
import { flatConcat } from '../core/flat-string.js';
import type { PathState } from '../core/model.js';
import { isLossyName, nameFromBytes, pathForKernel } from '../core/raw-names.js';
import { KIND_FAILED, KIND_FILE, KIND_FOLDER, KIND_MISSING, KIND_OTHER, KIND_SYMLINK, STAT_FIELDS, lstatNumbers } from '../fs/fast-lstat.js';

/** One lstat's numbers at a time: the scan is synchronous, so one scratch array serves every call. */
const scratch = new Float64Array(STAT_FIELDS);

// One covered path's stat index entry, and how a scan makes it: from an lstat, or from a row of a
// stat batch, reusing the earlier record itself when nothing changed.

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
  /**
   * Modification time in milliseconds since the epoch, with Node's own `mtimeMs` formula
   * (`sec * 1e3 + nsec / 1e6`): sub-microsecond resolution, finer than the kernel's timestamp
   * granularity, and exactly what the store compares a file against while copying it.
   */
  mtimeMs: number;
  /** Inode number (a double: an inode number past 2^53 only makes the stat comparison coarser). */
  ino: number;
  /** The link target, for symlinks; never followed. */
  target?: string;
}

/** A folder's row of a stat batch: its mtime and inode, `not-folder`, or `undefined` when lstat failed. */
export function folderFromBatch(stats: Float64Array, index: number): { mtimeMs: number; ino: number } | 'not-folder' | undefined {
  const at = index * STAT_FIELDS;
  const kind = stats[at];
  if (kind === KIND_FOLDER) return { mtimeMs: stats[at + 3] as number, ino: stats[at + 4] as number };
  return kind === KIND_FAILED ? undefined : 'not-folder';
}

/** {@link statEntry} from a batch: a file gone or failed is 'gone', and the caller lists its folder. */
export function entryFromBatch(stats: Float64Array, index: number, root: string, earlier: StatRecord, reuse: ((record: StatRecord) => boolean) | undefined): StatRecord | 'gone' | 'unreadable' {
  const at = index * STAT_FIELDS;
  const kind = stats[at];
  if (kind !== KIND_FILE && kind !== KIND_SYMLINK) return 'gone';
  const abs = kind === KIND_SYMLINK ? `${root}${path.sep}${earlier.path}` : '';
  return recordOf(abs, '', earlier.path, kind === KIND_FILE ? 'file' : 'symlink', stats[at + 2] as number, stats[at + 1] as number, stats[at + 3] as number, stats[at + 4] as number, earlier, reuse);
}

/**
 * A folder's mtime and inode; `'not-folder'` when nothing or something else (a link, a file) is
 * there; `undefined` when it cannot be statted (listing it then tells why).
 */
export function lstatFolder(absPath: string): { mtimeMs: number; ino: number } | 'not-folder' | undefined {
  const kind = lstatNumbers(absPath, scratch, 0);
  if (kind === KIND_FOLDER) return { mtimeMs: scratch[3] as number, ino: scratch[4] as number };
  return kind === KIND_MISSING || kind === KIND_FILE || kind === KIND_SYMLINK || kind === KIND_OTHER ? 'not-folder' : undefined;
}

/** The records of a folder memo by name (the path past `prefixLength`), for a listing that changed order. */
export function memoByName(records: readonly (StatRecord | undefined)[], prefixLength: number): Map<string, StatRecord> {
  const byName = new Map<string, StatRecord>();
  for (const record of records) if (record !== undefined) byName.set(record.path.slice(prefixLength), record);
  return byName;
}

/** One folder's entries with their types. */
export function readDirSync(absPath: string): nodeFs.Dirent[] {
  const at = pathForKernel(absPath);
  const dirents = nodeFs.readdirSync(at, { withFileTypes: true });
  // Names come decoded as UTF-8; only a folder holding a name that did not decode cleanly is
  // listed again in bytes, so the scan pays nothing for the common case.
  for (const dirent of dirents) if (isLossyName(dirent.name)) return rawDirents(at);
  return dirents;
}

/** A folder's entries with each name decoded reversibly (fs/raw-names.ts). */
function rawDirents(at: string | Buffer): nodeFs.Dirent[] {
  const dirents = nodeFs.readdirSync(at, { withFileTypes: true, encoding: 'buffer' });
  for (const dirent of dirents) (dirent as unknown as { name: string }).name = nameFromBytes(dirent.name);
  return dirents as unknown as nodeFs.Dirent[];
}

/** Same type, size, mtime, inode and mode (and link target): the earlier record stands. */
export function isUnchanged(earlier: StatRecord, type: StatRecord['type'], target: string | undefined, size: number, mode: number, mtimeMs: number, ino: number): boolean {
  return earlier.type === type && earlier.target === target && earlier.size === size && earlier.mtimeMs === mtimeMs && earlier.ino === ino && earlier.mode === mode;
}

/**
 * Stats one file or symlink; returns a reason string when it cannot be recorded. Numbers only
 * (fs/fast-lstat.ts): no `Stats` object per file. An unchanged file returns `earlier` itself.
 */
export function statEntry(
  abs: string,
  prefix: string,
  name: string,
  earlier: StatRecord | undefined,
  reuse: ((record: StatRecord) => boolean) | undefined,
): StatRecord | 'gone' | 'unreadable' | 'unreadable-name' {
  const kind = lstatNumbers(abs, scratch, 0);
  if (kind === KIND_MISSING) {
    // Names are listed in bytes where they are not UTF-8 (readDirSync); a damaged name left is
    // one a caller listed lossily itself, and it no longer reaches the file.
    return isLossyName(name) ? 'unreadable-name' : 'gone';
  }
  if (kind !== KIND_FILE && kind !== KIND_SYMLINK) return kind === KIND_FOLDER || kind === KIND_OTHER ? 'gone' : 'unreadable';
  return recordOf(abs, prefix, name, kind === KIND_FILE ? 'file' : 'symlink', scratch[2] as number, scratch[1] as number, scratch[3] as number, scratch[4] as number, earlier, reuse);
}

/** The record for a stat: `earlier` itself when nothing changed, else a fresh one. `abs` is read only for a symlink. */
export function recordOf(
  abs: string,
  prefix: string,
  name: string,
  type: StatRecord['type'],
  size: number,
  mode: number,
  mtimeMs: number,
  ino: number,
  earlier: StatRecord | undefined,
  reuse: ((record: StatRecord) => boolean) | undefined,
): StatRecord | 'gone' | 'unreadable' {
  if (type === 'file') {
    if (earlier !== undefined && isUnchanged(earlier, 'file', undefined, size, mode, mtimeMs, ino) && (reuse === undefined || reuse(earlier))) return earlier;
    return fresh(flatConcat(prefix, name), 'file', size, mode, mtimeMs, ino, undefined);
  }
  let target: string;
  try {
    target = nameFromBytes(nodeFs.readlinkSync(pathForKernel(abs), { encoding: 'buffer' }));
  } catch (error) {
    return errnoCode(error) === 'ENOENT' ? 'gone' : 'unreadable';
  }
  if (earlier !== undefined && isUnchanged(earlier, 'symlink', target, size, mode, mtimeMs, ino) && (reuse === undefined || reuse(earlier))) return earlier;
  return fresh(flatConcat(prefix, name), 'symlink', size, mode, mtimeMs, ino, target);
}

/**
 * A new record. A file's is a {@link FileRecord} (its state held as two fields once pictured); a
 * symlink's has the `state` field a picture adds already present, so setting it later neither
 * allocates a property store nor changes the object's shape.
 */
export function fresh(p: string, type: StatRecord['type'], size: number, mode: number, mtimeMs: number, ino: number, target: string | undefined): StatRecord {
  const s = small(size);
  const m = small(mode);
  const i = small(ino);
  if (type === 'file' && target === undefined) return new FileRecord(p, s, m, mtimeMs, i);
  const record = target === undefined ? { path: p, type, size: s, mode: m, mtimeMs, ino: i, state: undefined } : { path: p, type, size: s, mode: m, mtimeMs, ino: i, target, state: undefined };
  return record;
}

/**
 * A regular file's record and, once pictured, its state, in one object (issue #28: the server's
 * memory at 250,000 files). Most pictured files have a stored copy or git's blob taken at this very
 * stat, so their state repeats the record's size, mode and inode: such a state is kept as its
 * object key and hash alone, and `state` makes the state object when it is read (one that escapes
 * costs what the kept one did; most reads do not keep it). Any other state (uncopied, another
 * size, a SHA-256) is kept as it is given. 88 bytes a pictured file instead of 152 (a record
 * beside a state object). What is kept is private: the record's own properties are those of a
 * plain record without `state`, and `toJSON` writes the plain record, `state` included.
 */
export class FileRecord implements StatRecord {
  path: string;
  type: 'file' = 'file';
  size: number;
  mode: number;
  mtimeMs: number;
  ino: number;
  /** The object key of a state that repeats the record's stat; any other state itself; `undefined` before a picture gives one. */
  #object: string | PathState | undefined = undefined;
  /** The hash of a state kept by its key. */
  #hash: string | undefined = undefined;

  /** A file's record from its stat, not pictured yet (`state` is `undefined`). */
  constructor(p: string, size: number, mode: number, mtimeMs: number, ino: number) {
    this.path = p;
    this.size = size;
    this.mode = mode;
    this.mtimeMs = mtimeMs;
    this.ino = ino;
  }

  /** The picture's state of the file: a new object each read where it repeats the stat (compare states by content, never by identity). */
  get state(): PathState | undefined {
    const object = this.#object;
    if (typeof object !== 'string') return object;
    return { type: 'file', object, hash: this.#hash as string, size: this.size, mode: this.mode, ino: this.ino };
  }

  set state(state: PathState | undefined) {
    // Private fields ignore `Object.freeze`: a frozen record (a cached base's) refuses a state as a frozen plain record does.
    if (Object.isFrozen(this)) throw new TypeError(`Cannot assign to read only property 'state' of a frozen record (${this.path})`);
    if (state?.type === 'file' && state.size === this.size && state.mode === this.mode && state.ino === this.ino && state.sha256 === undefined) {
      this.#object = state.object;
      this.#hash = state.hash;
    } else {
      this.#object = state;
      this.#hash = undefined;
    }
  }

  /**
   * True when the state is a file state of this very stat (size, mode, inode) kept by its key,
   * told without making the state object: a pass over every record of a picture asks it.
   */
  get repeatsStat(): boolean {
    return typeof this.#object === 'string';
  }

  /** The object key of a file state, told without making the state object; `undefined` for any other state or none. */
  get objectKey(): string | undefined {
    const object = this.#object;
    if (typeof object === 'string') return object;
    return object?.type === 'file' ? object.object : undefined;
  }

  /** The plain record, as JSON writes it (a delta document's records). */
  toJSON(): StatRecord & { state?: PathState } {
    const state = this.state;
    return { path: this.path, type: 'file', size: this.size, mode: this.mode, mtimeMs: this.mtimeMs, ino: this.ino, ...(state !== undefined ? { state } : {}) };
  }
}

/**
 * A pictured file's record whose state is `state`, as one {@link FileRecord} (a base read back, a
 * delta record): the same fields and state as the plain record `{ path, type: 'file', size, mode, mtimeMs, ino, state }`.
 */
export function pictured(p: string, size: number, mode: number, mtimeMs: number, ino: number, state: PathState): FileRecord & { state: PathState } {
  const record = new FileRecord(p, small(size), small(mode), mtimeMs, small(ino));
  record.state = state;
  return record as FileRecord & { state: PathState };
}

/**
 * `n` as a small integer where it is one. The stat numbers come out of a Float64Array, and V8
 * stores a field that once held such a number as a 16-byte box in every object of the same shape:
 * three boxes a record, 47 bytes of a record's 154 (measured, 200,000 records; the mtime stays a
 * double). An inode or a size past 2^31 keeps its box, and then every record's field does.
 */
function small(n: number): number {
  return (n | 0) === n ? n | 0 : n;
}

