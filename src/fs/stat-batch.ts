import { existsSync, lstatSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The layout of a stat batch, shared by the JavaScript loop, the helper thread and the native
// accelerator (native/lstat_batch.c defines the same numbers).

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
 * The optional native accelerator (`native/lstat_batch.c`, built by `npm install` when a C
 * compiler is there): many `lstat` calls for one call from JavaScript, writing the same numbers
 * per path as the JavaScript loop of `lstatInto` (parallel-lstat.ts). Without it every result is the same, only
 * slower.
 */
export interface NativeLstat {
  /** Where the addon was loaded from (the helper thread loads the same file). */
  readonly file: string;
  /**
   * `lstat` of `base/rel` for each of the `count` NUL-separated paths in `joined` (`''` is `base`
   * itself), into `out` at five numbers a path: kind, permission bits, size, mtimeMs, inode.
   */
  lstatJoined(base: string, joined: string, count: number, out: Float64Array): void;
}

/** Environment variable that turns the accelerator off when set to `0`. */
export const NATIVE_ENV = 'TURNBACK_NATIVE';

/** The addon's file name under the package's `build/Release/` folder. */
export const NATIVE_FILE_NAME = 'turnback_lstat.node';

let loaded: NativeLstat | undefined | null = null;

/**
 * The accelerator (loaded once per thread), or `undefined` when it is not built, does not load,
 * answers wrongly for a known file, or `TURNBACK_NATIVE=0` turns it off.
 */
export function nativeLstat(): NativeLstat | undefined {
  if (process.env[NATIVE_ENV] === '0') return undefined;
  if (loaded === null) loaded = loadNativeLstat(nativeLstatFile());
  return loaded;
}

/**
 * The addon's path in this package (the folder above `src/` or `dist/` that holds a
 * `package.json`), whether it exists or not; `undefined` when no package folder is found.
 */
export function nativeLstatFile(): string | undefined {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    if (existsSync(join(folder, 'package.json'))) return join(folder, 'build', 'Release', NATIVE_FILE_NAME);
    const parent = dirname(folder);
    if (parent === folder) break;
    folder = parent;
  }
  return undefined;
}

/**
 * Loads the addon at `file` and checks it against `lstatSync` on the file itself, so a build that
 * disagrees with Node (another ABI, another stat layout) is never used. `undefined` when it is
 * missing or fails that check.
 */
export function loadNativeLstat(file: string | undefined): NativeLstat | undefined {
  if (file === undefined || !existsSync(file)) return undefined;
  try {
    const module = { exports: {} as { lstatJoined?: unknown } };
    process.dlopen(module, file);
    const lstatJoined = module.exports.lstatJoined;
    if (typeof lstatJoined !== 'function') return undefined;
    const candidate: NativeLstat = { file, lstatJoined: lstatJoined as NativeLstat['lstatJoined'] };
    return agreesWithNode(candidate, file) ? candidate : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when `candidate` gives `lstatSync`'s numbers for `probe` (an existing regular file) and
 * "missing" for a name beside it that does not exist.
 */
export function agreesWithNode(candidate: NativeLstat, probe: string): boolean {
  const out = new Float64Array(2 * STAT_FIELDS);
  candidate.lstatJoined(dirname(probe), `${basename(probe)}\0${basename(probe)}.turnback-missing`, 2, out);
  const stats = lstatSync(probe);
  const expected = [KIND_FILE, stats.mode & 0o7777, stats.size, stats.mtimeMs, stats.ino, KIND_MISSING, 0, 0, 0, 0];
  return expected.every((value, i) => out[i] === value);
}

/** Whether pictures use the native accelerator, and if not, why (for `turnback status`). */
export interface StatAccelerator {
  /** True when the addon is loaded and passed its check. */
  native: boolean;
  /** The addon's path, when loaded. */
  file?: string;
  /** Why not, when not. */
  why?: string;
}

/** Reports whether this process's pictures `lstat` through the native addon, and why not. */
export function statAccelerator(): StatAccelerator {
  if (process.env[NATIVE_ENV] === '0') return { native: false, why: `${NATIVE_ENV}=0` };
  const native = nativeLstat();
  if (native !== undefined) return { native: true, file: native.file };
  const file = nativeLstatFile();
  if (file === undefined || !existsSync(file)) return { native: false, why: 'the native addon is not built (npm rebuild turnback builds it; it needs a C compiler)' };
  return { native: false, why: `the native addon at ${file} did not load or disagreed with lstat` };
}
