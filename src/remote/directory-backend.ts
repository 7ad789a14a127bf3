import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { asCheckpointError, CheckpointError, errnoCode } from '../core/errors.js';
import { checkKey, checkPrefix, type BackendCallOptions, type BackendCapabilities, type BackendEntry, type StoreBackend } from './backend.js';

// A store backend on a local folder: a key is a file path under the root. An atomic create is a
// hard link of a fully written temp file (two writers: one link succeeds, the other finds
// EEXIST), a replacing write is a rename — the same two moves the local store makes — so a
// reader sees a whole file or none. Temp files live in `.tmp/` under the root, which listings
// never show.

/** Where temp files wait before their link or rename. */
const TEMP_FOLDER = '.tmp';

/** Options of {@link DirectoryBackend.open}. */
export interface DirectoryBackendOptions {
  /** fsync each file and its folder before a write returns. @default false */
  durable?: boolean;
}

/** A {@link StoreBackend} on a local folder (created when missing). */
export class DirectoryBackend implements StoreBackend {
  readonly location: string;
  readonly capabilities: BackendCapabilities;

  private constructor(
    private readonly root: string,
    private readonly durable: boolean,
  ) {
    this.location = `file://${root}`;
    this.capabilities = { atomicCreate: true, durableWrites: durable };
  }

  /**
   * Opens (creating) the backend folder `root`.
   * @throws CheckpointError `STORE_UNAVAILABLE` when it cannot be made or is not a folder.
   */
  static async open(root: string, options: DirectoryBackendOptions = {}): Promise<DirectoryBackend> {
    const absolute = path.resolve(root);
    try {
      await fs.mkdir(path.join(absolute, TEMP_FOLDER), { recursive: true, mode: 0o700 });
      const stats = await fs.lstat(absolute);
      if (!stats.isDirectory()) throw new CheckpointError('STORE_UNAVAILABLE', `the backend folder is not a folder: ${absolute}`, { path: absolute });
    } catch (error) {
      if (error instanceof CheckpointError) throw error;
      throw new CheckpointError('STORE_UNAVAILABLE', `cannot open the backend folder ${absolute}: ${error instanceof Error ? error.message : String(error)}`, { path: absolute, cause: error });
    }
    return new DirectoryBackend(absolute, options.durable === true);
  }

  async create(key: string, bytes: Uint8Array, options: BackendCallOptions = {}): Promise<'created' | 'exists'> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    const temp = await this.#written(bytes);
    try {
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.link(temp, file);
      if (this.durable) await syncFolder(path.dirname(file));
      return 'created';
    } catch (error) {
      if (errnoCode(error) === 'EEXIST') return 'exists';
      throw asCheckpointError(error, 'cannot create in the backend folder', file);
    } finally {
      await fs.unlink(temp).catch(() => undefined);
    }
  }

  async put(key: string, bytes: Uint8Array, options: BackendCallOptions = {}): Promise<void> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    const temp = await this.#written(bytes);
    try {
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.rename(temp, file);
      if (this.durable) await syncFolder(path.dirname(file));
    } catch (error) {
      await fs.unlink(temp).catch(() => undefined);
      throw asCheckpointError(error, 'cannot write in the backend folder', file);
    }
  }

  async get(key: string, options: BackendCallOptions = {}): Promise<Buffer | undefined> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    try {
      return await fs.readFile(file);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return undefined;
      throw asCheckpointError(error, 'cannot read from the backend folder', file);
    }
  }

  async getStream(key: string, options: BackendCallOptions = {}): Promise<AsyncIterable<Uint8Array> | undefined> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, 'r');
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return undefined;
      throw asCheckpointError(error, 'cannot read from the backend folder', file);
    }
    return (async function* chunks() {
      try {
        for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20 })) yield chunk as Buffer;
      } catch (error) {
        throw asCheckpointError(error, 'cannot read from the backend folder', file);
      } finally {
        await handle.close().catch(() => undefined);
      }
    })();
  }

  async head(key: string, options: BackendCallOptions = {}): Promise<{ size: number } | undefined> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    try {
      const stats = await fs.lstat(file);
      return stats.isFile() ? { size: stats.size } : undefined;
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return undefined;
      throw asCheckpointError(error, 'cannot look in the backend folder', file);
    }
  }

  async *list(prefix: string, options: BackendCallOptions = {}): AsyncIterable<BackendEntry> {
    checkPrefix(prefix);
    options.signal?.throwIfAborted();
    // Only the folders the prefix can reach are walked: `objects/ab` walks `objects/`.
    const slash = prefix.lastIndexOf('/');
    const start = slash < 0 ? '' : prefix.slice(0, slash);
    const entries: BackendEntry[] = [];
    await this.#walk(start, prefix, entries, options.signal);
    // Byte order of the keys, as S3 lists them (keys are ASCII, so code units are bytes).
    entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* entries;
  }

  async touch(key: string, options: BackendCallOptions = {}): Promise<boolean> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    const now = new Date();
    try {
      await fs.utimes(file, now, now);
      return true;
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return false;
      throw asCheckpointError(error, 'cannot touch in the backend folder', file);
    }
  }

  async delete(key: string, options: BackendCallOptions = {}): Promise<void> {
    const file = this.#fileOf(key);
    options.signal?.throwIfAborted();
    try {
      await fs.unlink(file);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return;
      throw asCheckpointError(error, 'cannot remove from the backend folder', file);
    }
  }

  /** Nothing to let go of: every call opens and closes its own files. */
  close(): void {
    // No connection or handle outlives a call.
  }

  async #walk(folderKey: string, prefix: string, out: BackendEntry[], signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    const folder = folderKey === '' ? this.root : path.join(this.root, ...folderKey.split('/'));
    let names: import('node:fs').Dirent[];
    try {
      names = await fs.readdir(folder, { withFileTypes: true });
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return;
      throw asCheckpointError(error, 'cannot list the backend folder', folder);
    }
    for (const entry of names) {
      if (folderKey === '' && entry.name === TEMP_FOLDER) continue;
      const key = folderKey === '' ? entry.name : `${folderKey}/${entry.name}`;
      if (entry.isDirectory()) {
        // A folder is walked when a key under it can start with the prefix.
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) await this.#walk(key, prefix, out, signal);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        const stats = await fs.lstat(path.join(folder, entry.name)).catch(() => undefined);
        if (stats?.isFile() === true) out.push({ key, size: stats.size, modifiedAt: stats.mtimeMs });
      }
    }
  }

  /** A temp file holding `bytes` whole (fsynced when durable). */
  async #written(bytes: Uint8Array): Promise<string> {
    const temp = path.join(this.root, TEMP_FOLDER, `${process.pid}-${randomBytes(8).toString('hex')}`);
    const handle = await fs.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(bytes);
      if (this.durable) await handle.sync();
    } catch (error) {
      await handle.close().catch(() => undefined);
      await fs.unlink(temp).catch(() => undefined);
      throw asCheckpointError(error, 'cannot write in the backend folder', temp);
    }
    await handle.close();
    return temp;
  }

  #fileOf(key: string): string {
    return path.join(this.root, ...checkKey(key).split('/'));
  }
}

async function syncFolder(folder: string): Promise<void> {
  const handle = await fs.open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
