import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { insideThroughFolders, resolveSavepointLimits, walkSavepoint, type SavepointLimits } from '../capture/savepoint-walk.js';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import type { CheckpointManifest } from '../core/model.js';
import type { CheckpointStore } from '../store/store.js';

/** What `save` records beyond the files. */
export interface SavepointSaveOptions {
  /** Why the savepoint was made (at most 4,096 characters). */
  reason?: string;
  /** Project-relative paths whose files it holds. @default ['.'] */
  trackedPaths?: readonly string[];
  /** Files and bytes per file (up to their ceilings). */
  limits?: Partial<SavepointLimits>;
  sessionId?: string;
}

/** One savepoint as `save` and `list` report it. File contents are never part of it. */
export interface SavepointInfo {
  id: CheckpointId;
  /** What the caller gave, or `null`. */
  reason: string | null;
  createdAt: string;
  /** True when a bound was hit (or reached exactly) or an eligible file could not be read. */
  truncated: boolean;
  /** Files it holds. */
  files: number;
  /** Bytes of content it holds. */
  bytes: number;
}

/** What `diff` reports: the savepoint's files against the tree now, by path. */
export interface SavepointDiff {
  id: CheckpointId;
  /** Files whose content differs from the savepoint's. */
  changed: string[];
  /** Files not there now, or not readable as a regular file within the size limit. */
  missing: string[];
  /** Files that hold the savepoint's content. */
  unchanged: number;
}

/** The longest `reason` a savepoint keeps. */
export const SAVEPOINT_REASON_MAX = 4096;
/** Most savepoints `list` returns (newest first). */
export const SAVEPOINT_LIST_MAX = 100;

/** SHA-256 of `bytes`, hex. */
export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Savepoints: checkpoints of kind `savepoint` in the one store, each the files of the workspace
 * when it was made (within bounds), with every file's mode and SHA-256. What saves, lists and
 * diffs them; restoring goes through the session's restorer (one engine, saved first).
 */
export class SavepointKeeper {
  constructor(
    private readonly store: CheckpointStore,
    private readonly projectRoot: string,
  ) {}

