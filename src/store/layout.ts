import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import { TEMP_PREFIX, writeAllSync, type FileSystem, type SyncFileSystem } from '../fs/file-system.js';

/** Format tag written into `STORE.json`. */
export const STORE_FORMAT = 'turnback-store';
/**
 * Current on-disk layout version. 2 added `objects/packs/` (small objects as pack records); 3
 * added block records (a picture's small files compressed together, brotli), brotli large
 * objects, compressed state documents and version-2 pack indexes. An older store is upgraded in
 * place on open (only this number changes: its loose objects, records and JSON documents stay
 * readable), and each bump makes an older turnback, which cannot read what the new one writes,
 * refuse the store instead of reporting objects as missing. A store with a higher version is
 * refused, never rewritten.
 */
export const STORE_VERSION = 3;
/** Layout versions this code reads (older ones are upgraded on open). */
const READABLE_VERSIONS: readonly number[] = [1, 2, 3];
/** Mode of every folder the store creates: only the owner may read the pre-images. */
export const DIR_MODE = 0o700;
/** Mode of every file the store creates. */
export const FILE_MODE = 0o600;
/**
 * Anything a concurrent writer may still be about to reference (fresh objects, temp files,
 * leftovers) is left alone by prune for this long.
 * @default 10 minutes
 */
export const GRACE_MS: number = 10 * 60 * 1000;

/** Contents of `STORE.json`. */
export interface StoreInfo {
  format: typeof STORE_FORMAT;
  version: typeof STORE_VERSION;
  /** Canonical (realpath) project root this store belongs to. */
  projectRoot: string;
}

/**
 * Every path of the versioned store layout. Only this module knows where things live, so an
 * alternative backend can replace the file layout without touching callers.
 */
export class StoreLayout {
  /** Canonical store root. */
  readonly root: string;
  /** `STORE.json` */
  readonly infoFile: string;
  /** `objects/v1` (loose objects) */
  readonly objectsDir: string;
  /** `objects/packs` (pack files and their indexes) */
  readonly packsDir: string;
  /** `checkpoints` */
  readonly checkpointsDir: string;
  /** `state` */
  readonly stateDir: string;
  /** `tmp` */
  readonly tmpDir: string;
  /** `store.lock` */
  readonly lockFile: string;
  private tempCounter = 0;
  private readonly tempTag: string = `${process.pid}-${randomBytes(4).toString('hex')}`;

  constructor(root: string) {
    this.root = root;
    this.infoFile = path.join(root, 'STORE.json');
    this.objectsDir = path.join(root, 'objects', 'v1');
    this.packsDir = path.join(root, 'objects', 'packs');
    this.checkpointsDir = path.join(root, 'checkpoints');
    this.stateDir = path.join(root, 'state');
    this.tmpDir = path.join(root, 'tmp');
    this.lockFile = path.join(root, 'store.lock');
  }

  /** Fan-out folder of an object key (first two hex digits). */
  objectDir(key: string): string {
    return path.join(this.objectsDir, key.slice(0, 2));
  }

  /** Absolute path of an object. */
  objectPath(key: string): string {
    return path.join(this.objectsDir, key.slice(0, 2), key);
  }

  /** Sealed manifest path. */
  manifestPath(id: CheckpointId): string {
    return path.join(this.checkpointsDir, `${id}.json`);
  }

  /** Open checkpoint journal path. */
  journalPath(id: CheckpointId): string {
    return path.join(this.checkpointsDir, `${id}.journal`);
  }

  /** Path of a state document; `name` must already be validated. */
  statePath(name: string): string {
    return path.join(this.stateDir, `${name}.json`);
  }

  /**
   * A fresh temp file path in `tmp/`. The name carries the writer's pid so prune can tell a
   * crashed writer's leftovers from a live writer's work in progress.
   */
  tempPath(): string {
    this.tempCounter += 1;
    return path.join(this.tmpDir, `${TEMP_PREFIX}${this.tempTag}-${this.tempCounter}`);
  }
}

