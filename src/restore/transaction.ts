import { constants as fsConstants } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { mapLimit } from '../core/pool.js';
import type { FileSystem } from '../fs/file-system.js';
import { TEMP_PREFIX } from '../fs/file-system.js';
import { FolderAnchors } from '../fs/anchors.js';
import type { ApplyContext } from './apply-types.js';
import { anchoredIo, promiseIo, syncIo, type Io } from './io.js';

/**
 * Only root can give a file to another user; then a restored file must keep the owner and group
 * the replaced file had (a new stage, or a recycled inode, belongs to someone else).
 */
export const RUNNING_AS_ROOT: boolean = process.geteuid?.() === 0;

/** Temp files removed at once after the commit. */
const COMMIT_UNLINKS_IN_FLIGHT = 16;

/** One completed, undoable step. Rollback walks these in reverse; commit removes the temp files. */
export type Step =
  | { kind: 'mkdir'; abs: string }
  /** An empty folder removed to make room for a recorded file (`folder-in-the-way`); rollback makes it again. */
  | { kind: 'removed-folder'; abs: string; mode: number }
  | { kind: 'stage'; abs: string }
  | { kind: 'displaced'; dest: string; displaced: string }
  | { kind: 'placed'; dest: string }
  | { kind: 'in-place'; dest: string; copy: string; mode: number }
  /** Moved aside and its inode reused as a stage; `original` (the guard's read, also saved first) is recreated on rollback. */
  | { kind: 'recycled'; dest: string; original: Buffer; mode: number; owner?: { uid: number; gid: number } };

/** Random per process; the counter makes each name unique without a random draw per file. */
const TEMP_NAME_BASE = randomBytes(6).toString('hex');

/** This process's part of every stage and displaced name: what a record of an apply in progress names. */
export function tempNameBase(): string {
  return TEMP_NAME_BASE;
}
let tempNameCounter = 0;

/** A unique name for a stage or a displaced original, recognised by the scanner as turnback's. */
export function tempName(kind: 'stage' | 'displaced'): string {
  tempNameCounter += 1;
  return `${TEMP_PREFIX}${kind}-${TEMP_NAME_BASE}${tempNameCounter.toString(16).padStart(4, '0')}`;
}

/**
 * The undo log of one apply: every completed step, undone in reverse by {@link rollback}, or made
 * final by {@link commit} (which removes the displaced originals and stages). The swap strategies
 * that append to it are in swap.ts.
 */
export class Transaction {
  protected readonly steps: Step[] = [];
  protected readonly touchedDirs: Set<string> = new Set();
  /** Folders this restore made that hold what it wrote, known once it commits (project paths). */
  readonly made: string[] = [];
  /** Leftovers of entries refused mid-apply, reported with the final outcome. */
  protected readonly leftovers: string[] = [];
  protected readonly fs: FileSystem;
  /** Every call through the promise API (large files, in-place rewrites, and when the fs has no sync calls). */
  protected readonly slow: Io;
  /** Synchronous calls when the file system offers them, else the promise API. */
  protected readonly fast: Io;
  /** Stage writes started ahead; rollback waits for them so every stage it must remove is logged. */
  protected readonly inflight: Promise<void>[] = [];
  /** Set once a folder phase or stage write failed: nothing more is started. */
  protected stopped = false;
  /**
   * The folders this restore writes in, reached from the root without following a link and held
   * open: every step names its file through its held folder, and each publish first confirms the
   * folder is still where it was.
   */
  protected readonly anchors: FolderAnchors;

  constructor(
    protected readonly context: ApplyContext,
    protected readonly durable: boolean,
  ) {
    this.fs = context.fs;
    this.anchors = new FolderAnchors(context.fs, context.projectRoot);
    this.slow = anchoredIo(promiseIo(context.fs), this.anchors);
    this.fast = context.fs.sync === undefined ? this.slow : anchoredIo(syncIo(context.fs.sync), this.anchors);
  }

  /**
   * True when a step at `abs` may be undone: its folder, reached in this restore, is inside the
   * root now (where it was, or where a rename inside the root took it: the step is undone in the
   * folder it was made in); or, not reached yet, a walk from the root reaches it through no link.
   */
  protected async isStillInside(abs: string): Promise<boolean> {
    const dir = path.dirname(abs);
    if (this.anchors.isReached(dir)) return this.anchors.insideRootNow(dir);
    try {
      await this.anchors.hold(dir);
      return true;
    } catch (error) {
      // A missing folder is fine: the step then finds nothing to undo, and says so.
      return errnoCode(error) === 'ENOENT';
    }
  }

