import { constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import type { BigIntStats } from 'node:fs';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { contentHash, createContentHash, loadHasher } from '../core/hash.js';
import { fingerprintOf, type Fingerprint } from '../core/model.js';
import type { FileSystem, SyncFileSystem } from './file-system.js';
import { assertCanonicalProjectPath, resolveInsideRoot, resolveInsideRootSync, type AncestorMemo } from './paths.js';

/**
 * What a project path holds on disk right now, read without following links.
 * `mode` is the permission part of `st_mode` (`& 0o7777`); `nlink` tells restore whether other
 * hard links share the file's content.
 */
export type DiskState =
  | { type: 'file'; hash: string; size: number; mode: number; nlink: number; statId?: Fingerprint; uid?: number; gid?: number; ino?: number }
  | { type: 'absent' }
  | { type: 'symlink'; target: string }
  | { type: 'other'; kind: 'directory' | 'fifo' | 'socket' | 'device' | 'unknown' };

const HASH_CHUNK = 1 << 20;

/**
 * Reads the current state of `projectPath` under `projectRoot`. Ancestors are checked with
 * `lstat` (a symlinked or non-folder ancestor throws), the leaf is `lstat`ed and never followed,
 * and a regular file is hashed through a no-follow handle whose identity is compared with the
 * `lstat` result, so a file swapped for a link mid-read is never read through the link.
 * A missing ancestor folder means the path is `absent`.
 *
 * @throws CheckpointError `INVALID_PATH` for non-canonical paths, `.git` paths, or an ancestor
 *   that is a symlink or not a folder; `IO` for other operating-system failures.
 */
export async function readDiskState(fs: FileSystem, projectRoot: string, projectPath: string, reach: Reach = {}): Promise<DiskState> {
  await loadHasher();
  // A path that keeps changing type under us is reported as a conflict rather than chased forever.
  for (let attempt = 0; attempt < 3; attempt++) {
    const state = await readOnce(fs, projectRoot, projectPath, reach);
    if (state !== RETRY) return state;
  }
  throw new CheckpointError('CONFLICT', `${projectPath} kept changing while it was read`, { path: projectPath });
}

const RETRY: unique symbol = Symbol('retry');

/**
 * How the path is reached. By default every ancestor is checked with `lstat` on the way;
 * `reachedAt` is the absolute path to read instead (the leaf through a held folder's descriptor,
 * see fs/anchors.ts), its folder checked by the caller.
 */
export interface Reach {
  reachedAt?: string;
  /** What earlier reads of the same read-only pass found per ancestor (a plan's): each folder is `lstat`ed once. */
  seen?: AncestorMemo;
}

async function readOnce(fs: FileSystem, projectRoot: string, projectPath: string, reach: Reach): Promise<DiskState | typeof RETRY> {
  if (fs.sync !== undefined) {
    // Only the state leaves: the bytes are read into the shared scratch buffer, not a new one.
    const state = readOnceSync(fs.sync, projectRoot, projectPath, reach, true);
    if (state instanceof SmallFile) return state.state;
    if (!(state instanceof LargeFile)) return state;
    return hashRegularFile(fs, state.absolute, projectPath, state.stats);
  }
  const resolved = reach.reachedAt !== undefined ? { absolute: reach.reachedAt, missingDirs: [] } : await resolveInsideRoot(fs, projectRoot, projectPath, reach.seen);
  if (resolved.missingDirs.length > 0) return { type: 'absent' };
  let stats: BigIntStats;
  try {
    stats = await fs.lstat(resolved.absolute, { bigint: true });
  } catch (error) {
    return absentOrThrow(error, projectPath);
  }
  if (stats.isSymbolicLink()) {
    try {
      return { type: 'symlink', target: await fs.readlink(resolved.absolute) };
    } catch (error) {
      return retryOrThrow(error, projectPath);
    }
  }
  if (stats.isFile()) return hashRegularFile(fs, resolved.absolute, projectPath, stats);
  return nonFileState(stats);
}

/** Files up to this size are read and hashed with synchronous calls (a few microseconds each). */
export const SYNC_READ_MAX_BYTES: number = 256 * 1024;

/** A regular file too large for the synchronous path: hashed through the promise API. */
class LargeFile {
  constructor(
    readonly absolute: string,
    readonly stats: BigIntStats,
  ) {}
}

/** A small regular file read whole: its state and the bytes it was hashed from. */
class SmallFile {
  constructor(
    readonly state: DiskState,
    readonly bytes: Buffer,
  ) {}
}

/**
 * {@link readDiskState} in one synchronous pass, keeping a small file's bytes (the restore guard
 * saves exactly those before a swap). `undefined` when one pass does not settle it: a file over
 * {@link SYNC_READ_MAX_BYTES}, or a path that changed type while it was read.
 *
 * @throws CheckpointError as {@link readDiskState}.
 */
export function readDiskStateSync(
  fs: SyncFileSystem,
  projectRoot: string,
  projectPath: string,
  options: Reach = {},
): { state: DiskState; bytes?: Buffer } | undefined {
  const read = readOnceSync(fs, projectRoot, projectPath, options);
  if (read === RETRY || read instanceof LargeFile) return undefined;
  return read instanceof SmallFile ? { state: read.state, bytes: read.bytes } : { state: read };
}

/**
 * One buffer for the small files whose bytes only are hashed (a plan reads every path it restores):
 * a fresh buffer per file was most of a plan's garbage. Used synchronously only, never returned.
 */
let scratch: Buffer = Buffer.allocUnsafeSlow(64 * 1024);

/** `toScratch`: the bytes are only hashed, never kept, so they are read into the shared buffer (the returned `SmallFile.bytes` must not be used). */
function readOnceSync(fs: SyncFileSystem, projectRoot: string, projectPath: string, reach: Reach, toScratch = false): DiskState | SmallFile | LargeFile | typeof RETRY {
  if (reach.reachedAt !== undefined) assertCanonicalProjectPath(projectPath);
  const resolved = reach.reachedAt !== undefined ? { absolute: reach.reachedAt, missingDirs: [] } : resolveInsideRootSync(fs, projectRoot, projectPath, reach.seen);
  if (resolved.missingDirs.length > 0) return { type: 'absent' };
  let stats: BigIntStats;
  try {
    stats = fs.lstatSync(resolved.absolute, { bigint: true });
  } catch (error) {
    return absentOrThrow(error, projectPath);
  }
  if (stats.isSymbolicLink()) {
    try {
      return { type: 'symlink', target: fs.readlinkSync(resolved.absolute) };
    } catch (error) {
      return retryOrThrow(error, projectPath);
    }
  }
  if (!stats.isFile()) return nonFileState(stats);
  if (stats.size > BigInt(SYNC_READ_MAX_BYTES)) return new LargeFile(resolved.absolute, stats);
  let fd: number;
  try {
    fd = fs.openSync(resolved.absolute, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    return retryOrThrow(error, projectPath);
  }
  try {
    const opened = fs.fstatSync(fd, { bigint: true });
    if (!opened.isFile() || opened.ino !== stats.ino || opened.dev !== stats.dev) return RETRY;
    // One byte of slack tells a file that grew since fstat from one that did not.
    const length = Number(opened.size) + 1;
    if (toScratch && scratch.length < length) scratch = Buffer.allocUnsafeSlow(Math.max(length, scratch.length * 2));
    const buffer = toScratch ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
    let size = 0;
    for (;;) {
      const wanted = buffer.length - size;
      const read = fs.readSync(fd, buffer, size, wanted, size);
      size += read;
      if (size === buffer.length) return RETRY; // still growing: read the new state
      // A regular file reads short only at its end: no second call to see zero bytes.
      if (read < wanted) break;
    }
    const bytes = buffer.subarray(0, size);
    return new SmallFile(fileState(contentHash(bytes), size, opened), bytes);
  } catch (error) {
    throw asCheckpointError(error, `cannot read ${projectPath}`, projectPath);
  } finally {
    fs.closeSync(fd);
  }
}

/** `statId` is taken from the descriptor the bytes were read through, so the two describe one version. */
function fileState(hash: string, size: number, stats: BigIntStats): DiskState {
  return { type: 'file', hash, size, mode: Number(stats.mode & 0o7777n), nlink: Number(stats.nlink), statId: statFingerprint(stats), uid: Number(stats.uid), gid: Number(stats.gid), ino: Number(stats.ino) };
}

/**
 * The stat identity of one version of a regular file: inode, size, and nanosecond mtime and
 * ctime. A write through any path changes mtime and ctime (and usually size), so an equal identity
 * means the same version. Recorded by `afterWrite` in place of a content hash when hashing can wait.
 */
export function statFingerprint(stats: BigIntStats): Fingerprint {
  return `stat:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

/** What {@link readPostWriteState} records after a write. */
export interface PostWriteState {
  /** A content fingerprint, or for a regular file its stat identity ({@link statFingerprint}). */
  fingerprint: Fingerprint;
  /** Permission bits of a regular file. */
  mode?: number;
}

/**
 * What a path holds right after a write, at the cost of one `lstat`: a regular file is recorded by
 * its stat identity and hashed later (by the observer, while the identity still holds); anything
 * else by its content fingerprint. Ancestors are not checked here: an identity read through a
 * symlinked folder can never match the no-follow read the restore guard makes later.
 *
 * @throws CheckpointError `IO` when the path cannot be inspected.
 */
export async function readPostWriteState(fs: FileSystem, projectRoot: string, projectPath: string): Promise<PostWriteState> {
  const absolute = path.join(projectRoot, ...projectPath.split("/"));
  let stats: BigIntStats;
  try {
    stats = fs.sync !== undefined ? fs.sync.lstatSync(absolute, { bigint: true }) : await fs.lstat(absolute, { bigint: true });
  } catch (error) {
    return { fingerprint: diskFingerprint(absentOrThrow(error, projectPath)) };
  }
  if (stats.isFile()) return { fingerprint: statFingerprint(stats), mode: Number(stats.mode & 0o7777n) };
  // Links and special files are cheap to fingerprint exactly.
  return { fingerprint: diskFingerprint(await readDiskState(fs, projectRoot, projectPath)) };
}

/**
 * The state of the file version a stat identity ({@link statFingerprint}) names, read only while
 * the path still holds exactly that version: one `lstat`, then open, `fstat` (the identity checked
 * again on the descriptor), read and hash — five calls where {@link readDiskState} makes one per
 * ancestor more. Ancestors are not checked, for the reason {@link readPostWriteState} gives.
 * `'changed'` when the path holds another version (or nothing); `'unknown'` when this path cannot
 * tell (a large file, no synchronous calls): read it with {@link readDiskState} instead.
 */
export function readVersionSync(fs: FileSystem, projectRoot: string, projectPath: string, statId: Fingerprint): DiskState | 'changed' | 'unknown' {
  const sync = fs.sync;
  if (sync === undefined) return 'unknown';
  const absolute = path.join(projectRoot, ...projectPath.split('/'));
  let stats: BigIntStats;
  try {
    stats = sync.lstatSync(absolute, { bigint: true });
  } catch {
    return 'changed';
  }
  if (!stats.isFile() || statFingerprint(stats) !== statId) return 'changed';
  if (stats.size > BigInt(SYNC_READ_MAX_BYTES)) return 'unknown';
  let fd: number;
  try {
    fd = sync.openSync(absolute, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch {
    return 'changed';
  }
  try {
    const opened = sync.fstatSync(fd, { bigint: true });
    if (!opened.isFile() || statFingerprint(opened) !== statId) return 'changed';
    const size = Number(opened.size);
    const buffer = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const read = sync.readSync(fd, buffer, got, size - got, got);
      if (read === 0) return 'changed';
      got += read;
    }
    return fileState(contentHash(buffer), size, opened);
  } catch {
    return 'unknown';
  } finally {
    sync.closeSync(fd);
  }
}

function absentOrThrow(error: unknown, projectPath: string): DiskState {
  const code = errnoCode(error);
  if (code === 'ENOENT' || code === 'ENOTDIR') return { type: 'absent' };
  throw asCheckpointError(error, `cannot inspect ${projectPath}`, projectPath);
}

/** ELOOP: the file became a symlink after lstat; ENOENT/EINVAL: it vanished or changed type. Read again. */
function retryOrThrow(error: unknown, projectPath: string): typeof RETRY {
  const code = errnoCode(error);
  if (code === 'ENOENT' || code === 'EINVAL' || code === 'ELOOP') return RETRY;
  throw asCheckpointError(error, `cannot read ${projectPath}`, projectPath);
}

function nonFileState(stats: BigIntStats): DiskState {
  if (stats.isDirectory()) return { type: 'other', kind: 'directory' };
  if (stats.isFIFO()) return { type: 'other', kind: 'fifo' };
  if (stats.isSocket()) return { type: 'other', kind: 'socket' };
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return { type: 'other', kind: 'device' };
  return { type: 'other', kind: 'unknown' };
}

async function hashRegularFile(
  fs: FileSystem,
  absolute: string,
  projectPath: string,
  seen: BigIntStats,
): Promise<DiskState | typeof RETRY> {
  await loadHasher();
  let handle;
  try {
    // O_NONBLOCK: a FIFO swapped in after lstat must not hang the open.
    handle = await fs.open(absolute, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    return retryOrThrow(error, projectPath);
  }
  try {
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile() || stats.ino !== seen.ino || stats.dev !== seen.dev) return RETRY;
    const hash = createContentHash();
    const buffer = Buffer.allocUnsafe(Math.min(HASH_CHUNK, Math.max(Number(stats.size), 1)));
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
    return fileState(hash.digest(), size, stats);
  } finally {
    await handle.close();
  }
}

/**
 * The restore-guard fingerprint of a disk state, comparable with `fingerprintOf` of a recorded
 * `PathState`: `file:<hash>`, `symlink:<target>`, `absent`, `other:<kind>`.
 */
export function diskFingerprint(state: DiskState): Fingerprint {
  // Every disk state has a fingerprint: only an `uncopied` record without a hash lacks one.
  return fingerprintOf(state) as Fingerprint;
}
