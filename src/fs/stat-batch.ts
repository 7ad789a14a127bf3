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
  for (let i = from; i < to; i++) {
    const at = i * STAT_FIELDS;
    const rel = rels[i] as string;
    const kind = lstatNumbers(rel === '' ? base : `${base}${sep}${rel}`, out, at);
    out[at] = kind === KIND_NOT_FOLDER_ON_PATH ? KIND_MISSING : kind;
  }
}
