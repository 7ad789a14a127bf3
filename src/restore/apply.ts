import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import { CheckpointError, errnoCode, isCheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { PathState } from '../core/model.js';
import type { DiskState } from '../fs/disk-state.js';
import { diskFingerprint, readDiskState } from '../fs/disk-state.js';
import type { FileSystem } from '../fs/file-system.js';
import { TEMP_PREFIX } from '../fs/file-system.js';
import { assertCanonicalProjectPath, resolveInsideRoot } from '../fs/paths.js';
import { restoredMode } from './modes.js';
import type { PlanEntry } from './plan.js';
import { isWritingAction } from './plan.js';

/** What apply needs: the file system, the canonical project root, and verified object reads. */
export interface ApplyContext {
  fs: FileSystem;
  /** Absolute, canonical project root. */
  projectRoot: string;
  /** Returns an object's bytes; should throw `INTEGRITY` on a size or hash mismatch. */
  readObject(object: string): Promise<Buffer>;
}

/** Options for {@link applyRestore}. */
export interface ApplyOptions {
  /**
   * Cancels the restore before its commit point; completed steps are rolled back.
   * @default undefined
   */
  signal?: AbortSignal;
}

/** A writing entry that did not complete. */
export interface ApplyFailure {
  path: string;
  error: string;
  /** A `CheckpointError` code, an errno code, or `ABORT_ERR`. */
  code?: string;
}

/** The receipt of an apply. */
export interface ApplyResult {
  /** Entries written (restored, recreated, deleted). Empty when the restore rolled back. */
  restored: PlanEntry[];
  /** Entries refused by the plan, or by the guard just before the swap (`changed-since-plan`). */
  refused: PlanEntry[];
  /** `skip` and `leave` entries, with their reasons. */
  skipped: PlanEntry[];
  /** Writing entries that failed, were rolled back, or were never attempted. */
  failed: ApplyFailure[];
  /** Project-relative paths of turnback temp files or folders that could not be removed. */
  cleanupPending: string[];
  /** True when a failure or cancellation undid every completed write. */
  rolledBack: boolean;
}

type WritingEntry = PlanEntry & { action: 'restore' | 'recreate' | 'delete' };

interface Prepared {
  entry: WritingEntry;
  /** Object bytes held from preflight; `undefined` for symlinks, deletes, and past the memory budget. */
  bytes?: Buffer;
  mode: number;
}

/** One completed, undoable step. Rollback walks these in reverse; commit removes the temp files. */
type Step =
  | { kind: 'mkdir'; abs: string }
  | { kind: 'stage'; abs: string }
  | { kind: 'displaced'; dest: string; displaced: string }
  | { kind: 'placed'; dest: string }
  | { kind: 'in-place'; dest: string; copy: string; mode: number };

/** Object bytes held between preflight and the writes; past this, objects are read again. */
const HELD_BYTES_BUDGET = 64 * 1024 * 1024;

/** Link errors that mean "this file system has no hard links", where we fall back to rename. */
const NO_LINK_CODES = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

class PreflightFailure {
  constructor(
    readonly entry: WritingEntry,
    readonly cause: unknown,
  ) {}
}

class Refused {
  constructor(readonly found: string) {}
}

/**
 * Executes the writing entries of a plan as one transaction.
 *
 * 1. Preflight, read-only: every writing entry's path is re-validated (canonical, inside the root,
 *    no symlinked or non-folder ancestor, never `.git`) and every object is read and verified.
 *    Any failure fails every writing entry and touches nothing.
 * 2. Per entry, in order: create missing folders, stage the bytes beside the destination
 *    (`.turnback-stage-*`, exclusive create, final mode, fsync), re-check the guard, then move the
 *    destination aside (`.turnback-displaced-*`) and publish the stage with a create-only link.
 *    A hard-linked destination is instead copied aside and rewritten in place, so its other links
 *    see the restored content. Links are never followed: a symlink is replaced, not written through.
 * 3. On any failure or cancellation every completed step is undone in reverse; on success the
 *    parent folders are fsynced and the displaced originals removed (commit).
 *
 * Failures to remove temp files after commit or during rollback are reported in `cleanupPending`,
 * never thrown. Non-writing entries pass through to `refused` / `skipped`.
 */
export async function applyRestore(
  context: ApplyContext,
  entries: PlanEntry[],
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const result: ApplyResult = { restored: [], refused: [], skipped: [], failed: [], cleanupPending: [], rolledBack: false };
  const writing: WritingEntry[] = [];
  for (const entry of entries) {
    if (isWritingAction(entry.action)) writing.push(entry as WritingEntry);
    else if (entry.action === 'refuse') result.refused.push(entry);
    else result.skipped.push(entry);
  }
  if (writing.length === 0) return result;

  let prepared: Prepared[];
  try {
    throwIfAborted(options.signal);
    prepared = await preflight(context, writing);
  } catch (error) {
    const culprit = error instanceof PreflightFailure ? error.entry : undefined;
    const cause = error instanceof PreflightFailure ? error.cause : error;
    for (const entry of writing) {
      result.failed.push(
        culprit === undefined || entry === culprit
          ? describeFailure(entry.path, cause)
          : { path: entry.path, error: `not attempted: preflight failed for ${culprit.path}` },
      );
    }
    return result;
  }

  const tx = new Transaction(context);
  const done: WritingEntry[] = [];
  for (let i = 0; i < prepared.length; i++) {
    const item = prepared[i] as Prepared;
    try {
      throwIfAborted(options.signal);
      const outcome = await tx.apply(item, options.signal);
      if (outcome instanceof Refused) {
        result.refused.push({ ...item.entry, action: 'refuse', reason: 'changed-since-plan', foundHash: outcome.found });
      } else {
        done.push(item.entry);
      }
    } catch (error) {
      result.cleanupPending.push(...(await tx.rollback()));
      result.rolledBack = true;
      for (const entry of done) result.failed.push({ path: entry.path, error: 'rolled back' });
      result.failed.push(describeFailure(item.entry.path, error));
      for (const rest of prepared.slice(i + 1)) {
        result.failed.push({ path: rest.entry.path, error: `not attempted: rolled back after ${item.entry.path} failed` });
      }
      return result;
    }
  }
  result.cleanupPending.push(...(await tx.commit()));
  result.restored = done;
  return result;
}

async function preflight(context: ApplyContext, writing: WritingEntry[]): Promise<Prepared[]> {
  if (!path.isAbsolute(context.projectRoot)) {
    throw new CheckpointError('INVALID_ARGUMENT', `project root must be absolute: ${context.projectRoot}`);
  }
  await loadHasher();
  const seen = new Set<string>();
  const prepared: Prepared[] = [];
  let heldBytes = 0;
  for (const entry of writing) {
    try {
      const item = await prepareOne(context, entry, seen, heldBytes);
      if (item.bytes !== undefined) heldBytes += item.bytes.length;
      prepared.push(item);
    } catch (error) {
      throw new PreflightFailure(entry, error);
    }
  }
  return prepared;
}

async function prepareOne(context: ApplyContext, entry: WritingEntry, seen: Set<string>, heldBytes: number): Promise<Prepared> {
  assertCanonicalProjectPath(entry.path);
  if (seen.has(entry.path)) {
    throw new CheckpointError('INVALID_ARGUMENT', `path appears twice in the plan: ${entry.path}`, { path: entry.path });
  }
  seen.add(entry.path);
  if (path.posix.basename(entry.path).startsWith(TEMP_PREFIX)) {
    throw new CheckpointError('INVALID_PATH', `refusing to restore a turnback temp file: ${entry.path}`, { path: entry.path });
  }
  if (entry.expectedHash === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', `writing entry without a guard fingerprint: ${entry.path}`, { path: entry.path });
  }
  await resolveInsideRoot(context.fs, context.projectRoot, entry.path);
  const target = entry.target;
  if (entry.action === 'delete') {
    if (target.type !== 'absent') throw mismatch(entry);
    return { entry, mode: 0 };
  }
  if (target.type === 'symlink') {
    if (target.target.length === 0 || target.target.includes('\0')) {
      throw new CheckpointError('INVALID_ARGUMENT', `invalid recorded link target for ${entry.path}`, { path: entry.path });
    }
    return { entry, mode: 0 };
  }
  if (target.type !== 'file') throw mismatch(entry);
  const bytes = await readVerified(context, entry.path, target);
  // A plan always sets the mode; a hand-built entry without one gets the conservative policy.
  const mode = entry.mode === undefined ? restoredMode('never-widen', target.mode) : entry.mode & 0o777;
  return heldBytes + bytes.length <= HELD_BYTES_BUDGET ? { entry, bytes, mode } : { entry, mode };
}

function mismatch(entry: PlanEntry): CheckpointError {
  return new CheckpointError('INVALID_ARGUMENT', `${entry.action} cannot restore a ${entry.target.type} state: ${entry.path}`, {
    path: entry.path,
  });
}

async function readVerified(
  context: ApplyContext,
  projectPath: string,
  target: Extract<PathState, { type: 'file' }>,
): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await context.readObject(target.object);
  } catch (error) {
    if (isCheckpointError(error)) throw new CheckpointError(error.code, error.message, { path: projectPath, cause: error });
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} is missing or unreadable`, {
      path: projectPath,
      cause: error,
    });
  }
  // The store verifies too; checking here keeps apply safe with any readObject.
  const hash = contentHash(bytes);
  if (bytes.length !== target.size || hash !== target.hash) {
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} does not match its record`, {
      path: projectPath,
      expected: `${target.size}:${target.hash}`,
      found: `${bytes.length}:${hash}`,
    });
  }
  return bytes;
}

