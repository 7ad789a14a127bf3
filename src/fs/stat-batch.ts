import { sep } from 'node:path';
import { KIND_MISSING, KIND_NOT_FOLDER_ON_PATH, STAT_FIELDS, lstatNumbers } from './fast-lstat.js';

// The layout of a stat batch, shared by the calling thread and the helper thread
// (src/fs/lstat-worker.ts), which both run lstatInto below.

export { KIND_FAILED, KIND_FILE, KIND_FOLDER, KIND_MISSING, KIND_OTHER, KIND_SYMLINK, STAT_FIELDS } from './fast-lstat.js';

/**
 * `lstat` of `base/rels[i]` for `i` in `[from, to)` (`''` is `base` itself), into `out` at
 * {@link STAT_FIELDS} numbers a path, at the same positions. Never throws: a failure is a kind code.
 */
export function lstatInto(base: string, rels: readonly string[], from: number, to: number, out: Float64Array): void {
  for (let i = from; i < to; i++) statOneInto(base, rels[i] as string, out, i * STAT_FIELDS);
}

/** `lstat` of `base/rel` into `out` at `at`. */
function statOneInto(base: string, rel: string, out: Float64Array, at: number): void {
  const kind = lstatNumbers(rel === '' ? base : `${base}${sep}${rel}`, out, at);
  out[at] = kind === KIND_NOT_FOLDER_ON_PATH ? KIND_MISSING : kind;
}

/**
 * {@link lstatInto} of the first `count` paths of `text`, relative paths joined by `\0` (the helper
 * thread's message), into `out` at positions `0…count-1`. Each path is cut from the text as it is
 * statted, so none outlives its lstat: split into an array first, a 25,000-path share lived through
 * the whole loop, was promoted, and kept the thread's heap some megabytes larger until a full collection.
 */
export function lstatJoinedInto(base: string, text: string, count: number, out: Float64Array): void {
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = text.indexOf('\0', start);
    const rel = end < 0 ? text.slice(start) : text.slice(start, end);
    start = end < 0 ? text.length : end + 1;
    statOneInto(base, rel, out, i * STAT_FIELDS);
  }
}
