import { errnoCode } from '../core/errors.js';
import type { FolderAnchors } from '../fs/anchors.js';
import type { FileSystem, SyncFileSystem } from '../fs/file-system.js';

/** A file opened for writing by a stage or an in-place rewrite. */
export interface OpenFile {
  /** Writes all of `bytes` into a new, empty file. */
  fill(bytes: Buffer): Promise<void>;
  /** Writes all of `bytes` from offset 0 of an existing file, after truncating it. */
  replace(bytes: Buffer): Promise<void>;
  /**
   * Writes all of `bytes` over an existing file of `oldSize` bytes from offset 0, then cuts it to
   * length: the file's blocks are overwritten rather than freed and allocated again, which is
   * most of the cost of a truncate-then-write of a small file.
   */
  rewrite(bytes: Buffer, oldSize: number): Promise<void>;
  /** fchmod: never follows a link, and undoes what the umask narrowed at create. */
  chmod(mode: number): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The calls a transaction makes, one set over the promise API (any injected `FileSystem`, so
 * fault injection reaches every step) and one over its synchronous calls for small files. The
 * transaction's steps are written once against this.
 */
export interface Io {
  open(abs: string, flags: number | string, mode?: number): Promise<OpenFile>;
  /** Creates a folder; `mode` (before the umask) when given. */
  mkdir(abs: string, mode?: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  link(from: string, to: string): Promise<void>;
  unlink(abs: string): Promise<void>;
  rmdir(abs: string): Promise<void>;
  symlink(target: string, abs: string): Promise<void>;
  /** Sets owner and group without following a link, when they differ from `abs`'s. */
  ownAs(abs: string, owner: { uid: number; gid: number }): Promise<void>;
  /** False only when nothing is there (ENOENT). */
  exists(abs: string): Promise<boolean>;
}

/** The {@link Io} over the promise API of any `FileSystem` (fault injection reaches every call). */
export function promiseIo(fs: FileSystem): Io {
  return {
    async open(abs, flags, mode) {
      const handle = await fs.open(abs, flags, mode);
      return {
        async fill(bytes) {
          await handle.writeFile(bytes);
        },
        async replace(bytes) {
          await handle.truncate(0);
          await handle.write(bytes, 0, bytes.length, 0);
        },
        async rewrite(bytes, oldSize) {
          for (let offset = 0; offset < bytes.length; ) offset += (await handle.write(bytes, offset, bytes.length - offset, offset)).bytesWritten;
          if (oldSize !== bytes.length) await handle.truncate(bytes.length);
        },
        chmod: (m) => handle.chmod(m),
        sync: () => handle.sync(),
        close: () => handle.close(),
      };
    },
    async mkdir(abs, mode) {
      await fs.mkdir(abs, mode === undefined ? undefined : { mode });
    },
    rename: (from, to) => fs.rename(from, to),
    link: (from, to) => fs.link(from, to),
    unlink: (abs) => fs.unlink(abs),
    rmdir: (abs) => fs.rmdir(abs),
    symlink: (target, abs) => fs.symlink(target, abs),
    async ownAs(abs, owner) {
      const stats = await fs.lstat(abs);
      if (stats.uid !== owner.uid || stats.gid !== owner.gid) await fs.lchown(abs, owner.uid, owner.gid);
    },
    async exists(abs) {
      try {
        await fs.lstat(abs);
        return true;
      } catch (error) {
        return errnoCode(error) !== 'ENOENT';
      }
    },
  };
}

/** The {@link Io} over a file system's synchronous calls, for small files. */
export function syncIo(fs: SyncFileSystem): Io {
  const writeAll = (fd: number, bytes: Buffer): void => {
    // writeSync may write less than asked (signals, quotas): loop until every byte is down.
    for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset, offset);
  };
  return {
    async open(abs, flags, mode) {
      const fd = fs.openSync(abs, flags, mode);
      return {
        async fill(bytes) {
          writeAll(fd, bytes);
        },
        async replace(bytes) {
          fs.ftruncateSync(fd, 0);
          writeAll(fd, bytes);
        },
        async rewrite(bytes, oldSize) {
          writeAll(fd, bytes);
          if (oldSize !== bytes.length) fs.ftruncateSync(fd, bytes.length);
        },
        async chmod(m) {
          fs.fchmodSync(fd, m);
        },
        async sync() {
          fs.fsyncSync(fd);
        },
        async close() {
          fs.closeSync(fd);
        },
      };
    },
    async mkdir(abs, mode) {
      fs.mkdirSync(abs, mode === undefined ? undefined : { mode });
    },
    async rename(from, to) {
      fs.renameSync(from, to);
    },
    async link(from, to) {
      fs.linkSync(from, to);
    },
    async unlink(abs) {
      fs.unlinkSync(abs);
    },
    async rmdir(abs) {
      fs.rmdirSync(abs);
    },
    async symlink(target, abs) {
      fs.symlinkSync(target, abs);
    },
    async ownAs(abs, owner) {
      const stats = fs.lstatSync(abs);
      if (stats.uid !== owner.uid || stats.gid !== owner.gid) fs.lchownSync(abs, owner.uid, owner.gid);
    },
    async exists(abs) {
      try {
        fs.lstatSync(abs);
        return true;
      } catch (error) {
        return errnoCode(error) !== 'ENOENT';
      }
    },
  };
}


/**
 * The {@link Io} whose every path is reached through its folder's held descriptor
 * ({@link FolderAnchors.at}): a folder renamed or swapped for a link after it was checked never
 * redirects a step through the link. A symlink's target is data, never translated.
 */
export function anchoredIo(inner: Io, anchors: FolderAnchors): Io {
  return {
    open: async (abs, flags, mode) => inner.open(await anchors.at(abs), flags, mode),
    mkdir: async (abs, mode) => inner.mkdir(await anchors.at(abs), mode),
    rename: async (from, to) => inner.rename(await anchors.at(from), await anchors.at(to)),
    link: async (from, to) => inner.link(await anchors.at(from), await anchors.at(to)),
    unlink: async (abs) => inner.unlink(await anchors.at(abs)),
    rmdir: async (abs) => inner.rmdir(await anchors.at(abs)),
    symlink: async (target, abs) => inner.symlink(target, await anchors.at(abs)),
    ownAs: async (abs, owner) => inner.ownAs(await anchors.at(abs), owner),
    async exists(abs) {
      let reached: string;
      try {
        reached = await anchors.at(abs);
      } catch (error) {
        // The folder itself is gone: nothing is there.
        if (errnoCode(error) === 'ENOENT') return false;
        throw error;
      }
      return inner.exists(reached);
    },
  };
}