function describeFailure(projectPath: string, error: unknown): ApplyFailure {
  const message = error instanceof Error ? error.message : String(error);
  const code = isCheckpointError(error) ? error.code : isAbort(error) ? 'ABORT_ERR' : errnoCode(error);
  return code === undefined ? { path: projectPath, error: message } : { path: projectPath, error: message, code };
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted !== true) return;
  const reason: unknown = signal.reason;
  if (reason instanceof Error) throw reason;
  throw new DOMException(reason === undefined ? 'restore aborted' : String(reason), 'AbortError');
}

function tempName(kind: 'stage' | 'displaced'): string {
  return `${TEMP_PREFIX}${kind}-${randomBytes(8).toString('hex')}`;
}

/** The undo log of one apply, and the operations that append to it. */
class Transaction {
  private readonly steps: Step[] = [];
  private readonly touchedDirs = new Set<string>();
  /** Leftovers of entries refused mid-apply, reported with the final outcome. */
  private readonly leftovers: string[] = [];
  private readonly fs: FileSystem;

  constructor(private readonly context: ApplyContext) {
    this.fs = context.fs;
  }

  async apply(item: Prepared, signal: AbortSignal | undefined): Promise<Refused | 'done'> {
    const { entry } = item;
    const { fs } = this;
    const resolved = await resolveInsideRoot(fs, this.context.projectRoot, entry.path);
    const dest = resolved.absolute;
    const dir = path.dirname(dest);
    // An early guard check avoids creating folders and stages for a path that already diverged.
    const early = await this.guard(entry);
    if (early instanceof Refused) return early;

    const stepsBefore = this.steps.length;
    for (const folder of resolved.missingDirs) {
      const abs = path.join(this.context.projectRoot, ...folder.split('/'));
      await fs.mkdir(abs);
      this.steps.push({ kind: 'mkdir', abs });
    }

    let stage: Step | undefined;
    let bytes: Buffer | undefined;
    const target = entry.target;
    if (entry.action !== 'delete' && target.type === 'file') {
      bytes = item.bytes ?? (await readVerified(this.context, entry.path, target));
      const abs = path.join(dir, tempName('stage'));
      const handle = await fs.open(abs, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, item.mode);
      stage = { kind: 'stage', abs };
      this.steps.push(stage);
      try {
        await handle.writeFile(bytes);
        // The umask may have narrowed the create mode; fchmod on the handle never follows a link.
        await handle.chmod(item.mode);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }

    throwIfAborted(signal);
    const now = await this.guard(entry);
    if (now instanceof Refused) {
      await this.undoSince(stepsBefore);
      return now;
    }

    if (entry.action === 'delete') {
      await this.displace(dest, dir);
    } else if (target.type === 'symlink') {
      if (now.type !== 'absent') await this.displace(dest, dir);
      // symlink() is create-only: a writer that lands in the gap makes this fail instead of being overwritten.
      await fs.symlink(target.target, dest);
      this.steps.push({ kind: 'placed', dest });
    } else if (stage !== undefined && stage.kind === 'stage' && bytes !== undefined) {
      if (now.type === 'file' && now.nlink > 1) {
        await this.rewriteInPlace(dest, dir, bytes, item.mode, now.mode);
      } else {
        if (now.type !== 'absent') await this.displace(dest, dir);
        await this.publish(stage.abs, dest);
        this.steps.push({ kind: 'placed', dest });
      }
      await this.removeStage(stage);
    }
    this.touchedDirs.add(dir);
    return 'done';
  }

  /** Reads the disk state and compares it with the plan's fingerprint. */
  private async guard(entry: WritingEntry): Promise<Refused | DiskState> {
    const state = await readDiskState(this.fs, this.context.projectRoot, entry.path);
    const found = diskFingerprint(state);
    return found === entry.expectedHash ? state : new Refused(found);
  }

  private async displace(dest: string, dir: string): Promise<void> {
    const displaced = path.join(dir, tempName('displaced'));
    await this.fs.rename(dest, displaced);
    this.steps.push({ kind: 'displaced', dest, displaced });
  }

  /** Create-only publish: link the stage to the destination, falling back to rename without hard links. */
  private async publish(stage: string, dest: string): Promise<void> {
    try {
      await this.fs.link(stage, dest);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'EEXIST') {
        throw new CheckpointError('CONFLICT', `${this.relative(dest)} appeared while it was being restored`, {
          path: this.relative(dest),
          cause: error,
        });
      }
      if (code === undefined || !NO_LINK_CODES.has(code)) throw error;
      await this.fs.rename(stage, dest);
    }
  }

