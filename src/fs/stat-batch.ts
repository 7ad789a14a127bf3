import { lstatSync } from 'node:fs';
import { sep } from 'node:path';

// The layout of a stat batch, shared by the calling thread and the helper thread
// (src/fs/lstat-worker.ts), which both run lstatInto below.

/** Numbers kept per path in a stat batch: kind, permission bits, size, mtimeMs, inode. */
export const STAT_FIELDS = 5;
/** Kind codes of a stat batch: nothing there (`ENOENT`, `ENOTDIR`). */
export const KIND_MISSING = 0;
/** Kind code: a regular file. */
export const KIND_FILE = 1;
/** Kind code: a symbolic link. */
export const KIND_SYMLINK = 2;
/** Kind code: a folder. */
export const KIND_FOLDER = 3;
/** Kind code: anything else (FIFO, socket, device). */
export const KIND_OTHER = 4;
/** Kind code: lstat failed for another reason (`EACCES`, `ELOOP`, ...). */
export const KIND_FAILED = 5;

/**
 * `lstat` of `base/rels[i]` for `i` in `[from, to)` (`''` is `base` itself), into `out` at
 * {@link STAT_FIELDS} numbers a path, at the same positions. Never throws: a failure is a kind code.
 */
export function lstatInto(base: string, rels: readonly string[], from: number, to: number, out: Float64Array): void {
  for (let i = from; i < to; i++) {
    const at = i * STAT_FIELDS;
    const rel = rels[i] as string;
    let stats;
    try {
      stats = lstatSync(rel === '' ? base : `${base}${sep}${rel}`, { throwIfNoEntry: false });
    } catch (error) {
      out[at] = (error as NodeJS.ErrnoException | null)?.code === 'ENOTDIR' ? KIND_MISSING : KIND_FAILED;
      continue;
    }
    if (stats === undefined) {
      out[at] = KIND_MISSING;
      continue;
    }
    out[at] = stats.isFile() ? KIND_FILE : stats.isSymbolicLink() ? KIND_SYMLINK : stats.isDirectory() ? KIND_FOLDER : KIND_OTHER;
    out[at + 1] = stats.mode & 0o7777;
    out[at + 2] = stats.size;
    out[at + 3] = stats.mtimeMs;
    out[at + 4] = stats.ino;
  }
}