  /** Makes a savepoint. @throws CheckpointError `INVALID_ARGUMENT` for a bad reason or limit. */
  async save(options: SavepointSaveOptions = {}): Promise<SavepointInfo> {
    const { reason } = options;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > SAVEPOINT_REASON_MAX)) {
      throw new CheckpointError('INVALID_ARGUMENT', `reason must be a string of at most ${SAVEPOINT_REASON_MAX} characters`);
    }
    const limits = resolveSavepointLimits(options.limits);
    const walk = walkSavepoint(this.projectRoot, options.trackedPaths ?? ['.'], limits, [this.store.root]);
    const writer = await this.store.openCheckpoint({ kind: 'savepoint', ...(reason !== undefined ? { label: reason } : {}), ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}) });
    let bytes = 0;
    try {
      const records = [];
      for (const file of walk.files) {
        // Raw, like a first touch: a savepoint is taken while the model waits, and 8 MiB of deflate
        // measured most of its time; a later repack by prune compresses them.
        const ref = await this.store.putBytes(file.bytes, { compress: false });
        bytes += ref.size;
        records.push({ op: 'before' as const, path: file.path, state: { type: 'file' as const, object: ref.object, hash: ref.hash, size: ref.size, mode: file.mode, sha256: sha256Of(file.bytes) } });
      }
      await writer.appendMany([...records, ...walk.shortfalls.map((gap) => ({ op: 'gap' as const, gap }))]);
      const manifest = await writer.seal({ complete: !walk.truncated });
      return infoOf(manifest, bytes);
    } catch (error) {
      await writer.close().catch(() => undefined);
      throw error;
    }
  }

  /** This workspace's savepoints, newest first (at most {@link SAVEPOINT_LIST_MAX}). */
  async list(): Promise<SavepointInfo[]> {
    const metas = (await this.store.list()).filter((meta) => meta.kind === 'savepoint' && meta.workspace === this.projectRoot);
    const newest = metas.reverse().slice(0, SAVEPOINT_LIST_MAX);
    const infos: SavepointInfo[] = [];
    for (const meta of newest) {
      try {
        const manifest = await this.store.manifest(meta.id);
        infos.push(infoOf(manifest, manifest.entries.reduce((sum, entry) => sum + (entry.before.type === 'file' ? entry.before.size : 0), 0)));
      } catch (error) {
        // A manifest that cannot be read is left out of the list; restore of it reports why.
        if (!isCheckpointError(error)) throw error;
      }
    }
    return infos;
  }

  /**
   * The savepoint `id` of this workspace.
   * @throws CheckpointError `INVALID_ID`, `UNKNOWN_CHECKPOINT` (none, or not a savepoint),
   *   `FOREIGN_WORKSPACE` (another workspace's).
   */
  async manifest(id: unknown): Promise<CheckpointManifest> {
    const checked = parseCheckpointId(id);
    const manifest = await this.store.manifest(checked);
    if (manifest.kind !== 'savepoint') throw new CheckpointError('UNKNOWN_CHECKPOINT', `no savepoint ${checked} (it is a ${manifest.kind} checkpoint)`);
    if (manifest.workspace !== this.projectRoot) {
      throw new CheckpointError('FOREIGN_WORKSPACE', `savepoint ${checked} belongs to another workspace`, { expected: this.projectRoot, found: manifest.workspace });
    }
    return manifest;
  }

  /** The savepoint's files against the tree now; never any content. */
  async diff(id: unknown, maxFileBytes: number): Promise<SavepointDiff> {
    const manifest = await this.manifest(id);
    const changed: string[] = [];
    const missing: string[] = [];
    let unchanged = 0;
    for (const entry of manifest.entries) {
      if (entry.before.type !== 'file' || entry.before.sha256 === undefined) continue;
      const now = currentSha256(this.projectRoot, entry.path, Math.max(maxFileBytes, entry.before.size));
      if (now === undefined) missing.push(entry.path);
      else if (now !== entry.before.sha256) changed.push(entry.path);
      else unchanged += 1;
    }
    return { id: manifest.id, changed, missing, unchanged };
  }

  /**
   * Checks every stored copy a restore of `manifest` would write against its SHA-256 before any
   * file is touched, and returns them by object key (at most 8 MiB), so the restore writes the
   * very bytes checked without reading them again.
   * @throws CheckpointError `INTEGRITY` naming the first that differs or is gone;
   *   `CORRUPT_MANIFEST` for an entry without one (there is no legacy form).
   */
  async verifyContent(manifest: CheckpointManifest): Promise<Map<string, Buffer>> {
    const verified = new Map<string, Buffer>();
    for (const entry of manifest.entries) {
      const state = entry.before;
      if (state.type !== 'file' || state.sha256 === undefined) throw new CheckpointError('CORRUPT_MANIFEST', `savepoint ${manifest.id}: ${entry.path} has no recorded SHA-256`, { path: entry.path });
      const bytes = verified.get(state.object) ?? (await this.store.readObject(state.object));
      if (sha256Of(bytes) !== state.sha256) throw new CheckpointError('INTEGRITY', `savepoint ${manifest.id}: the stored copy of ${entry.path} does not match its SHA-256`, { path: entry.path });
      verified.set(state.object, bytes);
    }
    return verified;
  }
}

function infoOf(manifest: CheckpointManifest, bytes: number): SavepointInfo {
  return { id: manifest.id, reason: manifest.label ?? null, createdAt: manifest.createdAt, truncated: !manifest.complete, files: manifest.entries.length, bytes };
}

/** The SHA-256 of a regular file at `projectPath` now (never through a link), or `undefined`. */
function currentSha256(root: string, projectPath: string, maxBytes: number): string | undefined {
  if (!insideThroughFolders(root, projectPath)) return undefined;
  const parts = projectPath.split('/');
  let fd: number;
  try {
    fd = nodeFs.openSync(path.join(root, ...parts), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = nodeFs.fstatSync(fd);
    if (!stats.isFile() || stats.size > maxBytes) return undefined;
    return sha256Of(nodeFs.readFileSync(fd));
  } catch {
    return undefined;
  } finally {
    nodeFs.closeSync(fd);
  }
}
