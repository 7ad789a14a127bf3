import { constants as fsConstants } from 'node:fs';
import type { Stats } from 'node:fs';
import { CheckpointError, asCheckpointError, assertNever, errnoCode } from '../core/errors.js';
import { createContentHash, loadHasher } from '../core/hash.js';
import type { Fingerprint } from '../core/model.js';
import type { FileSystem } from './file-system.js';
import { resolveInsideRoot } from './paths.js';

/**
 * What a project path holds on disk right now, read without following links.
 * `mode` is the permission part of `st_mode` (`& 0o7777`); `nlink` tells restore whether other
 * hard links share the file's content.
 */
export type DiskState =
  | { type: 'file'; hash: string; size: number; mode: number; nlink: number }
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
export async function readDiskState(fs: FileSystem, projectRoot: string, projectPath: string): Promise<DiskState> {
  // A path that keeps changing type under us is reported as a conflict rather than chased forever.
  for (let attempt = 0; attempt < 3; attempt++) {
    const state = await readOnce(fs, projectRoot, projectPath);
    if (state !== RETRY) return state;
  }
  throw new CheckpointError('CONFLICT', `${projectPath} kept changing while it was read`, { path: projectPath });
}

const RETRY: unique symbol = Symbol('retry');

async function readOnce(fs: FileSystem, projectRoot: string, projectPath: string): Promise<DiskState | typeof RETRY> {
  const resolved = await resolveInsideRoot(fs, projectRoot, projectPath);
  if (resolved.missingDirs.length > 0) return { type: 'absent' };
  let stats: Stats;
  try {
    stats = await fs.lstat(resolved.absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { type: 'absent' };
    throw asCheckpointError(error, `cannot inspect ${projectPath}`, projectPath);
  }
  if (stats.isSymbolicLink()) {
    try {
      return { type: 'symlink', target: await fs.readlink(resolved.absolute) };
    } catch (error) {
      // The link vanished or was replaced between lstat and readlink: read the new state once more.
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'EINVAL') return RETRY;
      throw asCheckpointError(error, `cannot read link ${projectPath}`, projectPath);
    }
  }
  if (stats.isFile()) return hashRegularFile(fs, resolved.absolute, projectPath, stats);
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
  seen: Stats,
): Promise<DiskState | typeof RETRY> {
  await loadHasher();
  let handle;
  try {
    // O_NONBLOCK: a FIFO swapped in after lstat must not hang the open.
    handle = await fs.open(absolute, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    // ELOOP: the file became a symlink after lstat; ENOENT: it vanished. Re-read the new state.
    if (code === 'ELOOP' || code === 'ENOENT') return RETRY;
    throw asCheckpointError(error, `cannot read ${projectPath}`, projectPath);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.ino !== seen.ino || stats.dev !== seen.dev) return RETRY;
    const hash = createContentHash();
    const buffer = Buffer.allocUnsafe(Math.min(HASH_CHUNK, Math.max(stats.size, 1)));
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { type: 'file', hash: hash.digest(), size, mode: stats.mode & 0o7777, nlink: stats.nlink };
  } finally {
    await handle.close();
  }
}

/**
 * The restore-guard fingerprint of a disk state, comparable with `fingerprintOf` of a recorded
 * `PathState`: `file:<hash>`, `symlink:<target>`, `absent`, `other:<kind>`.
 */
export function diskFingerprint(state: DiskState): Fingerprint {
  switch (state.type) {
    case 'file':
      return `file:${state.hash}`;
    case 'absent':
      return 'absent';
    case 'symlink':
      return `symlink:${state.target}`;
    case 'other':
      return `other:${state.kind}`;
    default:
      return assertNever(state);
  }
}
