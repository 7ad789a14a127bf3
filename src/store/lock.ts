import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import type { FileSystem } from '../fs/file-system.js';
import { isPidAlive } from '../core/pid.js';
import { HOSTNAME, createExclusive, type StoreLayout } from './layout.js';

/** A lock older than this is stale even when its process seems alive (pid reuse, hung writer). */
export const LOCK_STALE_MS: number = 10 * 60 * 1000;
/**
 * How long `withLock` waits for another process by default.
 * @default 10 seconds
 */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;

/** Contents of `store.lock`. */
export interface LockInfo {
  pid: number;
  hostname: string;
  createdAt: string;
  /** Random per-acquisition token: release removes the file only when it is still ours. */
  token?: string;
}

/** Options of {@link StoreLock.withLock}. */
export interface WithLockOptions {
  /** How long to wait for another process. @default the store's lockTimeoutMs */
  timeoutMs?: number;
}

/** Decides whether a lock file's contents describe a stale lock. Exported for tests. */
export function isLockStale(text: string, now: number = Date.now()): boolean {
  let info: Partial<LockInfo>;
  try {
    info = JSON.parse(text) as Partial<LockInfo>;
  } catch {
    // Lock files are created whole (temp + link), so an unparsable one is damage, not a writer mid-write.
    return true;
  }
  if (typeof info !== 'object' || info === null || typeof info.pid !== 'number' || typeof info.createdAt !== 'string') return true;
  const created = Date.parse(info.createdAt);
  if (Number.isNaN(created) || now - created > LOCK_STALE_MS) return true;
  return info.hostname === HOSTNAME && !isPidAlive(info.pid);
}

/**
 * The inter-process exclusive lock `store.lock`, reentrant within one store instance: a
 * `withLock` nested (in the async sense) inside another runs directly, while independent callers
 * in the same process queue behind each other.
 */
export class StoreLock {
  private readonly fs: FileSystem;
  private readonly layout: StoreLayout;
  private readonly defaultTimeoutMs: number;
  /**
   * Marks the async context that holds the lock; made for each hold and disabled when it ends.
   * Node 20 runs a hook on every promise of the process while any AsyncLocalStorage is enabled
   * (an `await` costs about 5 times as much), so a lock held once must not tax the agent's own
   * promises for the rest of the process; and a continuation that outlives the hold no longer
   * reads as holding it.
   */
  private context: AsyncLocalStorage<boolean> | undefined;
  private queue: Promise<void> = Promise.resolve();

  constructor(fs: FileSystem, layout: StoreLayout, defaultTimeoutMs: number) {
    this.fs = fs;
    this.layout = layout;
    this.defaultTimeoutMs = defaultTimeoutMs;
  }

  /** True when the current async context holds this lock. */
  get held(): boolean {
    return this.context?.getStore() === true;
  }

  /**
   * Runs `fn` while holding the store lock.
   *
   * @throws CheckpointError `STORE_BUSY` when another process holds it longer than `timeoutMs`.
   */
  async withLock<T>(fn: () => Promise<T> | T, options: WithLockOptions = {}): Promise<T> {
    if (this.held) return fn();
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new CheckpointError('INVALID_ARGUMENT', `timeoutMs must be a non-negative number`);
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await previous;
      const token = await this.acquire(timeoutMs);
      // Holds are queued one after another, so one context at a time.
      const context = new AsyncLocalStorage<boolean>();
      this.context = context;
      try {
        return await context.run(true, fn);
      } finally {
        context.disable();
        if (this.context === context) this.context = undefined;
        await this.releaseFile(token);
      }
    } finally {
      release();
    }
  }

  private async acquire(timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let delay = 2;
    for (;;) {
      const token = randomBytes(8).toString('hex');
      const info: LockInfo = { pid: process.pid, hostname: HOSTNAME, createdAt: new Date().toISOString(), token };
      try {
        if (await createExclusive(this.fs, this.layout, this.layout.lockFile, `${JSON.stringify(info)}\n`)) return token;
      } catch (error) {
        throw asCheckpointError(error, 'cannot create the store lock', this.layout.lockFile);
      }
      const current = await this.readLock();
      if (current === undefined) continue;
      if (isLockStale(current)) {
        await this.breakStale(current);
        continue;
      }
      if (Date.now() >= deadline) {
        let holder = 'unknown';
        try {
          holder = String((JSON.parse(current) as LockInfo).pid);
        } catch {
          // keep 'unknown'
        }
        throw new CheckpointError('STORE_BUSY', `the store is locked by process ${holder}`, { path: this.layout.lockFile, found: holder });
      }
      await sleep(Math.min(delay + Math.random() * delay, Math.max(1, deadline - Date.now())));
      delay = Math.min(delay * 2, 100);
    }
  }

  private async readLock(): Promise<string | undefined> {
    try {
      return await this.fs.readFile(this.layout.lockFile, 'utf8');
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw asCheckpointError(error, 'cannot read the store lock', this.layout.lockFile);
    }
  }

  /**
   * Breaks a stale lock by renaming it aside first: of two breakers only one rename succeeds.
   * If what was renamed is not the stale lock we judged (a third process re-took the lock in
   * between), it is put back without overwriting.
   */
  private async breakStale(staleText: string): Promise<void> {
    const aside = `${this.layout.lockFile}.stale-${randomBytes(6).toString('hex')}`;
    try {
      await this.fs.rename(this.layout.lockFile, aside);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return;
      throw asCheckpointError(error, 'cannot break a stale store lock', this.layout.lockFile);
    }
    try {
      const taken = await this.fs.readFile(aside, 'utf8');
      if (taken !== staleText && !isLockStale(taken)) {
        await this.fs.link(aside, this.layout.lockFile).catch(() => undefined);
      }
    } finally {
      await this.fs.unlink(aside).catch(() => undefined);
    }
  }

  private async releaseFile(token: string): Promise<void> {
    const current = await this.readLock().catch(() => undefined);
    if (current === undefined) return;
    try {
      if ((JSON.parse(current) as LockInfo).token !== token) return;
    } catch {
      return;
    }
    await this.fs.unlink(this.layout.lockFile).catch(() => undefined);
  }
}
