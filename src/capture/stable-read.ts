import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import { pathForKernel } from '../core/raw-names.js';
import { readExactly, readExactlySync } from '../store/loose-objects.js';
import { syncPutMaxBytes, type ObjectBatch, type ObjectRef, type PutFileOptions } from '../store/objects.js';
import { PACK_OBJECT_MAX_BYTES } from '../store/packs.js';
import type { PictureStore } from './picture.js';

// The stable read of a project file: its bytes as one consistent version (a file that changes,
// shrinks or is swapped for something else while it is read is refused with CONFLICT, never
// stored half-old), hashed once, then handed to the store.

/** Where a read file's bytes go: the store's put calls for bytes already hashed. */
export interface ObjectSink {
  putHashed(bytes: Uint8Array, hash: string, options?: PutFileOptions): Promise<ObjectRef>;
  putHashedSync(bytes: Uint8Array, hash: string, options?: PutFileOptions): ObjectRef | undefined;
  loadObjects(): Promise<void>;
  readonly objectsLoaded: boolean;
  /** Optional: see `CheckpointStore.copyCheck`. */
  copyCheck?(): (object: string) => boolean;
  /** Optional: see `CheckpointStore.openBatch`. */
  openBatch?(): ObjectBatch;
  /** Optional: see `CheckpointStore.endBatch`. */
  endBatch?(batch: ObjectBatch): Promise<ReadonlyMap<string, unknown>>;
}

/** What {@link storeFile} returns: the object plus the file's permission bits. */
export interface FileObjectRef extends ObjectRef {
  /** Permission bits (`mode & 0o7777`) read with the bytes. */
  mode: number;
}

/**
 * What the caller believes a file looks like (from a scan). Any field that differs from what is
 * read makes `putFile` throw `CONFLICT` instead of storing bytes the caller did not mean.
 */
export interface PutFileExpectation {
  size?: number;
  mtimeMs?: number;
  hash?: string;
}

/** Reused by the synchronous path (small files only; one thread): no allocation per read. */
const readScratch: Buffer = Buffer.allocUnsafe(PACK_OBJECT_MAX_BYTES + 1);

/**
 * Stores the current bytes of the regular file at `absPath`, refusing symlinks and anything
 * that changes while it is read. A file of at most 256 KiB is read and stored synchronously
 * (open, fstat, read, fstat, hash, one pack append: a few system calls, no thread-pool round
 * trip); larger files go through the promise API.
 *
 * @throws CheckpointError `CONFLICT` when the file is not a regular file (any more), vanished,
 *   differs from `expected`, or changed size or mtime during the read; `INVALID_ARGUMENT` for a
 *   relative path; `IO` otherwise.
 */
export async function storeFile(store: ObjectSink, absPath: string, expected?: PutFileExpectation, options: PutFileOptions = {}, fs: FileSystem = nodeFileSystem): Promise<FileObjectRef> {
  assertAbsolute(absPath);
  if (!store.objectsLoaded) await store.loadObjects();
  const ref = storeFileSync(store, absPath, expected, options);
  return ref ?? storeLargeFile(store, fs, absPath, expected, options);
}

/**
 * {@link storeFile} on the calling thread for a file of at most 256 KiB (4 MiB in a batch, whose
 * blocks take it beside the files of its folder): returns its reference, or `undefined` when the
 * file is larger (or the store not loaded yet) and must take {@link storeFile}. With `expected.size` and `expected.mtimeMs` from a stat taken just before
 * (a picture's scan), that stat stands for the one before the read: open, read, one fstat after it.
 *
 * @throws CheckpointError as {@link storeFile}.
 */
export function storeFileSync(store: ObjectSink, absPath: string, expected?: PutFileExpectation, options: PutFileOptions = {}): FileObjectRef | undefined {
  assertAbsolute(absPath);
  if (!store.objectsLoaded) return undefined;
  const syncMax = syncPutMaxBytes(options);
  let fd: number;
  try {
    // O_NOFOLLOW: never read through a symlink. O_NONBLOCK: a FIFO swapped in must not hang us.
    fd = openSync(pathForKernel(absPath), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    throw openError(error, absPath);
  }
  try {
    let bytes: Buffer;
    let mode: number;
    if (expected?.size !== undefined && expected.mtimeMs !== undefined && expected.size <= syncMax) {
      // One byte of slack tells a file that grew from one that did not.
      let read: Buffer;
      try {
        read = readUpToSync(fd, expected.size + 1, readScratch);
      } catch (error) {
        checkBefore(fstatSync(fd), absPath, undefined); // a folder or other non-file: CONFLICT
        throw error;
      }
      const after = fstatSync(fd);
      checkBefore(after, absPath, expected);
      if (read.length !== expected.size) throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
      bytes = read;
      mode = after.mode;
    } else {
      const before = fstatSync(fd);
      checkBefore(before, absPath, expected);
      if (before.size > syncMax) return undefined;
      const read = readExactlySync(fd, before.size, readScratch);
      if (read === undefined) throw new CheckpointError('CONFLICT', `file shrank while it was read: ${absPath}`, { path: absPath });
      const after = fstatSync(fd);
      if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
        throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
      }
      bytes = read;
      mode = before.mode;
    }
    const hash = contentHash(bytes);
    if (expected?.hash !== undefined && expected.hash !== hash) {
      throw new CheckpointError('CONFLICT', `file content changed: ${absPath}`, { path: absPath, expected: expected.hash, found: hash });
    }
    const ref = store.putHashedSync(bytes, hash, options);
    if (ref === undefined) throw new CheckpointError('IO', 'the store is not loaded', { path: absPath });
    return { object: ref.object, hash: ref.hash, size: ref.size, mode: mode & 0o7777 };
  } catch (error) {
    throw asCheckpointError(error, 'cannot read file', absPath);
  } finally {
    closeSync(fd);
  }
}