/** The pid encoded in a temp file name made by {@link StoreLayout.tempPath}, if any. */
export function tempNamePid(name: string): number | undefined {
  if (!name.startsWith(TEMP_PREFIX)) return undefined;
  const pid = Number(name.slice(TEMP_PREFIX.length).split('-')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** This machine's host name, recorded in locks and journal headers. */
export const HOSTNAME: string = hostname();

/**
 * Canonicalises a path that may not exist yet: realpath of the nearest existing ancestor plus
 * the missing tail. Lets `open` refuse a root inside `.git` before creating anything.
 */
export async function canonicalizeMaybeMissing(fs: FileSystem, target: string): Promise<string> {
  const tail: string[] = [];
  let current = path.resolve(target);
  for (;;) {
    try {
      const real = await fs.realpath(current);
      return path.join(real, ...tail.reverse());
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw error;
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(target);
      tail.push(path.basename(current));
      current = parent;
    }
  }
}

/** True when `inner` equals `outer` or lies below it (both absolute, canonical). */
export function isInside(outer: string, inner: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The names a store root holds. */
const LAYOUT_NAMES: ReadonlySet<string> = new Set(['STORE.json', 'objects', 'checkpoints', 'state', 'tmp', 'store.lock']);

/**
 * Every folder of the layout must be a real folder: a symlink among them would lead the store's
 * writes (and prune's deletes) elsewhere.
 *
 * @throws CheckpointError `STORE_UNAVAILABLE` naming the first that is not.
 */
async function refuseLinkedFolders(fs: FileSystem, layout: StoreLayout): Promise<void> {
  for (const dir of [path.dirname(layout.objectsDir), layout.objectsDir, layout.packsDir, layout.checkpointsDir, layout.stateDir, layout.tmpDir]) {
    const stats = await fs.lstat(dir);
    if (!stats.isDirectory()) {
      throw new CheckpointError('STORE_UNAVAILABLE', `store folder ${path.relative(layout.root, dir)} is ${stats.isSymbolicLink() ? 'a symlink' : 'not a folder'}: ${dir}`, { path: dir });
    }
  }
}

/** Creates a folder (and parents) with {@link DIR_MODE}, then chmods it in case umask interfered. */
export async function ensureDir(fs: FileSystem, dir: string): Promise<void> {
  const created = await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
  if (created !== undefined) await fs.chmod(dir, DIR_MODE);
}

/**
 * Creates `target` holding `data` atomically and without overwriting: temp file, `link`, unlink.
 * Returns false when `target` already exists (the temp file is removed either way).
 */
export async function createExclusive(fs: FileSystem, layout: StoreLayout, target: string, data: Uint8Array | string): Promise<boolean> {
  const temp = layout.tempPath();
  const sync = fs.sync;
  // A lock or a journal header is a few hundred bytes: five synchronous calls cost less than one
  // thread-pool round trip each (a restore takes the lock and opens a journal on its way).
  if (sync !== undefined) {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    return createExclusiveSync(sync, temp, target, (fd) => writeAllSync(fd, bytes, sync.writeSync));
  }
  await fs.writeFile(temp, data, { flag: 'wx', mode: FILE_MODE });
  try {
    await fs.link(temp, target);
    return true;
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return false;
    throw error;
  } finally {
    await fs.unlink(temp).catch(() => undefined);
  }
}

/**
 * Creates `target` whole and without overwriting, with synchronous calls: `temp` is created
 * (exclusive) and filled by `write`, linked to `target`, then removed. Returns false when
 * `target` already exists.
 */
export function createExclusiveSync(sync: Pick<SyncFileSystem, 'openSync' | 'closeSync' | 'linkSync' | 'unlinkSync'>, temp: string, target: string, write: (fd: number) => void): boolean {
  const fd = sync.openSync(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, FILE_MODE);
  try {
    try {
      write(fd);
    } finally {
      sync.closeSync(fd);
    }
    try {
      sync.linkSync(temp, target);
      return true;
    } catch (error) {
      if (errnoCode(error) === 'EEXIST') return false;
      throw error;
    }
  } finally {
    try {
      sync.unlinkSync(temp);
    } catch {
      // Already gone: nothing to remove (a store's leftover sweep takes what a crash leaves).
    }
  }
}

/** Options for {@link openLayout}. */
export interface OpenLayoutOptions {
  fs: FileSystem;
  /** Canonical project root. */
  projectRoot: string;
  /**
   * Called before an older layout is upgraded: throws to leave the store as it is (another
   * process of the older code still has it open).
   */
  beforeUpgrade?: (layout: StoreLayout, from: number) => Promise<void>;
}

/**
 * Opens (creating when needed) the store layout at `root`.
 *
 * @throws CheckpointError `STORE_UNAVAILABLE` when the root is a symlink, not a folder, inside the
 *   project's `.git`, unwritable, or of an unknown format; `FOREIGN_WORKSPACE` when `STORE.json`
 *   names another project.
 */
export async function openLayout(root: string, options: OpenLayoutOptions): Promise<StoreLayout> {
  const { fs, projectRoot } = options;
  const absolute = path.resolve(root);
  const canonical = await canonicalizeMaybeMissing(fs, absolute).catch((error: unknown) => {
    throw new CheckpointError('STORE_UNAVAILABLE', `cannot resolve store root ${absolute}`, { path: absolute, cause: error });
  });
  if (isInside(path.join(projectRoot, '.git'), canonical)) {
    throw new CheckpointError('STORE_UNAVAILABLE', `the store must not live inside the project's .git: ${absolute}`, { path: absolute });
  }
  if (isInside(projectRoot, canonical)) {
    // Its files would be pictured and restored as project files, and a restore could write into it.
    throw new CheckpointError('STORE_UNAVAILABLE', `the store must not live inside the project: ${absolute} (choose a folder outside ${projectRoot})`, { path: absolute });
  }
  let existed = false;
  try {
    const stats = await fs.lstat(absolute);
    if (stats.isSymbolicLink()) {
      throw new CheckpointError('STORE_UNAVAILABLE', `store root is a symlink: ${absolute}`, { path: absolute });
    }
    if (!stats.isDirectory()) {
      throw new CheckpointError('STORE_UNAVAILABLE', `store root is not a folder: ${absolute}`, { path: absolute });
    }
    existed = true;
    if ((stats.mode & 0o022) !== 0) {
      // Someone else could swap the store's files (or links) under us: never use, never chmod it.
      throw new CheckpointError('STORE_UNAVAILABLE', `store folder is writable by other users (mode ${(stats.mode & 0o7777).toString(8)}): ${absolute}; choose a private folder`, { path: absolute });
    }
  } catch (error) {
    if (error instanceof CheckpointError) throw error;
    if (errnoCode(error) !== 'ENOENT') {
      throw new CheckpointError('STORE_UNAVAILABLE', `cannot inspect store root ${absolute}`, { path: absolute, cause: error });
    }
  }
  if (existed) {
    let names: string[];
    try {
      names = await fs.readdir(canonical);
    } catch (error) {
      throw new CheckpointError('STORE_UNAVAILABLE', `cannot list store root ${absolute}`, { path: absolute, cause: error });
    }
    // A store another process is creating right now holds only the layout's own names so far.
    if (!names.includes('STORE.json') && names.some((name) => !LAYOUT_NAMES.has(name))) {
      // An existing folder that is not a store (a shared /tmp, the user's documents): never turned into one.
      throw new CheckpointError('STORE_UNAVAILABLE', `${absolute} is not a turnback store and not empty; choose an empty folder or a new path`, { path: absolute });
    }
  }
  try {
    if (!existed) {
      // Only a folder turnback creates gets its mode set.
      await fs.mkdir(canonical, { recursive: true, mode: DIR_MODE });
      await fs.chmod(canonical, DIR_MODE);
    }
    const layout = new StoreLayout(canonical);
    await ensureDir(fs, layout.tmpDir);
    await readOrCreateInfo(fs, layout, projectRoot, options.beforeUpgrade);
    for (const dir of [layout.objectsDir, layout.packsDir, layout.checkpointsDir, layout.stateDir]) await ensureDir(fs, dir);
    await refuseLinkedFolders(fs, layout);
    return layout;
  } catch (error) {
    if (error instanceof CheckpointError) throw error;
    throw new CheckpointError('STORE_UNAVAILABLE', `cannot open store at ${absolute}: ${asCheckpointError(error, 'io').message}`, {
      path: absolute,
      cause: error,
    });
  }
}

async function readOrCreateInfo(fs: FileSystem, layout: StoreLayout, projectRoot: string, beforeUpgrade?: OpenLayoutOptions['beforeUpgrade']): Promise<StoreInfo> {
  const fresh: StoreInfo = { format: STORE_FORMAT, version: STORE_VERSION, projectRoot };
  let text: string;
  try {
    text = await fs.readFile(layout.infoFile, 'utf8');
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
    // Two processes opening a new store race here; link-without-overwrite lets exactly one win.
    if (await createExclusive(fs, layout, layout.infoFile, `${JSON.stringify(fresh, null, 2)}\n`)) return fresh;
    text = await fs.readFile(layout.infoFile, 'utf8');
  }
  let info: unknown;
  try {
    info = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError('STORE_UNAVAILABLE', `STORE.json does not parse`, { path: layout.infoFile, cause: error });
  }
  const record = info as Partial<StoreInfo> | null;
  if (typeof record !== 'object' || record === null || record.format !== STORE_FORMAT || typeof record.projectRoot !== 'string') {
    throw new CheckpointError('STORE_UNAVAILABLE', `STORE.json is not a turnback store`, { path: layout.infoFile });
  }
  if (typeof record.version !== 'number' || !READABLE_VERSIONS.includes(record.version)) {
    throw new CheckpointError('STORE_UNAVAILABLE', `unsupported store version ${String(record.version)}`, {
      path: layout.infoFile,
      expected: String(STORE_VERSION),
      found: String(record.version),
    });
  }
  if (record.projectRoot !== projectRoot) {
    throw new CheckpointError('FOREIGN_WORKSPACE', `store belongs to another project`, {
      path: layout.infoFile,
      expected: projectRoot,
      found: record.projectRoot,
    });
  }
  if (record.version !== STORE_VERSION) {
    await beforeUpgrade?.(layout, record.version);
    // Upgrade: only the version changes (temp + rename, so STORE.json is never half-written).
    const temp = layout.tempPath();
    await fs.writeFile(temp, `${JSON.stringify(fresh, null, 2)}\n`, { flag: 'wx', mode: FILE_MODE });
    try {
      await fs.rename(temp, layout.infoFile);
    } catch (error) {
      await fs.unlink(temp).catch(() => undefined);
      throw error;
    }
  }
  return fresh;
}

/** Reads a small JSON file, or `undefined` when missing. */
export async function readJsonIfExists(fs: FileSystem, file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw asCheckpointError(error, 'cannot read', file);
  }
}
