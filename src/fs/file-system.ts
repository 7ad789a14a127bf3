import * as nodeSyncFs from 'node:fs';
import * as nodeFs from 'node:fs/promises';

/**
 * Synchronous calls for hot paths on small files. A promise-based call costs a thread-pool round
 * trip (~80 µs on a busy machine) while the synchronous one costs a few microseconds, so reading
 * a small file's state synchronously is both faster and kinder to the agent than queuing it.
 * Callers bound what they do synchronously (small files only).
 */
export interface SyncFileSystem {
  lstatSync: typeof nodeSyncFs.lstatSync;
  openSync: typeof nodeSyncFs.openSync;
  fstatSync: typeof nodeSyncFs.fstatSync;
  readSync: typeof nodeSyncFs.readSync;
  closeSync: typeof nodeSyncFs.closeSync;
  readlinkSync: typeof nodeSyncFs.readlinkSync;
  // Restore apply (small files): stage, swap, roll back, commit, stray scan.
  writeSync: typeof nodeSyncFs.writeSync;
  fchmodSync: typeof nodeSyncFs.fchmodSync;
  fsyncSync: typeof nodeSyncFs.fsyncSync;
  ftruncateSync: typeof nodeSyncFs.ftruncateSync;
  renameSync: typeof nodeSyncFs.renameSync;
  linkSync: typeof nodeSyncFs.linkSync;
  unlinkSync: typeof nodeSyncFs.unlinkSync;
  mkdirSync: typeof nodeSyncFs.mkdirSync;
  rmdirSync: typeof nodeSyncFs.rmdirSync;
  symlinkSync: typeof nodeSyncFs.symlinkSync;
  readdirSync: typeof nodeSyncFs.readdirSync;
  lchownSync: typeof nodeSyncFs.lchownSync;
  /** The kernel's realpath (one call, not a walk in JavaScript). */
  realpathSync: (path: string) => string;
}

/**
 * The narrow set of file-system calls turnback makes where failure handling matters (restore
 * apply, store writes). Defaults to `node:fs/promises`; tests inject a fault-injecting adapter to
 * prove rollback and crash safety.
 */
export interface FileSystem {
  lstat: typeof nodeFs.lstat;
  stat: typeof nodeFs.stat;
  readFile: typeof nodeFs.readFile;
  writeFile: typeof nodeFs.writeFile;
  open: typeof nodeFs.open;
  rename: typeof nodeFs.rename;
  link: typeof nodeFs.link;
  unlink: typeof nodeFs.unlink;
  mkdir: typeof nodeFs.mkdir;
  rmdir: typeof nodeFs.rmdir;
  rm: typeof nodeFs.rm;
  readdir: typeof nodeFs.readdir;
  readlink: typeof nodeFs.readlink;
  symlink: typeof nodeFs.symlink;
  chmod: typeof nodeFs.chmod;
  realpath: typeof nodeFs.realpath;
  copyFile: typeof nodeFs.copyFile;
  appendFile: typeof nodeFs.appendFile;
  lchown: typeof nodeFs.lchown;
  /**
   * Synchronous fast path for small files. Optional: without it every call goes through the
   * promise API (fault-injection tests leave it out so every call can be made to fail).
   */
  sync?: SyncFileSystem;
}

/** The real file system. */
export const nodeFileSystem: FileSystem = {
  lstat: nodeFs.lstat,
  stat: nodeFs.stat,
  readFile: nodeFs.readFile,
  writeFile: nodeFs.writeFile,
  open: nodeFs.open,
  rename: nodeFs.rename,
  link: nodeFs.link,
  unlink: nodeFs.unlink,
  mkdir: nodeFs.mkdir,
  rmdir: nodeFs.rmdir,
  rm: nodeFs.rm,
  readdir: nodeFs.readdir,
  readlink: nodeFs.readlink,
  symlink: nodeFs.symlink,
  chmod: nodeFs.chmod,
  realpath: nodeFs.realpath,
  copyFile: nodeFs.copyFile,
  appendFile: nodeFs.appendFile,
  lchown: nodeFs.lchown,
  sync: {
    lstatSync: nodeSyncFs.lstatSync,
    openSync: nodeSyncFs.openSync,
    fstatSync: nodeSyncFs.fstatSync,
    readSync: nodeSyncFs.readSync,
    closeSync: nodeSyncFs.closeSync,
    readlinkSync: nodeSyncFs.readlinkSync,
    writeSync: nodeSyncFs.writeSync,
    fchmodSync: nodeSyncFs.fchmodSync,
    fsyncSync: nodeSyncFs.fsyncSync,
    ftruncateSync: nodeSyncFs.ftruncateSync,
    renameSync: nodeSyncFs.renameSync,
    linkSync: nodeSyncFs.linkSync,
    unlinkSync: nodeSyncFs.unlinkSync,
    mkdirSync: nodeSyncFs.mkdirSync,
    rmdirSync: nodeSyncFs.rmdirSync,
    symlinkSync: nodeSyncFs.symlinkSync,
    readdirSync: nodeSyncFs.readdirSync,
    lchownSync: nodeSyncFs.lchownSync,
    realpathSync: (p: string) => nodeSyncFs.realpathSync.native(p),
  },
};

/** Prefix of every temporary file turnback creates in a project or store. */
export const TEMP_PREFIX = '.turnback-';

/**
 * True for names of turnback's own temporary files (staged writes, displaced originals, temp
 * objects). The scanner skips them and `prune` removes stale ones; one predicate for both.
 */
export function isTurnbackTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}

/** Closes a raw descriptor, ignoring one that is closed already. */
export function closeQuietly(fd: number): void {
  try {
    nodeSyncFs.closeSync(fd);
  } catch {
    // already closed
  }
}

/**
 * Closes raw descriptors whose owner was dropped without closing them (an abandoned journal
 * writer, a pack read by a store never closed). Owners unregister when they close explicitly, so a
 * descriptor number reused afterwards is never touched.
 */
export const descriptorsOfDropped: FinalizationRegistry<number> = new FinalizationRegistry<number>(closeQuietly);

/** Writes all of `bytes` at the descriptor's position (a `write` may take only part of them). */
export function writeAllSync(fd: number, bytes: Uint8Array, write: SyncFileSystem['writeSync'] = nodeSyncFs.writeSync): void {
  let done = 0;
  while (done < bytes.length) done += write(fd, bytes, done, bytes.length - done);
}
