import { constants as fsConstants } from 'node:fs';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import type { GapReason } from '../core/model.js';
import { pathForKernel } from '../core/raw-names.js';
import { DEFAULT_SKIPPED_FOLDERS, isCredentialPath } from './coverage.js';
import { readDirSync } from './stat-record.js';

// What a savepoint holds: the regular files under its tracked paths, within fixed bounds, read
// whole (a savepoint is small by design: 8 MiB at most). Reads only; the keeper stores them.

const KIB = 1024;
const MIB = 1024 * KIB;

/** Per-savepoint limits a caller may set, each up to its ceiling ({@link SAVEPOINT_CEILINGS}). */
export interface SavepointLimits {
  /** Most files one savepoint holds. @default 400 */
  maxFiles: number;
  /** Largest file one savepoint holds, in bytes. @default 262144 (256 KiB) */
  maxFileBytes: number;
}

/** The defaults of {@link SavepointLimits}. */
export const SAVEPOINT_DEFAULTS: Readonly<SavepointLimits> = Object.freeze({ maxFiles: 400, maxFileBytes: 256 * KIB });
/** The highest values {@link SavepointLimits} may take. */
export const SAVEPOINT_CEILINGS: Readonly<SavepointLimits> = Object.freeze({ maxFiles: 2000, maxFileBytes: 2 * MIB });

/** The bounds of one savepoint (see {@link SAVEPOINT_BOUNDS}). */
export type SavepointBounds = Readonly<{ contentBytes: number; entries: number; folders: number; depth: number; manifestBytes: number }>;

/** Bounds every savepoint keeps whatever its limits. */
export const SAVEPOINT_BOUNDS: SavepointBounds = Object.freeze({
  /** Bytes of file content in one savepoint. */
  contentBytes: 8 * MIB,
  /** Folder entries looked at (ignored entries and symlinks included). */
  entries: 8192,
  /** Folders walked. */
  folders: 512,
  /** Folder depth below the project root. */
  depth: 32,
  /** Size of the savepoint's manifest (estimated as it grows). */
  manifestBytes: 16 * MIB,
});

/**
 * Folder names a savepoint never walks: version control, dependencies and build output (the
 * default skipped folders of pictures, and the usual build folders).
 */
export const SAVEPOINT_SKIPPED_FOLDERS: ReadonlySet<string> = new Set(['.git', ...DEFAULT_SKIPPED_FOLDERS, 'dist', 'build', 'out', 'coverage', '.cache', '.turbo']);

/** One file a savepoint holds. */
export interface SavepointFile {
  /** Project-relative, `/`-separated. */
  path: string;
  bytes: Buffer;
  /** Permission bits. */
  mode: number;
}

/** Why a savepoint is cut short. */
export interface SavepointShortfall {
  reason: GapReason;
  detail: string;
  path?: string;
}

/** What a savepoint walk found. */
export interface SavepointWalk {
  files: SavepointFile[];
  /** True when a bound was hit or reached exactly, or an eligible file could not be read. */
  truncated: boolean;
  /** Why, when truncated. */
  shortfalls: SavepointShortfall[];
}

/** Checks and completes caller limits. @throws CheckpointError `INVALID_ARGUMENT` past a ceiling. */
export function resolveSavepointLimits(limits: Partial<SavepointLimits> = {}): SavepointLimits {
  const resolved = { ...SAVEPOINT_DEFAULTS, ...limits };
  for (const key of ['maxFiles', 'maxFileBytes'] as const) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value < 1 || value > SAVEPOINT_CEILINGS[key]) {
      throw new CheckpointError('INVALID_ARGUMENT', `${key} must be a whole number from 1 to ${SAVEPOINT_CEILINGS[key]}`);
    }
  }
  return resolved;
}

/** Estimated manifest bytes one file entry costs (its path plus the state's fields). */
function entryCost(projectPath: string): number {
  return projectPath.length + 256;
}

/**
 * Reads the files a savepoint holds: regular files under `trackedPaths` (project-relative; `'.'`
 * is the whole project), in name order, skipping symlinks, credential files, the skipped folders,
 * `exclude` (absolute paths: the store) and files holding a NUL byte. Never follows a link.
 *
 * `bounds` are {@link SAVEPOINT_BOUNDS}; a test passes smaller ones to reach a bound the file
 * ceilings keep out of reach (2,000 files of 4,096-character paths estimate under 9 MiB of the
 * 16 MiB manifest bound).
 *
 * @throws CheckpointError `INVALID_PATH` / `OUTSIDE_ROOT` for a tracked path that is not inside.
 */
