import * as nodeSyncFs from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import { isLossyName, nameFromBytes, pathForKernel } from '../core/raw-names.js';

/**
 * Synchronous calls for hot paths on small files. A promise-based call costs a thread-pool round
 * trip (~80 µs on a busy machine) while the synchronous one costs a few microseconds, so reading
 * a small file's state synchronously is both faster and kinder to the agent than queuing it.
 * Callers bound what they do synchronously (small files only).
 */
export interface SyncFileSystem {
  lstatSync: typeof nodeSyncFs.lstatSync;
  /** A store file's identity (a manifest, a state document) before the cache that trusts it is used. */
  statSync: typeof nodeSyncFs.statSync;
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

// Every path a call takes goes through `pathForKernel` (a name with escaped raw bytes becomes its
// exact bytes), and every name a call returns that a lossy decode damaged is read again in bytes
// (fs/raw-names.ts): a name that is not valid UTF-8 is reached like any other.

type AnyCall = (...args: never[]) => unknown;

/** `call` with its first `paths` arguments (those that are strings) handed to the kernel as bytes where needed. */
function kernelPaths<F extends AnyCall>(call: F, paths: 1 | 2 = 1): F {
  return ((...args: unknown[]) => {
    for (let i = 0; i < paths; i++) if (typeof args[i] === 'string') args[i] = pathForKernel(args[i] as string);
    return (call as unknown as (...a: unknown[]) => unknown)(...args);
  }) as unknown as F;
}

/** True when `options` asks for names as strings (the default), so a damaged one can be read again in bytes. */
function wantsStrings(options: unknown): boolean {
  if (options === undefined || options === null) return true;
  if (typeof options === 'string') return options === 'utf8' || options === 'utf-8';
  const encoding = (options as { encoding?: unknown }).encoding;
  return encoding === undefined || encoding === null || encoding === 'utf8' || encoding === 'utf-8';
}

function withBytes(options: unknown): object {
  return typeof options === 'object' && options !== null ? { ...options, encoding: 'buffer' } : { encoding: 'buffer' };
}

/** A listing whose damaged names are read again in bytes (names or dirents, in the same order). */
function rawListing(listed: unknown, again: () => unknown): unknown {
  const entries = listed as (string | { name: unknown })[];
  if (!entries.some((entry) => isLossyName(typeof entry === 'string' ? entry : String(entry.name)))) return listed;
  const bytes = again() as (Buffer | { name: Buffer })[];
  return bytes.map((entry) => {
    if (Buffer.isBuffer(entry)) return nameFromBytes(entry);
    // Dirent's name is a plain field: the raw name replaces the Buffer on the same object.
    (entry as { name: unknown }).name = nameFromBytes(entry.name);
    return entry;
  });
}

/** A returned path that a lossy decode damaged, read again in bytes. */
function rawPath(found: unknown, again: () => unknown): unknown {
  return typeof found === 'string' && isLossyName(found) ? nameFromBytes(again() as Buffer) : found;
}

function readdirAsync(dir: unknown, options?: unknown): Promise<unknown> {
  const at = typeof dir === 'string' ? pathForKernel(dir) : dir;
  const call = nodeFs.readdir as unknown as (p: unknown, o?: unknown) => Promise<unknown>;
  if (!wantsStrings(options)) return call(at, options);
  return call(at, options).then(async (listed) => {
    const entries = listed as (string | { name: unknown })[];
    if (!entries.some((entry) => isLossyName(typeof entry === 'string' ? entry : String(entry.name)))) return listed;
    const again = await call(at, withBytes(options));
    return rawListing(listed, () => again);
  });
}

function readdirSyncRaw(dir: unknown, options?: unknown): unknown {
  const at = typeof dir === 'string' ? pathForKernel(dir) : dir;
  const call = nodeSyncFs.readdirSync as unknown as (p: unknown, o?: unknown) => unknown;
  const listed = call(at, options);
  return wantsStrings(options) ? rawListing(listed, () => call(at, withBytes(options))) : listed;
}

function returnedPathAsync(call: (p: unknown, o?: unknown) => Promise<unknown>) {
  return async (p: unknown, options?: unknown): Promise<unknown> => {
    const at = typeof p === 'string' ? pathForKernel(p) : p;
    const found = await call(at, options);
    if (!wantsStrings(options) || typeof found !== 'string' || !isLossyName(found)) return found;
    return nameFromBytes((await call(at, withBytes(options))) as Buffer);
  };
}

function returnedPathSync(call: (p: unknown, o?: unknown) => unknown) {
  return (p: unknown, options?: unknown): unknown => {
    const at = typeof p === 'string' ? pathForKernel(p) : p;
    const found = call(at, options);
    return wantsStrings(options) ? rawPath(found, () => call(at, withBytes(options))) : found;
  };
}

/** The real file system. */
export const nodeFileSystem: FileSystem = {
  lstat: kernelPaths(nodeFs.lstat),
  stat: kernelPaths(nodeFs.stat),
  readFile: kernelPaths(nodeFs.readFile),
  writeFile: kernelPaths(nodeFs.writeFile),
  open: kernelPaths(nodeFs.open),
  rename: kernelPaths(nodeFs.rename, 2),
  link: kernelPaths(nodeFs.link, 2),
  unlink: kernelPaths(nodeFs.unlink),
  mkdir: kernelPaths(nodeFs.mkdir),
  rmdir: kernelPaths(nodeFs.rmdir),
  rm: kernelPaths(nodeFs.rm),
  readdir: readdirAsync as unknown as typeof nodeFs.readdir,
  readlink: returnedPathAsync(nodeFs.readlink as unknown as (p: unknown, o?: unknown) => Promise<unknown>) as unknown as typeof nodeFs.readlink,
  symlink: kernelPaths(nodeFs.symlink, 2),
  chmod: kernelPaths(nodeFs.chmod),
  realpath: returnedPathAsync(nodeFs.realpath as unknown as (p: unknown, o?: unknown) => Promise<unknown>) as unknown as typeof nodeFs.realpath,
  copyFile: kernelPaths(nodeFs.copyFile, 2),
  appendFile: kernelPaths(nodeFs.appendFile),
  lchown: kernelPaths(nodeFs.lchown),
  sync: {
    lstatSync: kernelPaths(nodeSyncFs.lstatSync),
    statSync: kernelPaths(nodeSyncFs.statSync),
    openSync: kernelPaths(nodeSyncFs.openSync),
    fstatSync: nodeSyncFs.fstatSync,
    readSync: nodeSyncFs.readSync,
    closeSync: nodeSyncFs.closeSync,
    readlinkSync: returnedPathSync(nodeSyncFs.readlinkSync as unknown as (p: unknown, o?: unknown) => unknown) as unknown as typeof nodeSyncFs.readlinkSync,
    writeSync: nodeSyncFs.writeSync,
    fchmodSync: nodeSyncFs.fchmodSync,
    fsyncSync: nodeSyncFs.fsyncSync,
    ftruncateSync: nodeSyncFs.ftruncateSync,
    renameSync: kernelPaths(nodeSyncFs.renameSync, 2),
    linkSync: kernelPaths(nodeSyncFs.linkSync, 2),
    unlinkSync: kernelPaths(nodeSyncFs.unlinkSync),
    mkdirSync: kernelPaths(nodeSyncFs.mkdirSync),
    rmdirSync: kernelPaths(nodeSyncFs.rmdirSync),
    symlinkSync: kernelPaths(nodeSyncFs.symlinkSync, 2),
    readdirSync: readdirSyncRaw as unknown as typeof nodeSyncFs.readdirSync,
    lchownSync: kernelPaths(nodeSyncFs.lchownSync),
    realpathSync: (p: string) => rawPath(nodeSyncFs.realpathSync.native(pathForKernel(p)), () => nodeSyncFs.realpathSync.native(pathForKernel(p), { encoding: 'buffer' })) as string,
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

/**
 * `stat` of a store file whose identity a cache trusts (a manifest, a state document): on the
 * calling thread where `fs` has a sync path (microseconds, never a wait on a writer), else
 * through the promise API. A listing that looks at every manifest pays one pool trip each otherwise.
 */
export async function statOnThread(fs: FileSystem, file: string): Promise<nodeSyncFs.Stats> {
  return fs.sync !== undefined ? fs.sync.statSync(file) : fs.stat(file);
}

/** The names in a store folder of a few dozen to a few hundred entries, listed as {@link statOnThread} looks. */
export async function readdirOnThread(fs: FileSystem, dir: string): Promise<string[]> {
  return fs.sync !== undefined ? (fs.sync.readdirSync(dir) as string[]) : fs.readdir(dir);
}
