import * as nodeFs from 'node:fs';
import type { Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { CheckpointError } from '../core/errors.js';
import { closeQuietly, type SyncFileSystem } from './file-system.js';

// Reading a file turnback was pointed at by path (a config file, an agent's settings, a payload,
// a project file shown in a diff). A plain `readFile` of a FIFO waits for a writer forever (and
// a device may never end), so every such read opens without blocking — O_NONBLOCK makes the open
// of a FIFO return at once and is ignored for a regular file — and reads only after `fstat` on
// that very descriptor shows a regular file. The check and the read see the same file: nothing
// can swap it in between.

const READ_FLAGS = nodeFs.constants.O_RDONLY | nodeFs.constants.O_NONBLOCK;

/** What a non-regular file is, in a word for the message. */
function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'fifo';
  if (stats.isDirectory()) return 'folder';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'device';
  return 'special file';
}

function notRegular(file: string, stats: Stats): CheckpointError {
  const kind = kindOf(stats);
  return new CheckpointError('INVALID_PATH', `${file} is a ${kind}, not a regular file: turnback reads only regular files there`, { path: file, expected: 'file', found: kind });
}

/**
 * The bytes of `file`, which must be a regular file (symlinks to one are followed). A missing
 * file throws Node's own `ENOENT` error, so callers keep their "not there" case.
 *
 * @throws CheckpointError `INVALID_PATH` naming the file when it is a FIFO, folder, socket or device (nothing waits on it).
 */
export async function readRegularFile(file: string): Promise<Buffer> {
  const handle = await open(file, READ_FLAGS);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notRegular(file, stats);
    return await handle.readFile();
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** {@link readRegularFile} as text (UTF-8). */
export async function readRegularText(file: string): Promise<string> {
  return (await readRegularFile(file)).toString('utf8');
}

/** {@link readRegularFile}, synchronously (for the few small reads on a synchronous path). */
export function readRegularFileSync(file: string): Buffer {
  const fd = nodeFs.openSync(file, READ_FLAGS);
  try {
    const stats = nodeFs.fstatSync(fd);
    if (!stats.isFile()) throw notRegular(file, stats);
    return nodeFs.readFileSync(fd);
  } finally {
    closeQuietly(fd);
  }
}

/**
 * {@link readRegularFileSync} through `sync` (an injected file system's sync path), for a file of
 * at most `maxBytes`: `undefined` for a bigger one, or one that grew while read, which the caller
 * reads through the promise API rather than stall this thread or cut it short.
 *
 * @throws CheckpointError `INVALID_PATH` as {@link readRegularFile}; Node's `ENOENT` when missing.
 */
export function readSmallRegularFileSync(sync: SyncFileSystem, file: string, maxBytes: number): Buffer | undefined {
  const fd = sync.openSync(file, READ_FLAGS);
  try {
    const stats = sync.fstatSync(fd);
    if (!stats.isFile()) throw notRegular(file, stats);
    if (stats.size > maxBytes) return undefined;
    // One byte more than the size, so a file that grows in place is seen doing so.
    const buffer = Buffer.allocUnsafe(stats.size + 1);
    let filled = 0;
    for (;;) {
      const read = sync.readSync(fd, buffer, filled, buffer.length - filled, filled);
      if (read === 0) break;
      filled += read;
      if (filled > stats.size) return undefined;
    }
    return buffer.subarray(0, filled);
  } finally {
    sync.closeSync(fd);
  }
}

/** {@link readRegularFileSync} as text (UTF-8). */
export function readRegularTextSync(file: string): string {
  return readRegularFileSync(file).toString('utf8');
}