/** The promise path for files above the pack threshold: read through a handle, stored loose. */
async function storeLargeFile(store: ObjectSink, fs: FileSystem, absPath: string, expected: PutFileExpectation | undefined, options: PutFileOptions): Promise<FileObjectRef> {
  let handle: FileHandle;
  try {
    handle = await fs.open(absPath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    throw openError(error, absPath);
  }
  let bytes: Buffer;
  let mode: number;
  let hash: string;
  try {
    const before = await handle.stat();
    checkBefore(before, absPath, expected);
    mode = before.mode & 0o7777;
    const read = await readExactly(handle, before.size);
    if (read === undefined) throw new CheckpointError('CONFLICT', `file shrank while it was read: ${absPath}`, { path: absPath });
    bytes = read;
    const after = await handle.stat();
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
      throw new CheckpointError('CONFLICT', `file changed while it was read: ${absPath}`, { path: absPath });
    }
    await loadHasher();
    hash = contentHash(bytes);
    if (expected?.hash !== undefined && expected.hash !== hash) {
      throw new CheckpointError('CONFLICT', `file content changed: ${absPath}`, { path: absPath, expected: expected.hash, found: hash });
    }
  } catch (error) {
    throw asCheckpointError(error, 'cannot read file', absPath);
  } finally {
    await handle.close().catch(() => undefined);
  }
  // It shrank below the threshold between the two opens: still a valid object either way.
  const ref = await store.putHashed(bytes, hash, options);
  return { ...ref, mode };
}

function openError(error: unknown, absPath: string): CheckpointError {
  const code = errnoCode(error);
  if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') {
    return new CheckpointError('CONFLICT', `file is gone or is no longer a regular file: ${absPath}`, { path: absPath, cause: error });
  }
  return asCheckpointError(error, 'cannot open file', absPath);
}

function checkBefore(before: { isFile(): boolean; size: number; mtimeMs: number }, absPath: string, expected?: PutFileExpectation): void {
  if (!before.isFile()) {
    throw new CheckpointError('CONFLICT', `not a regular file: ${absPath}`, { path: absPath });
  }
  if (expected?.size !== undefined && expected.size !== before.size) {
    throw new CheckpointError('CONFLICT', `file size changed: ${absPath}`, { path: absPath, expected: String(expected.size), found: String(before.size) });
  }
  if (expected?.mtimeMs !== undefined && expected.mtimeMs !== before.mtimeMs) {
    throw new CheckpointError('CONFLICT', `file was modified: ${absPath}`, { path: absPath, expected: String(expected.mtimeMs), found: String(before.mtimeMs) });
  }
}

/** Reads at most `max` bytes from the start of `fd` (fewer at end of file). Bounded by the callers to small files. */
function readUpToSync(fd: number, max: number, scratch: Buffer): Buffer {
  const buffer = scratch.length >= max ? scratch.subarray(0, max) : Buffer.allocUnsafe(max);
  let offset = 0;
  while (offset < max) {
    const n = readSync(fd, buffer, offset, max - offset, offset);
    if (n === 0) break;
    offset += n;
  }
  return buffer.subarray(0, offset);
}

function assertAbsolute(absPath: unknown): asserts absPath is string {
  if (typeof absPath !== 'string' || !path.isAbsolute(absPath)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'putFile takes an absolute path', { path: String(absPath) });
  }
}

/** The {@link PictureStore} of a checkpoint store: each file is read stably here, then stored. */
export function pictureStoreOf(store: ObjectSink, fs: FileSystem = nodeFileSystem): PictureStore {
  return {
    putFile: (absPath, expected) => storeFile(store, absPath, expected, {}, fs),
    putFileSync: (absPath, expected) => storeFileSync(store, absPath, expected),
    ...(store.openBatch !== undefined && store.endBatch !== undefined
      ? {
          batch: () => {
            const batch = (store.openBatch as () => ObjectBatch).call(store);
            return {
              syncMaxBytes: syncPutMaxBytes({ batch }),
              putFile: (absPath: string, expected?: PutFileExpectation) => storeFile(store, absPath, expected, { batch }, fs),
              putFileSync: (absPath: string, expected?: PutFileExpectation) => storeFileSync(store, absPath, expected, { batch }),
              end: () => (store.endBatch as (batch: ObjectBatch) => Promise<ReadonlyMap<string, unknown>>).call(store, batch),
            };
          },
        }
      : {}),
    ...(store.copyCheck !== undefined
      ? {
          checkCopies: async () => {
            await store.loadObjects();
            return (store.copyCheck as () => (object: string) => boolean).call(store);
          },
        }
      : {}),
  };
}
