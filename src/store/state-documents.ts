import writeFileAtomic from 'write-file-atomic';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import { decodeDocument, encodeDocumentAsync } from './document-codec.js';
import { readdirOnThread, statOnThread, writeAllSync, type FileSystem } from '../fs/file-system.js';
import { readSmallRegularFileSync } from '../fs/regular-file.js';
import { FILE_MODE, type StoreLayout } from './layout.js';
import { PRESENCE_PREFIX } from './presence.js';

/** How {@link StateDocumentFolder.writeState} writes a document. */
export interface StateWriteOptions {
  /**
   * fsync the document (write-file-atomic). `false`: temp file and rename only, for documents
   * whose loss after a power cut costs speed, never correctness. @default true
   */
  durable?: boolean;
}

const STATE_NAME = /^[a-z0-9_-][a-z0-9._-]{0,127}$/;

/**
 * Largest document read on the calling thread where the file system has a sync path. A served
 * hook event reads a few small documents (the open calls' baselines, the overlap log), and each
 * promise-API read is four round trips through libuv's pool (open, fstat, read, close); a
 * bigger document (a stat cache, a picture base's chunk) still goes through the pool, so the
 * thread never stalls on one.
 */
export const SYNC_READ_BYTES: number = 64 * 1024;

/**
 * State documents (`made-folders-<save id>`) naming the folders a restore made, so the restore of
 * its save (a redo) removes them once emptied without asking the clock which came first. Here,
 * below both: session/ writes and reads them, and prune (leftovers.ts) removes them with their save.
 */
export const MADE_FOLDERS_PREFIX = 'made-folders-';

/**
 * The store's small JSON documents under `state/` (the stat cache, picture bases, call baselines,
 * restore discards): read, list, write atomically, delete.
 */
export class StateDocumentFolder {
  constructor(
    private readonly fs: FileSystem,
    private readonly layout: StoreLayout,
  ) {}

  /**
   * Reads a small JSON document from `state/<name>.json`; `undefined` when absent.
   * @throws CheckpointError `INVALID_ARGUMENT` (bad name), `CORRUPT_MANIFEST` (does not parse).
   */
  async readState(name: string): Promise<unknown> {
    const file = this.layout.statePath(checkStateName(name));
    let bytes: Buffer | undefined;
    try {
      const sync = this.fs.sync;
      bytes = sync !== undefined ? readSmallRegularFileSync(sync, file, SYNC_READ_BYTES) : undefined;
      bytes ??= await this.fs.readFile(file);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw asCheckpointError(error, 'cannot read state', file);
    }
    try {
      return JSON.parse(await decodeDocument(bytes)) as unknown;
    } catch (error) {
      throw new CheckpointError('CORRUPT_MANIFEST', `state ${name} does not parse`, { path: file, cause: error });
    }
  }

  /**
   * What identifies `state/<name>.json` as it is now — its path, device, inode, size and mtime —
   * or `undefined` when it is absent or cannot be looked at. Documents are written by rename, so
   * an unchanged identity is an unchanged document (what a reader may cache by).
   */
  async stateIdentity(name: string): Promise<string | undefined> {
    const file = this.layout.statePath(checkStateName(name));
    try {
      const stats = await statOnThread(this.fs, file);
      return `${file}\0${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
    } catch {
      return undefined;
    }
  }

  /**
   * Names of the state documents (without `.json`), sorted, optionally only those starting with `prefix`.
   * @throws CheckpointError `IO`.
   */
  async listState(prefix = ''): Promise<string[]> {
    let names: string[];
    try {
      names = await readdirOnThread(this.fs, this.layout.stateDir);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return [];
      throw asCheckpointError(error, 'cannot list state', this.layout.stateDir);
    }
    return names
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -'.json'.length))
      // Presence files (store/presence.ts) live beside the documents but are not documents.
      .filter((n) => STATE_NAME.test(n) && n.startsWith(prefix) && !n.startsWith(PRESENCE_PREFIX))
      .sort();
  }

  /**
   * Writes `state/<name>.json` atomically (temp file, then rename), fsynced unless
   * `durable: false`: a document that only speeds things up (the stat cache) or that refers to
   * unsynced captures anyway (a call baseline) survives a process crash without it, and after a
   * power loss its readers treat it as torn or absent (see the durability table).
   * @throws CheckpointError `INVALID_ARGUMENT`, `IO`.
   */
  async writeState(name: string, value: unknown, options: StateWriteOptions = {}): Promise<void> {
    const file = this.layout.statePath(checkStateName(name));
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      throw new CheckpointError('INVALID_ARGUMENT', `state ${name} is not JSON-serialisable`, { cause: error });
    }
    if (text === undefined) throw new CheckpointError('INVALID_ARGUMENT', `state ${name} is not JSON-serialisable`);
    await loadHasher();
    const bytes = await encodeDocumentAsync(`${text}\n`);
    try {
      if (options.durable === false) await this.replaceQuickly(file, bytes);
      else await writeFileAtomic(file, bytes, { mode: FILE_MODE, fsync: true });
    } catch (error) {
      throw asCheckpointError(error, 'cannot write state', file);
    }
  }

  /**
   * Temp file in `tmp/` (prune removes a dead writer's), then rename over `file`; on the calling
   * thread when the file system has a sync path. A third of write-file-atomic's cost without its
   * fsync, which matters for the two documents a call pair writes.
   */
  private async replaceQuickly(file: string, bytes: Buffer): Promise<void> {
    const temp = this.layout.tempPath();
    const sync = this.fs.sync;
    try {
      if (sync !== undefined) {
        const fd = sync.openSync(temp, 'wx', FILE_MODE);
        try {
          writeAllSync(fd, bytes, sync.writeSync);
        } finally {
          sync.closeSync(fd);
        }
        sync.renameSync(temp, file);
      } else {
        await this.fs.writeFile(temp, bytes, { flag: 'wx', mode: FILE_MODE });
        await this.fs.rename(temp, file);
      }
    } catch (error) {
      await this.fs.unlink(temp).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Removes `state/<name>.json`; absent is fine. Not fsynced: after a power loss the document may
   * come back, which its readers must tolerate (a stale call baseline reads as an interrupted call).
   * @throws CheckpointError `INVALID_ARGUMENT`, `IO`.
   */
  async deleteState(name: string): Promise<void> {
    const file = this.layout.statePath(checkStateName(name));
    try {
      await this.fs.unlink(file);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove state', file);
    }
  }
}

function checkStateName(name: unknown): string {
  if (typeof name !== 'string' || !STATE_NAME.test(name) || name.includes('..')) {
    throw new CheckpointError('INVALID_ARGUMENT', `invalid state name ${JSON.stringify(name)}`);
  }
  return name;
}

