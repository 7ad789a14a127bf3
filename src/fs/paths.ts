import { lstat, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import type { FileSystem, SyncFileSystem } from './file-system.js';

/**
 * Validates a caller-supplied path (absolute, or relative to `projectRoot`) and returns its
 * canonical project-relative form: `/`-separated, no `.` or `..` segments, never empty.
 * Pure: touches no file.
 *
 * @throws CheckpointError `INVALID_PATH` for non-strings, empty strings, NUL bytes, the root
 *   itself, or anything inside a `.git` folder; `OUTSIDE_ROOT` when it resolves outside the root.
 */
export function toProjectPath(projectRoot: string, input: unknown): string {
  if (typeof input !== 'string') {
    throw new CheckpointError('INVALID_PATH', `path must be a string, got ${input === null ? 'null' : typeof input}`);
  }
  if (input.length === 0) throw new CheckpointError('INVALID_PATH', 'path must not be empty');
  if (input.includes('\0')) throw new CheckpointError('INVALID_PATH', 'path contains a NUL byte', { path: input });
  const absolute = path.resolve(projectRoot, input);
  const relative = path.relative(projectRoot, absolute);
  if (relative === '') throw new CheckpointError('INVALID_PATH', 'path names the project root itself', { path: input });
  if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
    throw new CheckpointError('OUTSIDE_ROOT', `path is outside the project: ${input}`, { path: input });
  }
  const projectPath = relative.split(path.sep).join('/');
  assertNotGitInternal(projectPath, input);
  return projectPath;
}

/** Where a path an agent names really is (see {@link realPathOf}). */
export interface RealPath {
  /** Every symlink on the way resolved: where a write through the path lands. */
  real: string;
  /**
   * When the path's final component is itself a symlink: the link's own entry (its folder
   * resolved, its name kept), which a tool that replaces the file replaces.
   */
  link?: string;
}

/**
 * Resolves a path an agent sent (its `cwd`, a tool input's file) to where it really is, so a
 * project reached through a symlink — a symlinked workspace folder, macOS's `/tmp` →
 * `/private/tmp`, a home folder reached through a link — is recognised as the project: `input`
 * taken against `base` when relative, then every symlink resolved. A path whose final
 * components do not exist yet resolves through its nearest existing ancestor (a new file through
 * its real parent). Nothing is written, and no link is followed for writing: the result is only
 * compared with the canonical project root, and restores write below that root.
 *
 * @throws CheckpointError `INVALID_PATH` for a non-string, empty or NUL-bearing path, a name too
 *   long for the file system (`ENAMETOOLONG`), or a loop of links (`ELOOP`).
 */
export async function realPathOf(input: unknown, base: string): Promise<RealPath> {
  if (typeof input !== 'string' || input.length === 0) throw new CheckpointError('INVALID_PATH', 'a path must be a non-empty string');
  if (input.includes('\0')) throw new CheckpointError('INVALID_PATH', 'path contains a NUL byte', { path: input });
  const absolute = path.resolve(base, input);
  const real = await realOrNearest(absolute, input);
  let link: string | undefined;
  try {
    if ((await lstat(absolute)).isSymbolicLink()) link = path.join(await realOrNearest(path.dirname(absolute), input), path.basename(absolute));
  } catch {
    // Nothing there (or not readable): no link of its own to keep.
  }
  return link !== undefined && link !== real ? { real, link } : { real };
}

/** `realpath` of `absolute`, or of its nearest existing ancestor with the rest appended. */
async function realOrNearest(absolute: string, shown: string): Promise<string> {
  try {
    return await realpath(absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENAMETOOLONG') throw new CheckpointError('INVALID_PATH', `a name in the path is too long for the file system: ${shown.length > 120 ? `${shown.slice(0, 119)}…` : shown}`, { path: shown, cause: error });
    if (code === 'ELOOP') throw new CheckpointError('INVALID_PATH', `the path loops through symlinks: ${shown}`, { path: shown, cause: error });
    // Missing, under a file, or unreadable: resolved as far as it exists.
    const parent = path.dirname(absolute);
    if (parent === absolute) return absolute;
    return path.join(await realOrNearest(parent, shown), path.basename(absolute));
  }
}

/**
 * Validates a path read from a manifest: it must already be canonical. Manifests are data from
 * disk, so every restore re-checks them here, whatever produced them.
 *
 * @throws CheckpointError `INVALID_PATH`
 */
export function assertCanonicalProjectPath(projectPath: unknown): string {
  if (typeof projectPath !== 'string' || projectPath.length === 0 || projectPath.includes('\0')) {
    throw new CheckpointError('INVALID_PATH', `invalid recorded path: ${JSON.stringify(projectPath)}`);
  }
  const segments = projectPath.split('/');
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new CheckpointError('INVALID_PATH', `recorded path is not canonical: ${projectPath}`, { path: projectPath });
    }
  }
  if (projectPath.includes('\\') && path.sep === '\\') {
    throw new CheckpointError('INVALID_PATH', `recorded path is not canonical: ${projectPath}`, { path: projectPath });
  }
  assertNotGitInternal(projectPath, projectPath);
  return projectPath;
}

function assertNotGitInternal(projectPath: string, shown: string): void {
  if (projectPath.split('/').includes('.git')) {
    throw new CheckpointError('INVALID_PATH', `turnback never touches a .git folder: ${shown}`, { path: shown });
  }
}