  /**
   * Before a publish, and once more before the commit: the folder is still reached from the root
   * by its path as the folder held for it (a folder renamed out, or swapped for a link, since it
   * was reached fails, and the restore stops and rolls back).
   *
   * @throws CheckpointError `INVALID_PATH`
   */
  protected async confirmFolder(dir: string): Promise<void> {
    if (await this.anchors.confirm(dir)) return;
    const shown = this.relative(dir) || '.';
    throw new CheckpointError('INVALID_PATH', `${shown} was moved or replaced by a link during the restore; turnback never writes through it`, { path: shown });
  }

  /** The final check of every folder written in: none was moved out or swapped since its last write. */
  async confirmWritten(): Promise<void> {
    for (const dir of this.touchedDirs) await this.confirmFolder(dir);
  }

  /** Creates `dest` (create-only) with `bytes` and `mode`: rollback of a recycled original. */
  protected async recreate(io: Io, dest: string, bytes: Buffer, mode: number, owner?: { uid: number; gid: number }): Promise<void> {
    const file = await io.open(dest, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, mode);
    try {
      await file.fill(bytes);
      await file.chmod(mode);
    } finally {
      await file.close();
    }
    if (owner !== undefined && RUNNING_AS_ROOT) await io.ownAs(dest, owner);
  }