  /**
   * Hard links survive: the shared inode is rewritten, so every other link sees the restored
   * content. The original bytes are copied aside first so rollback can put them back.
   */
  private async rewriteInPlace(dest: string, dir: string, bytes: Buffer, mode: number, originalMode: number): Promise<void> {
    const copy = path.join(dir, tempName('displaced'));
    await this.fs.copyFile(dest, copy, fsConstants.COPYFILE_EXCL);
    this.steps.push({ kind: 'in-place', dest, copy, mode: originalMode });
    await this.syncFile(copy);
    await this.overwrite(dest, bytes, mode);
  }

  private async overwrite(dest: string, bytes: Buffer, mode: number): Promise<void> {
    const handle = await this.fs.open(dest, fsConstants.O_RDWR | fsConstants.O_NOFOLLOW);
    try {
      await handle.truncate(0);
      await handle.write(bytes, 0, bytes.length, 0);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  private async syncFile(abs: string): Promise<void> {
    const handle = await this.fs.open(abs, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Removes a consumed stage; a failure leaves the step logged so commit or rollback retries it. */
  private async removeStage(stage: Step): Promise<void> {
    if (stage.kind !== 'stage') return;
    try {
      await this.fs.unlink(stage.abs);
      this.forget(stage);
    } catch {
      // Not a failure of the restore: commit retries and reports it in cleanupPending.
    }
  }

  private forget(step: Step): void {
    const index = this.steps.lastIndexOf(step);
    if (index >= 0) this.steps.splice(index, 1);
  }

  /** Undoes the steps taken after `index` (one entry refused by the guard). */
  private async undoSince(index: number): Promise<void> {
    const later = this.steps.splice(index);
    // Leftovers of a refused entry are rare (a folder someone else wrote into); report them at the end.
    this.leftovers.push(...(await this.undo(later)));
  }

  /** Undoes every completed step in reverse. Returns what could not be cleaned up. */
  async rollback(): Promise<string[]> {
    return [...this.leftovers, ...(await this.undo(this.steps.splice(0)))];
  }

  private async undo(steps: Step[]): Promise<string[]> {
    const pending: string[] = [];
    const { fs } = this;
    for (const step of [...steps].reverse()) {
      switch (step.kind) {
        case 'placed':
          await ignoreMissing(() => fs.unlink(step.dest)).catch(() => pending.push(this.relative(step.dest)));
          break;
        case 'displaced':
          // rename() would overwrite: if a writer put something at the destination meanwhile, keep both.
          if (await this.exists(step.dest)) pending.push(this.relative(step.displaced));
          else await fs.rename(step.displaced, step.dest).catch(() => pending.push(this.relative(step.displaced)));
          break;
        case 'in-place':
          try {
            const original = await fs.readFile(step.copy);
            await this.overwrite(step.dest, original, step.mode & 0o7777);
            await fs.unlink(step.copy);
          } catch {
            pending.push(this.relative(step.copy));
          }
          break;
        case 'stage':
          await ignoreMissing(() => fs.unlink(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
        case 'mkdir':
          // Only an empty folder is removed: a writer's new content in it is never deleted.
          await ignoreMissing(() => fs.rmdir(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
      }
    }
    return pending;
  }

  /**
   * The commit point has passed: make the renames durable, then drop the originals. Nothing here
   * can fail the restore; leftovers are returned for `cleanupPending`.
   */
  async commit(): Promise<string[]> {
    for (const dir of this.touchedDirs) await this.syncDir(dir);
    const pending: string[] = [...this.leftovers];
    for (const step of this.steps) {
      const leftover =
        step.kind === 'displaced' ? step.displaced : step.kind === 'in-place' ? step.copy : step.kind === 'stage' ? step.abs : undefined;
      if (leftover === undefined) continue;
      await ignoreMissing(() => this.fs.unlink(leftover)).catch(() => pending.push(this.relative(leftover)));
    }
    this.steps.length = 0;
    return pending;
  }

  /** Directory fsync persists the renames; platforms that cannot fsync a folder are tolerated. */
  private async syncDir(dir: string): Promise<void> {
    try {
      const handle = await this.fs.open(dir, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch {
      // Best effort by design: the data itself was fsynced before publishing.
    }
  }

  private async exists(abs: string): Promise<boolean> {
    try {
      await this.fs.lstat(abs);
      return true;
    } catch (error) {
      return errnoCode(error) !== 'ENOENT';
    }
  }

  private relative(abs: string): string {
    return path.relative(this.context.projectRoot, abs).split(path.sep).join('/');
  }
}

async function ignoreMissing(operation: () => Promise<unknown>): Promise<void> {
  try {
    await operation();
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}
