import { constants as fsConstants, existsSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import type { FileSystem } from './file-system.js';


/** How many times {@link FolderAnchors.insideRootNow} looks before it calls a folder outside. */
const INSIDE_LOOKS = 3;
/**
 * Linux gives every open descriptor a path, `/proc/self/fd/<fd>`, that reaches the very folder
 * the descriptor holds wherever it is now: the `openat` semantics Node has no call for. Elsewhere
 * (macOS, Windows) folders are reached by path, and the per-folder check before each write is
 * the guard (the window it leaves is in CHECKPOINT-DESIGN.md, Known limits).
 */
export const FOLDERS_HELD_BY_DESCRIPTOR: boolean = process.platform === 'linux' && existsSync('/proc/self/fd');

/**
 * Past this many held folders in one pass, further folders are reached by path (checked before
 * each write as before): a descriptor per folder must not exhaust the process's limit.
 */
export const MAX_HELD_FOLDERS = 4096;

const FOLDER_FLAGS = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

/** A folder reached in one pass: the inode it had then, and its descriptor (-1: reached by path). */
interface Held {
  fd: number;
  dev: number;
  ino: number;
}

/**
 * The folders one pass (a restore, a tool's write) writes in, each reached from the project root
 * one component at a time without following a link, and held open. Every file operation of the
 * pass names its file through the held folder ({@link at}), so a folder renamed or swapped for a
 * link afterwards (`rename`, `renameat2(RENAME_EXCHANGE)`) never redirects a write through the
 * link: the write lands in the folder that was checked. Whether that folder is still where it
 * was, under the root, is what {@link confirm} asks before each publish and once more at the end.
 *
 * Held folders are released only by {@link release}, after the pass's last operation: a
 * descriptor number named by a path in flight is never reused for another folder.
 */
export class FolderAnchors {
  private readonly held = new Map<string, Held>();
  /** Promise-API handles, kept so they close when released (the fault-injecting file systems have no sync calls). */
  private readonly handles = new Map<number, FileHandle>();
  /** Holds in progress per folder, so two concurrent first uses walk once. */
  private readonly holding = new Map<string, Promise<void>>();
  private released = false;
  /** Descriptors held now (folders past {@link MAX_HELD_FOLDERS} are reached by path). */
  private descriptors = 0;

  constructor(
    private readonly fs: FileSystem,
    /** Canonical (realpath'd) project root. */
    private readonly root: string,
  ) {}

  /**
   * The path through which `abs` (a name inside the root, its folder held) is reached: the held
   * folder's descriptor path and the name. Holds the folder first when it is not held yet.
   *
   * @throws CheckpointError `INVALID_PATH` when a folder on the way is a link or not a folder;
   *   ENOENT when one is missing.
   */
  async at(abs: string): Promise<string> {
    if (!FOLDERS_HELD_BY_DESCRIPTOR) return abs;
    const dir = path.dirname(abs);
    let held = this.held.get(dir);
    if (held === undefined) {
      await this.hold(dir);
      held = this.held.get(dir);
    }
    return held === undefined || held.fd < 0 ? abs : `/proc/self/fd/${held.fd}/${path.basename(abs)}`;
  }

  /** The held folder `dir` itself (for an fsync of the folder), or its path where none is held. */
  async folder(dir: string): Promise<string> {
    if (!FOLDERS_HELD_BY_DESCRIPTOR) return dir;
    let held = this.held.get(dir);
    if (held === undefined) {
      await this.hold(dir);
      held = this.held.get(dir);
    }
    return held === undefined || held.fd < 0 ? dir : `/proc/self/fd/${held.fd}`;
  }

  /** True when `dir` was reached (and held, where descriptors are used) in this pass. */
  isReached(dir: string): boolean {
    return this.held.has(dir);
  }

  /**
   * Reaches `dir` from the root one component at a time, each opened without following a link,
   * creating the missing ones when `create` is given (it is told each folder as soon as it
   * exists, so an undo log records it before anything else can fail), and holds it. Ends with a
   * {@link confirm}: a folder moved while the walk ran is refused like a link. Where descriptors
   * are not used (or past {@link MAX_HELD_FOLDERS}) the walk is an `lstat` per folder and `dir`
   * is recorded by its inode, reached by path.
   *
   * @throws CheckpointError `INVALID_PATH` when a folder on the way is a link or not a folder;
   *   the errno error (ENOENT) when one is missing and `create` is not given.
   */
  async hold(dir: string, create?: (made: string) => void | Promise<void>): Promise<void> {
    if (this.held.has(dir)) return;
    const pending = this.holding.get(dir);
    if (pending !== undefined) return pending;
    const walk = this.walk(dir, create);
    this.holding.set(dir, walk);
    try {
      await walk;
    } finally {
      this.holding.delete(dir);
    }
  }

  private async walk(dir: string, create: ((made: string) => void | Promise<void>) | undefined): Promise<void> {
    const relative = path.relative(this.root, dir);
    if (relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new CheckpointError('OUTSIDE_ROOT', `${dir} is outside the project`, { path: dir });
    }
    const names = relative === '' ? [] : relative.split(path.sep);
    const byDescriptor = FOLDERS_HELD_BY_DESCRIPTOR && !this.released && (this.descriptors < MAX_HELD_FOLDERS || names.length === 0);
    if (byDescriptor) await this.walkByDescriptor(dir, names, create);
    else await this.walkByPath(dir, names, create);
    if (!(await this.confirm(dir))) {
      await this.forget(dir);
      const shown = names.join('/');
      throw new CheckpointError('INVALID_PATH', `${shown} moved while it was reached`, { path: shown });
    }
  }

  /** Opens each folder on the way through its parent's descriptor: a link is never followed. */
  private async walkByDescriptor(dir: string, names: string[], create: ((made: string) => void | Promise<void>) | undefined): Promise<void> {
    // Start from the deepest folder already held on the way (the confirm at the end checks it).
    if (names.length === 0) {
      await this.keep(this.root, await this.openFolder(this.root, '.'));
      return;
    }
    await this.hold(this.root);
    let base = this.held.get(this.root) as Held;
    let start = 0;
    for (let i = names.length - 1; i > 0; i--) {
      const held = this.held.get(path.join(this.root, ...names.slice(0, i)));
      if (held !== undefined && held.fd >= 0) {
        base = held;
        start = i;
        break;
      }
    }
    let fd = base.fd;
    let owned = false;
    try {
      for (let i = start; i < names.length; i++) {
        const shown = names.slice(0, i + 1).join('/');
        const through = `/proc/self/fd/${fd}/${names[i] as string}`;
        let next: number;
        try {
          next = await this.openFolder(through, shown);
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT' || create === undefined) throw error;
          await this.makeFolder(through, path.join(this.root, ...names.slice(0, i + 1)), create);
          next = await this.openFolder(through, shown);
        }
        // Folders on the way are not kept: only the ones the pass writes in hold a descriptor.
        if (owned) await this.close(fd);
        fd = next;
        owned = true;
      }
      if (owned) {
        owned = false;
        await this.keep(dir, fd);
      }
    } finally {
      if (owned) await this.close(fd);
    }
  }

  /** Where descriptors do not reach folders: `lstat` of each folder on the way, none a link. */
  private async walkByPath(dir: string, names: string[], create: ((made: string) => void | Promise<void>) | undefined): Promise<void> {
    let stats: { dev: number; ino: number; isDirectory(): boolean; isSymbolicLink(): boolean } | undefined;
    for (let i = 0; i <= names.length; i++) {
      const abs = path.join(this.root, ...names.slice(0, i));
      const shown = i === 0 ? '.' : names.slice(0, i).join('/');
      try {
        stats = await this.lstat(abs);
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT' || create === undefined) throw error;
        await this.makeFolder(abs, abs, create);
        stats = await this.lstat(abs);
      }
      if (!stats.isDirectory()) throw new CheckpointError('INVALID_PATH', `${shown} is a link or not a folder; turnback never writes through it`, { path: shown });
    }
    if (stats !== undefined) this.held.set(dir, { fd: -1, dev: stats.dev, ino: stats.ino });
  }

  private async makeFolder(through: string, abs: string, create: (made: string) => void | Promise<void>): Promise<void> {
    try {
      const sync = this.fs.sync;
      if (sync !== undefined) sync.mkdirSync(through);
      else await this.fs.mkdir(through);
    } catch (error) {
      // Made by someone else meanwhile: theirs, not ours to log (the open that follows checks it).
      if (errnoCode(error) === 'EEXIST') return;
      throw error;
    }
    await create(abs);
  }

  /**
   * True while `dir` is still reached from the root, by its path, as the folder held for it:
   * the same inode, and a path that resolves to itself (no link on the way; the root is
   * canonical). A folder renamed out of the root or swapped for a link fails; so does one not
   * held (the caller holds it, which walks again).
   */
  async confirm(dir: string): Promise<boolean> {
    const held = this.held.get(dir);
    if (held === undefined) return false;
    try {
      const sync = this.fs.sync;
      const stats = sync !== undefined ? sync.lstatSync(dir) : await this.fs.lstat(dir);
      if (!stats.isDirectory() || stats.ino !== held.ino || stats.dev !== held.dev) return false;
      if (held.fd >= 0) {
        // The kernel's name for the held folder, one call: equal to `dir` only while every folder
        // on the way is the real folder of that name (a link in the way, or a folder renamed
        // anywhere above, gives another name). With the inode above, the path reaches it.
        const through = `/proc/self/fd/${held.fd}`;
        return (sync !== undefined ? sync.readlinkSync(through) : await this.fs.readlink(through)) === dir;
      }
      const real = sync !== undefined ? sync.realpathSync(dir) : await this.fs.realpath(dir);
      return real === dir;
    } catch {
      return false;
    }
  }

  /**
   * True when the folder held for `dir` is inside the root now: still at its path
   * ({@link confirm}), or moved by a rename that kept it under the root (swapped with a link
   * beside it, say). The kernel names where a held descriptor's folder is now; that path must lie
   * under the root, outside `.git`, and reach the same inode through no link. A rollback undoes
   * its steps there, in the folder it wrote in; outside the root it never does.
   */
  async insideRootNow(dir: string): Promise<boolean> {
    // A folder being swapped back and forth can move between the reads of one look (the kernel's
    // name for it, then its lstat): a few looks, any of which sees it inside, give one verdict.
    for (let look = 0; look < INSIDE_LOOKS; look++) if (await this.insideRootOnce(dir)) return true;
    return false;
  }

  private async insideRootOnce(dir: string): Promise<boolean> {
    if (await this.confirm(dir)) return true;
    const held = this.held.get(dir);
    if (held === undefined || held.fd < 0) return false;
    try {
      const sync = this.fs.sync;
      const through = `/proc/self/fd/${held.fd}`;
      const now = sync !== undefined ? sync.readlinkSync(through) : await this.fs.readlink(through);
      const relative = path.relative(this.root, now);
      if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative) || relative.split(path.sep).includes('.git')) return false;
      const stats = await this.lstat(now);
      if (!stats.isDirectory() || stats.ino !== held.ino || stats.dev !== held.dev) return false;
      const real = sync !== undefined ? sync.realpathSync(now) : await this.fs.realpath(now);
      return real === now;
    } catch {
      return false;
    }
  }

  /** Closes every held folder. Call once the pass's last operation has settled. */
  async release(): Promise<void> {
    this.released = true;
    const fds = [...this.held.values()].map((held) => held.fd).filter((fd) => fd >= 0);
    this.held.clear();
    this.descriptors = 0;
    for (const fd of new Set(fds)) await this.close(fd);
  }

  /**
   * Drops a held folder: one that failed its confirm (its descriptor is new, so no path in flight
   * names it), or one the restore removed itself; reaching it again walks from the root anew.
   */
  async forget(dir: string): Promise<void> {
    const held = this.held.get(dir);
    this.held.delete(dir);
    if (held !== undefined && held.fd >= 0) {
      this.descriptors -= 1;
      await this.close(held.fd);
    }
  }

  private async keep(dir: string, fd: number): Promise<Held> {
    const sync = this.fs.sync;
    const handle = this.handles.get(fd);
    const stats = sync !== undefined ? sync.fstatSync(fd) : await (handle as FileHandle).stat();
    const held = { fd, dev: stats.dev, ino: stats.ino };
    this.held.set(dir, held);
    this.descriptors += 1;
    return held;
  }

  private async openFolder(through: string, shown: string): Promise<number> {
    try {
      const sync = this.fs.sync;
      if (sync !== undefined) return sync.openSync(through, FOLDER_FLAGS);
      const handle = await this.fs.open(through, FOLDER_FLAGS);
      this.handles.set(handle.fd, handle);
      return handle.fd;
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        throw new CheckpointError('INVALID_PATH', `${shown} is a link or not a folder; turnback never writes through it`, { path: shown, cause: error });
      }
      throw error;
    }
  }

  private async lstat(abs: string): Promise<{ dev: number; ino: number; isDirectory(): boolean; isSymbolicLink(): boolean }> {
    const sync = this.fs.sync;
    return sync !== undefined ? sync.lstatSync(abs) : await this.fs.lstat(abs);
  }

  private async close(fd: number): Promise<void> {
    const handle = this.handles.get(fd);
    this.handles.delete(fd);
    try {
      if (handle !== undefined) await handle.close();
      else this.fs.sync?.closeSync(fd);
    } catch {
      // Already closed: nothing to release.
    }
  }
}