  protected async overwrite(dest: string, bytes: Buffer, mode: number): Promise<void> {
    const file = await this.slow.open(dest, fsConstants.O_RDWR | fsConstants.O_NOFOLLOW);
    try {
      await file.replace(bytes);
      await file.chmod(mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
  }

  /** fsync of a file or folder by path; folders are best effort (some platforms cannot). */
  protected async syncPath(abs: string): Promise<void> {
    const file = await this.fast.open(abs, 'r');
    try {
      await file.sync();
    } finally {
      await file.close();
    }
  }

  /** Removes a consumed stage; a failure leaves the step logged so commit or rollback retries it. */
  protected async removeStage(io: Io, stage: Step): Promise<void> {
    if (stage.kind !== 'stage') return;
    try {
      await io.unlink(stage.abs);
      this.forget(stage);
    } catch {
      // Not a failure of the restore: commit retries and reports it in cleanupPending.
    }
  }

  protected forget(step: Step): void {
    // The stage is almost always the last step or next to it: search from the end.
    const index = this.steps.lastIndexOf(step);
    if (index >= 0) this.steps.splice(index, 1);
  }

  /**
   * Undoes one refused entry's own steps (its stage, then its folders). A folder that later
   * entries' stages already use stays logged, for the commit or a rollback to remove once empty.
   */
  protected async undoOwn(own: Step[]): Promise<void> {
    for (const step of [...own].reverse()) {
      const index = this.steps.lastIndexOf(step);
      if (index < 0) continue;
      if (step.kind === 'mkdir') {
        try {
          await ignoreMissing(() => this.fast.rmdir(step.abs));
        } catch (error) {
          if (errnoCode(error) === 'ENOTEMPTY' || errnoCode(error) === 'EEXIST') continue;
          this.leftovers.push(this.relative(step.abs));
        }
        this.steps.splice(this.steps.lastIndexOf(step), 1);
        continue;
      }
      this.steps.splice(index, 1);
      // Leftovers of a refused entry are rare; report them with the final outcome.
      this.leftovers.push(...(await this.undo([step])));
    }
    own.length = 0;
  }

  /** Undoes every completed step in reverse. Returns what could not be cleaned up. */
  async rollback(): Promise<string[]> {
    this.stopped = true;
    // Stages still being written must be logged before the undo walks the log.
    await Promise.allSettled(this.inflight);
    try {
      return [...this.leftovers, ...(await this.undo(this.steps.splice(0)))];
    } finally {
      await this.anchors.release();
    }
  }

  protected async undo(steps: Step[]): Promise<string[]> {
    const pending: string[] = [];
    const io = this.fast;
    // One verdict per folder for the whole pass: a file's steps (remove what was placed, put the
    // original back) are undone together or left together. Judged step by step, a folder swapped
    // back and forth could pass for the removal and fail for the put-back, and a recycled
    // original, held only in memory, would be lost from the tree.
    const verdicts = new Map<string, boolean>();
    for (const step of [...steps].reverse()) {
      const at = step.kind === 'mkdir' || step.kind === 'stage' || step.kind === 'removed-folder' ? step.abs : step.dest;
      const folder = path.dirname(at);
      const inside = verdicts.get(folder) ?? (await this.isStillInside(at));
      verdicts.set(folder, inside);
      if (!inside) {
        // A folder on the way became a link (or vanished) since it was checked: undoing through
        // it could write outside the project, so the step is left and reported instead.
        pending.push(this.relative(step.kind === 'displaced' ? step.displaced : step.kind === 'in-place' ? step.copy : at));
        continue;
      }
      switch (step.kind) {
        case 'placed':
          await ignoreMissing(() => io.unlink(step.dest)).catch(() => pending.push(this.relative(step.dest)));
          break;
        case 'displaced':
          // rename() would overwrite: if a writer put something at the destination meanwhile, keep both.
          if (await io.exists(step.dest)) pending.push(this.relative(step.displaced));
          else await io.rename(step.displaced, step.dest).catch(() => pending.push(this.relative(step.displaced)));
          break;
        case 'recycled':
          // Like a displaced original: put back only if nothing new is at the destination.
          if (await io.exists(step.dest)) pending.push(this.relative(step.dest));
          else await this.recreate(io, step.dest, step.original, step.mode & 0o7777, step.owner).catch(() => pending.push(this.relative(step.dest)));
          break;
        case 'in-place':
          try {
            const original = await this.fs.readFile(await this.anchors.at(step.copy));
            await this.overwrite(step.dest, original, step.mode & 0o7777);
            await this.fs.unlink(await this.anchors.at(step.copy));
          } catch {
            pending.push(this.relative(step.copy));
          }
          break;
        case 'stage':
          await ignoreMissing(() => io.unlink(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
        case 'mkdir':
          // Only an empty folder is removed: a writer's new content in it is never deleted.
          await ignoreMissing(() => io.rmdir(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
        case 'removed-folder':
          // Made again, empty, with its mode; something made there meanwhile is left and reported.
          await io.mkdir(step.abs, step.mode & 0o7777).catch(() => pending.push(this.relative(step.abs)));
          break;
      }
    }
    return pending;
  }

  /**
   * The commit point has passed: with `durable`, make the renames durable; then drop the
   * originals. Nothing here can fail the restore; leftovers are returned for `cleanupPending`.
   */
  async commit(): Promise<string[]> {
    if (this.durable) {
      for (const dir of this.touchedDirs) {
        // Best effort by design: the data itself was fsynced before publishing.
        await this.syncPath(dir).catch(() => undefined);
      }
    }
    const pending: string[] = [...this.leftovers];
    const leftovers: string[] = [];
    for (const step of this.steps) {
      if (step.kind === 'displaced') leftovers.push(step.displaced);
      else if (step.kind === 'in-place') leftovers.push(step.copy);
      else if (step.kind === 'stage') leftovers.push(step.abs);
    }
    // Through the thread pool, many at once: freeing the displaced originals (often files written
    // moments ago) is most of a restore's kernel work, and it overlaps well; measured 2-3x faster
    // than one synchronous unlink after another.
    await mapLimit(leftovers, COMMIT_UNLINKS_IN_FLIGHT, (leftover) =>
      twice(() => ignoreMissing(async () => this.fs.unlink(await this.anchors.at(leftover)))).catch(() => {
        pending.push(this.relative(leftover));
      }),
    );
    // Folders made for entries the guard then refused, kept while later stages used them: removed
    // now if empty (a folder holding a restored file, or a writer's new file, stays).
    for (const step of [...this.steps].reverse()) {
      if (step.kind !== 'mkdir') continue;
      try {
        await twice(() => ignoreMissing(() => this.fast.rmdir(step.abs)));
      } catch (error) {
        if (errnoCode(error) !== 'ENOTEMPTY' && errnoCode(error) !== 'EEXIST') pending.push(this.relative(step.abs));
        // Kept, holding what was restored: a folder this restore made, which its own undo removes once emptied.
        else this.made.push(this.relative(step.abs));
      }
    }
    this.steps.length = 0;
    await this.anchors.release();
    return pending.sort();
  }

  protected relative(abs: string): string {
    return path.relative(this.context.projectRoot, abs).split(path.sep).join('/');
  }
}

/**
 * Runs a cleanup `operation`, and once more if it fails (a transient `EIO`, a descriptor limit
 * hit for a moment): after the commit a leftover is only reported, so one more try is cheap and
 * spares the person a cleanup. A folder that is not empty is final at once.
 */
async function twice(operation: () => Promise<void>): Promise<void> {
  try {
    await operation();
  } catch (error) {
    if (errnoCode(error) === 'ENOTEMPTY' || errnoCode(error) === 'EEXIST') throw error;
    await operation();
  }
}

/** Runs `operation`, treating "nothing there" (ENOENT) as done. */
export async function ignoreMissing(operation: () => Promise<unknown>): Promise<void> {
  try {
    await operation();
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}
