import { isCredentialPath } from './coverage.js';
import { CheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import type { Gap, PathState } from '../core/model.js';
import type { FileSystem } from '../fs/file-system.js';
import { resolveInsideRoot } from '../fs/paths.js';
import { storeFile } from './stable-read.js';
import type { CheckpointStore } from '../store/store.js';

/** What capturing one path needs. */
export interface PathCaptureContext {
  fs: FileSystem;
  store: CheckpointStore;
  projectRoot: string;
  /** Files larger than this are recorded, not copied. */
  maxFileBytes: number;
  /** True for a file recorded but never copied because it holds credentials. @default every credential file */
  isUncopiedCredential?: (projectPath: string) => boolean;
}

/** The recorded state of a path, plus the gap to report when its bytes could not be kept. */
export interface CapturedPath {
  state: PathState;
  gap?: Gap;
}

/**
 * Records the current state of one project path: its bytes into the store (file), its target
 * (symlink, never followed), or its absence. Never throws for a file it cannot copy: that becomes
 * an `uncopied` state with a gap, so the caller's write still proceeds.
 *
 * @throws CheckpointError `INVALID_PATH` when the path walks through a symlinked folder.
 */
export async function capturePath(context: PathCaptureContext, projectPath: string): Promise<CapturedPath> {
  const { absolute } = await resolveInsideRoot(context.fs, context.projectRoot, projectPath);
  let stats;
  try {
    stats = context.fs.sync !== undefined ? context.fs.sync.lstatSync(absolute) : await context.fs.lstat(absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { state: { type: 'absent' } };
    return uncopied(projectPath, 'unreadable', 0, 0, `cannot inspect: ${code ?? String(error)}`);
  }
  if (stats.isSymbolicLink()) {
    return { state: { type: 'symlink', target: context.fs.sync !== undefined ? context.fs.sync.readlinkSync(absolute) : await context.fs.readlink(absolute) } };
  }
  if (stats.isDirectory()) return { state: { type: 'other', kind: 'directory' } };
  if (!stats.isFile()) {
    const kind = stats.isFIFO() ? 'fifo' : stats.isSocket() ? 'socket' : stats.isBlockDevice() || stats.isCharacterDevice() ? 'device' : 'unknown';
    return { state: { type: 'other', kind } };
  }
  const size = Number(stats.size);
  const mode = Number(stats.mode) & 0o7777;
  if ((context.isUncopiedCredential ?? isCredentialPath)(projectPath)) return uncopied(projectPath, 'credential', size, mode, 'credential file: recorded, never copied');
  if (size > context.maxFileBytes) return uncopied(projectPath, 'too-large', size, mode, `over the ${formatMib(context.maxFileBytes)} copy limit`);
  for (let attempt = 0; ; attempt++) {
    try {
      // No store lock: objects land in this process's own pack, which prune never touches, and
      // dedupe hits only reference packs young enough that prune leaves them alone (see retention.ts).
      // Raw (uncompressed) on this latency-critical path; prune's repack compresses it later.
      const ref = await storeFile(context.store, absolute, undefined, { compress: false }, context.fs);
      return { state: { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: ref.mode & 0o7777, ino: Number(stats.ino) } };
    } catch (error) {
      if (isCheckpointError(error, 'STORE_BUSY')) {
        return uncopied(projectPath, 'store-busy', size, mode, 'the checkpoint store is busy (another session is using it)');
      }
      if (isCheckpointError(error, 'CONFLICT')) {
        if (attempt < 2) continue;
        return uncopied(projectPath, 'changed-during-capture', size, mode, 'the file kept changing while it was copied');
      }
      if (isCheckpointError(error) && error.code !== 'IO') throw error;
      const code = errnoCode(error instanceof CheckpointError ? (error.cause ?? error) : error);
      if (code === 'ENOENT') return { state: { type: 'absent' } };
      if (code === 'ENOSPC' || code === 'EDQUOT') return uncopied(projectPath, 'store-full', size, mode, 'the checkpoint store is full: no copy kept');
      return uncopied(projectPath, 'unreadable', size, mode, `cannot copy: ${code ?? (error as Error).message}`);
    }
  }
}

function uncopied(path: string, reason: Extract<PathState, { type: 'uncopied' }>['reason'], size: number, mode: number, detail: string): CapturedPath {
  return { state: { type: 'uncopied', reason, size, mode }, gap: { path, reason, detail } };
}

function formatMib(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 100) / 100} MiB`;
}
