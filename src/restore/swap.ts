import { constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import type { PathState } from '../core/model.js';
import { diskFingerprint, readDiskState, readDiskStateSync } from '../fs/disk-state.js';
import { Left, Refused, isLarge, throwIfAborted, type GuardSight, type Prepared, type WritingEntry } from './apply-types.js';
import type { Io } from './io.js';
import { readVerified } from './preflight.js';
import { RUNNING_AS_ROOT, Transaction, tempName, type Step } from './transaction.js';

/** Original bytes held for in-place rewrites; past this, entries are staged and swapped instead. */
const HELD_ORIGINALS_BUDGET = 64 * 1024 * 1024;

/** Link errors that mean "this file system has no hard links", where we fall back to rename. */
const NO_LINK_CODES = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/** An entry whose folders exist and whose stage is being (or has been) written. */
export interface Staged {
  dest: string;
  dir: string;
  /** This entry's own steps (folders, stage), undone when its guard refuses it. */
  own: Step[];
  /** Settles when the stage file is complete; rejects with the failure that stops the restore. */
  ready?: Promise<void>;
  /** A failure of the folder phase, thrown when the entry's turn comes. */
  failure?: unknown;
  stage?: Extract<Step, { kind: 'stage' }>;
  bytes?: Buffer;
  /** No stage yet: the swap stages it in a recycled inode first (see `stageRecycled`). */
  deferred?: boolean;
  /** The owner the stage is known to have: a recycled inode keeps the one its original had. */
  stageOwner?: { uid: number; gid: number };
}

/**
 * The writes of one apply on its undo log: the folder phase and stage of each entry, the guard
 * just before the swap, and the swap strategies — displace and publish (create-only link), keep
 * the original and rename over it (recycling its inode as the next stage), or rewrite a
 * hard-linked file in place so its other links see the restored content.
 */
export class RestoreTransaction extends Transaction {
  /** Bytes of originals held by `recycled` steps. */
  private heldOriginals = 0;
  /** The inode of the last recycled original, waiting to become the next stage. */
  private spare: { step: Extract<Step, { kind: 'stage' }>; size: number; mode: number; owner?: { uid: number; gid: number } } | undefined;

  /**
   * The folder phase of an entry, in plan order (each sees the folders earlier entries created),
   * then its stage file started through the promise API. Never throws: a failure is kept and
   * thrown when the entry's turn comes, so the restore blames the right entry.
   */
  async launch(item: Prepared): Promise<Staged> {
    const { entry } = item;
    const staged: Staged = { dest: '', dir: '', own: [] };
    if (this.stopped) {
      staged.failure = new CheckpointError('IO', `not staged: an earlier stage failed`, { path: entry.path });
      return staged;
    }
    if (entry.action === 'restore' && entry.target.type === 'file' && !isLarge(item) && this.context.fs.sync !== undefined && !this.durable) {
      // Staged when its turn comes, in the inode the previous original left (no inode created:
      // creating one is most of a small restore's kernel work), and its folders are checked then,
      // once, just before the stage is written. A durable restore stages ahead, in new inodes,
      // fsynced.
      staged.dest = path.join(this.context.projectRoot, ...entry.path.split('/'));
      staged.dir = path.dirname(staged.dest);
      staged.deferred = true;
      return staged;
    }
    try {
      await this.makeFolders(entry, staged);
    } catch (error) {
      this.stopped = true;
      staged.failure = error;
      return staged;
    }
    if (entry.action !== 'delete' && entry.target.type === 'file') {
      const ready = this.createStage(item, entry.target, staged);
      // Observed by swap(), or by rollback(); never left unhandled.
      ready.catch(() => {
        this.stopped = true;
      });
      this.inflight.push(ready);
      staged.ready = ready;
    }
    return staged;
  }

  /**
   * Checks the entry's ancestors (each a real folder or missing, never a link), creates the
   * missing ones in plan order, and sets the stage's destination and folder.
   */
  private async makeFolders(entry: WritingEntry, staged: Staged): Promise<void> {
    const dest = path.join(this.context.projectRoot, ...entry.path.split('/'));
    const dir = path.dirname(dest);
    staged.dest = dest;
    staged.dir = dir;
    // Reached before in this restore: it must still be there (a folder moved since stops the
    // restore; it is never reached anew, which could name a different folder mid-restore).
    if (this.anchors.isReached(dir)) return this.confirmFolder(dir);
    await this.anchors.hold(dir, (abs) => {
      const step: Step = { kind: 'mkdir', abs };
      this.steps.push(step);
      staged.own.push(step);
    });
  }

  private async createStage(item: Prepared, target: Extract<PathState, { type: 'file' }>, staged: Staged, io: Io = this.slow): Promise<void> {
    const bytes = item.bytes ?? (await readVerified(this.context, item.entry.path, target));
    const abs = path.join(staged.dir, tempName('stage'));
    const file = await io.open(abs, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, item.mode);
    const step: Extract<Step, { kind: 'stage' }> = { kind: 'stage', abs };
    this.steps.push(step);
    staged.own.push(step);
    staged.stage = step;
    try {
      await file.fill(bytes);
      // The umask may have narrowed the create mode; fchmod on the handle never follows a link.
      await file.chmod(item.mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
    staged.bytes = bytes;
  }

  /** Guard, save hook, then the swap of one entry whose stage is ready. */
  async swap(item: Prepared, staged: Staged, signal: AbortSignal | undefined): Promise<Refused | Left | 'done'> {
    const { entry } = item;
    const target = entry.target;
    if (staged.failure !== undefined) throw staged.failure;
    if (staged.ready !== undefined) await staged.ready;
    const { dest, dir } = staged;
    const io = this.fast;
    const deferred = staged.deferred === true && target.type === 'file';
    if (deferred) {
      await this.makeFolders(entry, staged);
      await this.stageRecycled(item, target, staged);
    } else {
      // Staged ahead: the folder is confirmed again now, just before the swap.
      await this.confirmFolder(dir);
    }

    // No early guard: the one just before the swap decides, and a path that diverged since the
    // plan is rare enough that staging it for nothing costs less than reading every path twice.
    // A deferred stage's folders were checked a moment ago, just before its stage was written:
    // the guard reads only the path itself.
    throwIfAborted(signal);
    const sight = await this.guard(entry);
    if (sight instanceof Refused) {
      await this.undoOwn(staged.own);
      return sight;
    }
    const decision = this.context.beforeSwap === undefined ? 'go' : await this.context.beforeSwap(entry, sight);
    if (decision !== 'go') {
      await this.undoOwn(staged.own);
      return 'refuse' in decision ? new Refused(decision.refuse) : new Left(decision.leave);
    }
    let seen = sight.state;
    if (entry.reason === 'folder-in-the-way' && seen.type === 'other' && seen.kind === 'directory') {
      // The folder was emptied by this restore's deletes; rmdir removes it only if it still is.
      const removed = await this.removeEmptiedFolder(io, dest);
      if (removed instanceof Refused) {
        await this.undoOwn(staged.own);
        return removed;
      }
      seen = { type: 'absent' };
    }
    const now = seen;

    const stage = staged.stage;
    const bytes = staged.bytes;
    if (entry.action === 'delete') {
      await this.displace(io, dest, dir);
    } else if (target.type === 'symlink') {
      if (now.type !== 'absent') await this.displace(io, dest, dir);
      // symlink() is create-only: a writer that lands in the gap makes this fail instead of being overwritten.
      await io.symlink(target.target, dest);
      this.steps.push({ kind: 'placed', dest });
    } else if (stage !== undefined && bytes !== undefined) {
      // A hard link is rewritten in place (its other names see the restored bytes) only while it is
      // the inode the checkpoint recorded: a link made since (say, to a file outside the project)
      // is replaced by a rename, never written through.
      if (now.type === 'file' && now.nlink > 1 && target.type === 'file' && target.ino !== undefined && now.ino === target.ino) {
        await this.rewriteInPlace(dest, dir, bytes, item.mode, now.mode);
      } else {
        // The stage is a new inode, or one another file left: it takes the replaced file's owner.
        const owner = now.type === 'file' && now.uid !== undefined && now.gid !== undefined ? { uid: now.uid, gid: now.gid } : undefined;
        const owned = owner !== undefined && staged.stageOwner !== undefined && staged.stageOwner.uid === owner.uid && staged.stageOwner.gid === owner.gid;
        if (owner !== undefined && RUNNING_AS_ROOT && !owned) await io.ownAs(stage.abs, owner);
        const recyclable = now.type === 'file' && now.nlink === 1 && sight.bytes !== undefined && this.heldOriginals + sight.bytes.length <= HELD_ORIGINALS_BUDGET;
        if (recyclable && (await this.replaceKeepingOriginal(io, stage, dest, dir, { original: sight.bytes as Buffer, mode: now.mode, ...(owner !== undefined ? { owner } : {}) }))) {
          this.touchedDirs.add(dir);
          return 'done';
        }
        if (now.type !== 'absent') await this.displace(io, dest, dir);
        await this.publish(io, stage.abs, dest);
        this.steps.push({ kind: 'placed', dest });
      }
      await this.removeStage(io, stage);
    }
    this.touchedDirs.add(dir);
    return 'done';
  }

  /**
   * Removes the folder at `dest` that this restore's deletes emptied (`folder-in-the-way`),
   * subfolders included: the originals those deletes displaced into it move beside it (their steps
   * follow them, so a rollback still puts them back), then each folder, deepest first, is removed
   * with rmdir — only if nothing else is inside; otherwise the entry is refused. Each removal is
   * logged: a rollback makes the folder again, with its mode.
   */
  private async removeEmptiedFolder(io: Io, dest: string): Promise<Refused | undefined> {
    const mine = new Map<string, Extract<Step, { kind: 'displaced' }>>();
    for (const step of this.steps) if (step.kind === 'displaced') mine.set(step.displaced, step);
    const removed = await this.emptyAndRemove(io, dest, path.dirname(dest), mine);
    return removed ? undefined : new Refused('other:directory');
  }

  private async emptyAndRemove(io: Io, folder: string, beside: string, mine: ReadonlyMap<string, Extract<Step, { kind: 'displaced' }>>): Promise<boolean> {
    await this.anchors.hold(folder);
    const held = await this.anchors.folder(folder);
    // stat, not lstat: `held` names the folder through its descriptor's /proc link (opened no-follow).
    const mode = (await this.fs.stat(held)).mode;
    for (const name of await this.fs.readdir(held)) {
      const inside = path.join(folder, name);
      const step = mine.get(inside);
      if (step !== undefined) {
        const moved = path.join(beside, tempName('displaced'));
        await io.rename(step.displaced, moved);
        step.displaced = moved;
        continue;
      }
      // Something the plan does not know (an ignored file, a writer's new one) stays, and so does its folder.
      const stats = await this.fs.lstat(path.join(held, name));
      if (!stats.isDirectory() || !(await this.emptyAndRemove(io, inside, beside, mine))) return false;
    }
    try {
      await io.rmdir(folder);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
      throw error;
    }
    this.steps.push({ kind: 'removed-folder', abs: folder, mode });
    // Gone on purpose: not a folder to confirm at the end, and reached anew if a rollback makes it again.
    this.touchedDirs.delete(folder);
    await this.anchors.forget(folder);
    return true;
  }

  /** Reads the disk state (and a small file's bytes) and compares it with the plan's fingerprint. */
  private async guard(entry: WritingEntry): Promise<Refused | GuardSight> {
    const sync = this.fs.sync;
    // Read through the held folder: what the guard sees is what the swap then replaces.
    const reachedAt = await this.anchors.at(path.join(this.context.projectRoot, ...entry.path.split('/')));
    const sight = (sync === undefined ? undefined : readDiskStateSync(sync, this.context.projectRoot, entry.path, { reachedAt })) ?? {
      state: await readDiskState(this.fs, this.context.projectRoot, entry.path, { reachedAt }),
    };
    const found = diskFingerprint(sight.state);
    return found === entry.expectedHash ? sight : new Refused(found);
  }

  private async displace(io: Io, dest: string, dir: string): Promise<void> {
    const displaced = path.join(dir, tempName('displaced'));
    await io.rename(dest, displaced);
    this.steps.push({ kind: 'displaced', dest, displaced });
  }

  /**
   * The swap of a plain single-link file whose bytes the guard read (and the save-first stored):
   * the original gets a second name beside it (`link`), then the stage replaces the destination in
   * one `rename`, so the destination is never missing. The original's inode, now only under the
   * second name, becomes the next entry's stage; rollback recreates the original from the held
   * bytes. Two directory operations where displace-and-publish takes four.
   */
  private async replaceKeepingOriginal(io: Io, stage: Extract<Step, { kind: 'stage' }>, dest: string, dir: string, held: { original: Buffer; mode: number; owner?: { uid: number; gid: number } }): Promise<boolean> {
    const kept = path.join(dir, tempName('displaced'));
    try {
      await io.link(dest, kept);
    } catch (error) {
      const code = errnoCode(error);
      // No hard links here: the caller displaces and publishes instead.
      if (code !== undefined && NO_LINK_CODES.has(code)) return false;
      throw error;
    }
    // Logged as a stage: until the swap it is only a second name of the original, safe to unlink.
    const keptStep: Extract<Step, { kind: 'stage' }> = { kind: 'stage', abs: kept };
    this.steps.push(keptStep);
    await io.rename(stage.abs, dest);
    this.forget(stage);
    // Reverse order on rollback: remove the placed file, recreate the original, drop the spare.
    this.forget(keptStep);
    this.heldOriginals += held.original.length;
    this.steps.push(this.takeSpare(keptStep, held.original.length, held.mode, held.owner));
    this.steps.push({ kind: 'recycled', dest, original: held.original, mode: held.mode, ...(held.owner !== undefined ? { owner: held.owner } : {}) });
    this.steps.push({ kind: 'placed', dest });
    return true;
  }

  /** Keeps a spare inode (logged as a stage, so commit or rollback removes it if unused). */
  private takeSpare(step: Extract<Step, { kind: 'stage' }>, size: number, mode: number, owner: { uid: number; gid: number } | undefined): Step {
    this.spare = { step, size, mode, ...(owner !== undefined ? { owner } : {}) };
    return step;
  }

  /**
   * Stages a small file beside its destination, in the inode the previous entry's original left
   * (renamed into this folder, written over its blocks, cut to length), or in a new one when there
   * is none. Creating an inode is most of a small restore's kernel work; recycling one keeps every
   * write staged and every swap atomic at a fraction of the cost.
   */
  private async stageRecycled(item: Prepared, target: Extract<PathState, { type: 'file' }>, staged: Staged): Promise<void> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare === undefined) {
      await this.createStage(item, target, staged, this.fast);
      return;
    }
    const bytes = item.bytes ?? (await readVerified(this.context, item.entry.path, target));
    let step = spare.step;
    if (path.dirname(spare.step.abs) !== staged.dir) {
      // Staged beside its destination: the spare moves into this folder first.
      const abs = path.join(staged.dir, tempName('stage'));
      await this.fast.rename(spare.step.abs, abs);
      this.forget(spare.step);
      step = { kind: 'stage', abs };
      this.steps.push(step);
    }
    const abs = step.abs;
    staged.own.push(step);
    staged.stage = step;
    await this.writeOver(this.fast, abs, bytes, item.mode, { size: spare.size, mode: spare.mode });
    if (spare.owner !== undefined) staged.stageOwner = spare.owner;
    staged.bytes = bytes;
  }

  /** Create-only publish: link the stage to the destination, falling back to rename without hard links. */
  private async publish(io: Io, stage: string, dest: string): Promise<void> {
    try {
      await io.link(stage, dest);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'EEXIST') {
        throw new CheckpointError('CONFLICT', `${this.relative(dest)} appeared while it was being restored`, {
          path: this.relative(dest),
          cause: error,
        });
      }
      if (code === undefined || !NO_LINK_CODES.has(code)) throw error;
      await io.rename(stage, dest);
    }
  }

  /**
   * Hard links survive: the shared inode is rewritten, so every other link sees the restored
   * content. The original bytes are copied aside first so rollback can put them back. Rare, so
   * always through the promise API.
   */
  private async rewriteInPlace(dest: string, dir: string, bytes: Buffer, mode: number, originalMode: number): Promise<void> {
    const copy = path.join(dir, tempName('displaced'));
    await this.fs.copyFile(await this.anchors.at(dest), await this.anchors.at(copy), fsConstants.COPYFILE_EXCL);
    this.steps.push({ kind: 'in-place', dest, copy, mode: originalMode });
    if (this.durable) await this.syncPath(copy);
    await this.overwrite(dest, bytes, mode);
  }

  /**
   * Writes an existing file whole; never follows a link, never blocks on a FIFO. With `was` (what
   * the guard just saw) the old blocks are overwritten and the mode set only when it differs.
   */
  private async writeOver(io: Io, dest: string, bytes: Buffer, mode: number, was?: { size: number; mode: number }): Promise<void> {
    const file = await io.open(dest, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      if (was === undefined) await file.replace(bytes);
      else await file.rewrite(bytes, was.size);
      if (was === undefined || (was.mode & 0o7777) !== (mode & 0o7777)) await file.chmod(mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
  }
}
