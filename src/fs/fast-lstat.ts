import { lstatSync } from 'node:fs';
import { pathForKernel } from '../core/raw-names.js';

// `lstat` as five numbers, without Node's `Stats` object. A picture is one `lstat` per covered
// file; in a fresh process, building each `Stats` (four `Date`s among its fields) and collecting
// them cost as much as the system call itself: 10,000 files measured 86–100 ms through
// `fs.lstatSync` against 42–44 ms through the binding `fs.lstatSync` itself calls. The binding is
// Node's own (`process.binding('fs')`, documented as deprecated but kept for compatibility); it is
// used only after a self-check against `fs.lstatSync` passes, and never where it would bypass
// something a person turned on (the permission model) or print a warning
// (`--pending-deprecation`). Everywhere else the `fs.lstatSync` path gives the same numbers.

/** Kind codes of an `lstat`: nothing there (`ENOENT`). */
export const KIND_MISSING = 0;
/** Kind code: a regular file. */
export const KIND_FILE = 1;
/** Kind code: a symbolic link. */
export const KIND_SYMLINK = 2;
/** Kind code: a folder. */
export const KIND_FOLDER = 3;
/** Kind code: anything else (FIFO, socket, device). */
export const KIND_OTHER = 4;
/** Kind code: `lstat` failed for another reason (`EACCES`, `ELOOP`, ...). */
export const KIND_FAILED = 5;
/** Kind code: a component of the path is not a folder (`ENOTDIR`). */
export const KIND_NOT_FOLDER_ON_PATH = 6;

/** Numbers {@link lstatNumbers} writes: kind, permission bits, size, mtimeMs, inode. */
export const STAT_FIELDS = 5;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

// Positions in the binding's stat array (node_file.h: dev, mode, nlink, uid, gid, rdev, blksize,
// ino, size, blocks, then seconds and nanoseconds of atime, mtime, ctime, birthtime).
const AT_MODE = 1;
const AT_INO = 7;
const AT_SIZE = 8;
const AT_MTIME_SEC = 12;
const AT_MTIME_NSEC = 13;

type BindingLstat = (path: string | Buffer, useBigint: boolean, request: undefined, throwIfNoEntry: boolean) => Float64Array | undefined;

let bindingLstat: BindingLstat | null | undefined;

function kindOf(mode: number): number {
  const type = mode & S_IFMT;
  return type === S_IFREG ? KIND_FILE : type === S_IFLNK ? KIND_SYMLINK : type === S_IFDIR ? KIND_FOLDER : KIND_OTHER;
}

function errorKind(error: unknown): number {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOTDIR' ? KIND_NOT_FOLDER_ON_PATH : code === 'ENOENT' ? KIND_MISSING : KIND_FAILED;
}

/** The numbers of one binding answer, in {@link lstatNumbers}'s layout. */
function fromBinding(values: Float64Array, out: Float64Array, at: number): number {
  const mode = values[AT_MODE] as number;
  out[at + 1] = mode & 0o7777;
  out[at + 2] = values[AT_SIZE] as number;
  // Node's own formula for Stats.mtimeMs, so both paths give the very same double.
  out[at + 3] = (values[AT_MTIME_SEC] as number) * 1e3 + (values[AT_MTIME_NSEC] as number) / 1e6;
  out[at + 4] = values[AT_INO] as number;
  return kindOf(mode);
}

/** The binding's `lstat` when it may be used and answers exactly as `fs.lstatSync` does; else `null`. */
function loadBinding(): BindingLstat | null {
  if (process.platform === 'win32') return null; // paths would need Node's namespacing there
  if ((process as { permission?: unknown }).permission !== undefined) return null;
  const options = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`;
  if (options.includes('--pending-deprecation') || process.env.NODE_PENDING_DEPRECATION === '1') return null;
  try {
    const binding = (process as unknown as { binding(name: string): { lstat?: unknown } }).binding('fs');
    const lstat = binding.lstat;
    if (typeof lstat !== 'function') return null;
    const candidate = lstat.bind(binding) as BindingLstat;
    // The self-check: a folder and a file, number for number, and a missing path.
    for (const probe of [process.cwd(), process.execPath]) {
      const expected = lstatSync(probe);
      const values = candidate(probe, false, undefined, false);
      if (!(values instanceof Float64Array) || values.length < AT_MTIME_NSEC + 1) return null;
      const out = new Float64Array(STAT_FIELDS);
      const kind = fromBinding(values, out, 0);
      const expectedKind = kindOf(expected.mode);
      if (kind !== expectedKind || out[1] !== (expected.mode & 0o7777) || out[2] !== expected.size || out[3] !== expected.mtimeMs || out[4] !== expected.ino) return null;
    }
    if (candidate(`${process.execPath}.turnback-probe-missing`, false, undefined, false) !== undefined) return null;
    return candidate;
  } catch {
    return null;
  }
}

/**
 * `lstat` of `path` into `out[at + 1 .. at + 4]` (permission bits, size, mtimeMs, inode) and
 * returns its kind code; `out[at]` is the caller's (a batch keeps the kind there). The numbers are
 * written only for an existing path. Never throws.
 */
export function lstatNumbers(name: string, out: Float64Array, at: number): number {
  const path = pathForKernel(name);
  if (bindingLstat === undefined) bindingLstat = loadBinding();
  if (bindingLstat !== null) {
    let values: Float64Array | undefined;
    try {
      values = bindingLstat(path, false, undefined, false);
    } catch (error) {
      return errorKind(error);
    }
    return values === undefined ? KIND_MISSING : fromBinding(values, out, at);
  }
  let stats;
  try {
    stats = lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    return errorKind(error);
  }
  if (stats === undefined) return KIND_MISSING;
  out[at + 1] = stats.mode & 0o7777;
  out[at + 2] = stats.size;
  out[at + 3] = stats.mtimeMs;
  out[at + 4] = stats.ino;
  return kindOf(stats.mode);
}

/** True when {@link lstatNumbers} goes through the binding (for tests and the bench). */
export function usesFastLstat(): boolean {
  if (bindingLstat === undefined) bindingLstat = loadBinding();
  return bindingLstat !== null;
}