/** Result of walking a path's ancestors without following links. */
export interface ResolvedPath {
  /** The absolute path (root + relative). */
  absolute: string;
  /** Project-relative ancestor folders that do not exist yet, outermost first. */
  missingDirs: string[];
  /**
   * The device and inode of the path's folder, when the walk inspected it (it exists and was not
   * taken from an {@link AncestorMemo}): a later `lstat` of the folder that finds the same inode
   * reaches the folder this walk verified.
   */
  folder?: { dev: number; ino: number };
}

/**
 * Resolves a canonical project path to an absolute one, checking every ancestor folder with
 * `lstat`: each must be a real folder (not a symlink, not a file) or missing. The final component
 * itself is not inspected (it may be a symlink, which callers handle without following).
 * Node.js has no `openat`, so a folder swapped for a link between this check and the write is a
 * documented race window; callers re-check just before each swap to narrow it.
 *
 * @throws CheckpointError `INVALID_PATH` when an ancestor is a symlink or not a folder.
 */
export async function resolveInsideRoot(fs: FileSystem, projectRoot: string, projectPath: string, seen?: AncestorMemo): Promise<ResolvedPath> {
  if (fs.sync !== undefined) return resolveInsideRootSync(fs.sync, projectRoot, projectPath, seen);
  const walk = new AncestorWalk(projectRoot, projectPath);
  for (let next = walk.next(); next !== undefined; next = walk.next()) {
    if (walk.recall(next, seen)) continue;
    try {
      walk.found(await fs.lstat(next));
      seen?.set(next, 'folder');
    } catch (error) {
      walk.failed(error);
      seen?.set(next, 'missing');
    }
  }
  return walk.result();
}

/** {@link resolveInsideRoot} with synchronous `lstat` calls (a few microseconds per ancestor). */
export function resolveInsideRootSync(fs: Pick<SyncFileSystem, 'lstatSync'>, projectRoot: string, projectPath: string, seen?: AncestorMemo): ResolvedPath {
  const walk = new AncestorWalk(projectRoot, projectPath);
  for (let next = walk.next(); next !== undefined; next = walk.next()) {
    if (walk.recall(next, seen)) continue;
    try {
      walk.found(fs.lstatSync(next));
      seen?.set(next, 'folder');
    } catch (error) {
      walk.failed(error);
      seen?.set(next, 'missing');
    }
  }
  return walk.result();
}

/**
 * What earlier walks of one pass found per absolute ancestor path: a real folder, or nothing
 * there. Only for a pass that writes nothing meanwhile (a restore's preflight checks every path
 * before the first write, and each write re-checks its own ancestors): a folder swapped for a
 * link after it was recorded here is not seen again by the same pass.
 */
export type AncestorMemo = Map<string, 'folder' | 'missing'>;

/** The ancestor checks of a resolve, independent of how `lstat` is called. */
class AncestorWalk {
  readonly #segments: string[];
  readonly #projectPath: string;
  readonly #projectRoot: string;
  readonly #missingDirs: string[] = [];
  #folder: { dev: number; ino: number } | undefined;
  #current: string;
  #index = -1;

  constructor(projectRoot: string, projectPath: string) {
    assertCanonicalProjectPath(projectPath);
    this.#projectPath = projectPath;
    this.#segments = projectPath.split('/');
    this.#projectRoot = projectRoot;
    this.#current = projectRoot;
  }

  /** The next ancestor to `lstat`, or `undefined` when none is left to inspect. */
  next(): string | undefined {
    for (;;) {
      this.#index += 1;
      if (this.#index >= this.#segments.length - 1) return undefined;
      this.#current = path.join(this.#current, this.#segments[this.#index] as string);
      // Below a missing folder everything is missing: no need to ask the file system.
      if (this.#missingDirs.length === 0) return this.#current;
      this.#missingDirs.push(this.#prefix());
    }
  }

  found(stats: { isSymbolicLink(): boolean; isDirectory(): boolean; dev: number | bigint; ino: number | bigint }): void {
    if (stats.isSymbolicLink()) {
      throw new CheckpointError('INVALID_PATH', `path walks through a symlinked folder: ${this.#prefix()}`, { path: this.#projectPath });
    }
    if (!stats.isDirectory()) throw new CheckpointError('INVALID_PATH', `not a folder: ${this.#prefix()}`, { path: this.#projectPath });
    if (this.#index === this.#segments.length - 2) this.#folder = { dev: Number(stats.dev), ino: Number(stats.ino) };
  }

  /** Takes the ancestor's kind from `seen` when an earlier walk recorded it; false when unknown. */
  recall(absolute: string, seen: AncestorMemo | undefined): boolean {
    const known = seen?.get(absolute);
    if (known === undefined) return false;
    if (known === 'missing') this.#missingDirs.push(this.#prefix());
    return true;
  }

  failed(error: unknown): void {
    if (error instanceof CheckpointError) throw error;
    if (errnoCode(error) === 'ENOENT') {
      this.#missingDirs.push(this.#prefix());
      return;
    }
    throw new CheckpointError('INVALID_PATH', `cannot inspect ${this.#prefix()}`, { path: this.#projectPath, cause: error });
  }

  result(): ResolvedPath {
    const absolute = path.join(this.#projectRoot, ...this.#segments);
    return this.#folder === undefined ? { absolute, missingDirs: this.#missingDirs } : { absolute, missingDirs: this.#missingDirs, folder: this.#folder };
  }

  #prefix(): string {
    return this.#segments.slice(0, this.#index + 1).join('/');
  }
}