export function walkSavepoint(root: string, trackedPaths: readonly string[], limits: SavepointLimits, exclude: readonly string[] = [], bounds: SavepointBounds = SAVEPOINT_BOUNDS): SavepointWalk {
  const files: SavepointFile[] = [];
  const shortfalls: SavepointShortfall[] = [];
  const excluded = new Set(exclude.map((p) => path.resolve(p)));
  let entries = 0;
  let folders = 0;
  let contentBytes = 0;
  let manifestBytes = 1024;
  let stopped = false;
  const seen = new Set<string>();
  const stop = (reason: GapReason, detail: string): void => {
    if (!stopped) shortfalls.push({ reason, detail });
    stopped = true;
  };

  const takeFile = (abs: string, rel: string): void => {
    if (seen.has(rel)) return;
    seen.add(rel);
    if (isCredentialPath(rel)) return;
    const read = readWhole(abs, limits.maxFileBytes);
    if (read === 'not-a-file') return;
    if (read === 'too-large') {
      shortfalls.push({ reason: 'too-large', detail: `${rel} is over ${limits.maxFileBytes} bytes`, path: rel });
      return;
    }
    if (typeof read === 'string') {
      shortfalls.push({ reason: 'unreadable', detail: `${rel} could not be read (${read})`, path: rel });
      return;
    }
    if (read.bytes.includes(0)) return;
    if (contentBytes + read.bytes.length > bounds.contentBytes) {
      stop('picture-budget', `the savepoint reached ${bounds.contentBytes} bytes of content`);
      return;
    }
    if (manifestBytes + entryCost(rel) > bounds.manifestBytes) {
      stop('picture-budget', `the savepoint's manifest reached ${bounds.manifestBytes} bytes`);
      return;
    }
    files.push({ path: rel, bytes: read.bytes, mode: read.mode });
    contentBytes += read.bytes.length;
    manifestBytes += entryCost(rel);
    // Reaching a bound exactly may have left something out: counted as cut short.
    if (files.length >= limits.maxFiles) stop('picture-budget', `the savepoint reached ${limits.maxFiles} files`);
    else if (contentBytes === bounds.contentBytes) stop('picture-budget', `the savepoint reached ${bounds.contentBytes} bytes of content`);
    else if (manifestBytes === bounds.manifestBytes) stop('picture-budget', `the savepoint's manifest reached ${bounds.manifestBytes} bytes`);
  };

  const walkFolder = (abs: string, rel: string, depth: number): void => {
    if (stopped) return;
    if (depth > bounds.depth) {
      shortfalls.push({ reason: 'too-deep', detail: `${rel}/ is deeper than ${bounds.depth} levels`, path: rel });
      return;
    }
    folders += 1;
    if (folders > bounds.folders) return stop('walk-entries', `the savepoint reached ${bounds.folders} folders`);
    let dirents: nodeFs.Dirent[];
    try {
      dirents = readDirSync(abs);
    } catch (error) {
      shortfalls.push({ reason: 'unreadable', detail: `${rel === '' ? '.' : rel}/ cannot be listed (${errnoCode(error) ?? 'error'})`, path: rel === '' ? '.' : rel });
      return;
    }
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const dirent of dirents) {
      if (stopped) return;
      entries += 1;
      if (entries > bounds.entries) return stop('walk-entries', `the savepoint looked at ${bounds.entries} folder entries`);
      const childAbs = path.join(abs, dirent.name);
      const childRel = rel === '' ? dirent.name : `${rel}/${dirent.name}`;
      if (excluded.has(childAbs) || dirent.name.startsWith('.turnback-')) continue;
      if (dirent.isDirectory()) {
        if (!SAVEPOINT_SKIPPED_FOLDERS.has(dirent.name)) walkFolder(childAbs, childRel, depth + 1);
      } else if (dirent.isFile()) {
        takeFile(childAbs, childRel);
      }
      // Symlinks, FIFOs, sockets and devices are never held.
      if (!stopped && entries === bounds.entries) stop('walk-entries', `the savepoint looked at ${bounds.entries} folder entries`);
    }
  };

  for (const tracked of trackedPaths) {
    if (stopped) break;
    const rel = trackedRelative(root, tracked);
    const abs = rel === '' ? root : path.join(root, ...rel.split('/'));
    let stats: nodeFs.Stats;
    try {
      stats = nodeFs.lstatSync(pathForKernel(abs));
    } catch {
      continue; // A tracked path that does not exist holds nothing.
    }
    if (!insideThroughFolders(root, rel)) continue;
    if (stats.isDirectory()) walkFolder(abs, rel, rel === '' ? 0 : rel.split('/').length);
    else if (stats.isFile()) takeFile(abs, rel);
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, truncated: shortfalls.length > 0, shortfalls };
}

/** A tracked path as a project path (`''` for the whole project). @throws CheckpointError outside the root. */
export function trackedRelative(root: string, tracked: string): string {
  if (typeof tracked !== 'string' || tracked.length === 0 || tracked.includes('\0')) throw new CheckpointError('INVALID_PATH', 'a tracked path must be a non-empty string');
  const absolute = path.resolve(root, tracked);
  const rel = path.relative(root, absolute);
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) throw new CheckpointError('OUTSIDE_ROOT', `tracked path ${tracked} is outside the project`, { path: tracked });
  return rel.split(path.sep).join('/');
}

/** True when every folder from the root down to `rel`'s parent is a real folder (no link on the way). */
export function insideThroughFolders(root: string, rel: string): boolean {
  if (rel === '') return true;
  const parts = rel.split('/');
  let current = root;
  for (const part of parts.slice(0, -1)) {
    current = path.join(current, part);
    try {
      if (!nodeFs.lstatSync(pathForKernel(current)).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** A file's bytes and mode, read through a descriptor that never follows a link, and checked unchanged while read. */
function readWhole(abs: string, maxBytes: number): { bytes: Buffer; mode: number } | 'not-a-file' | 'too-large' | string {
  let fd: number;
  try {
    fd = nodeFs.openSync(pathForKernel(abs), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    return code === 'ELOOP' || code === 'ENOENT' ? 'not-a-file' : (code ?? 'error');
  }
  try {
    const before = nodeFs.fstatSync(fd);
    if (!before.isFile()) return 'not-a-file';
    if (before.size > maxBytes) return 'too-large';
    const bytes = Buffer.alloc(before.size);
    let read = 0;
    while (read < bytes.length) {
      const n = nodeFs.readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    const after = nodeFs.fstatSync(fd);
    if (read !== before.size || after.size !== before.size || after.mtimeMs !== before.mtimeMs) return 'changed while read';
    return { bytes, mode: before.mode & 0o7777 };
  } catch (error) {
    return errnoCode(error) ?? 'error';
  } finally {
    nodeFs.closeSync(fd);
  }
}
