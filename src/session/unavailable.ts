import type { CheckpointObserver } from './observer.js';
import type { SnapshotScope } from './snapshots.js';
import type { WriteObserver } from './write-observer.js';

/**
 * Why checkpoints cannot be used in a workspace:
 * - `disabled`: `enabled` is not `true` in the config (the default);
 * - `no-project-root`: no project root was given;
 * - `not-a-directory`: the project root is missing or is not a folder;
 * - `home-folder`: the project is the user's home folder (a picture would cover far more than a project);
 * - `filesystem-root`: the project is `/` (or a drive root);
 * - `store-unavailable`: the store folder cannot be opened or created (unwritable, a symlink,
 *   inside the project's `.git`, another project's store, a newer format).
 */
export type UnavailableReason = 'disabled' | 'no-project-root' | 'not-a-directory' | 'home-folder' | 'filesystem-root' | 'store-unavailable';

/**
 * What every method of {@link UnavailableCheckpoints} resolves to: checkpoints are off here, and
 * why. Never an empty success: a caller that ignores it still cannot mistake it for "nothing
 * changed" or "restored nothing".
 */
export interface Unavailable {
  readonly available: false;
  readonly reason: UnavailableReason;
  /** One human sentence, e.g. "the project is your home folder". */
  readonly detail: string;
}

/** The public methods of {@link CheckpointObserver}; {@link UnavailableCheckpoints} must answer each one. */
type ObserverMethod = {
  [K in keyof CheckpointObserver]: CheckpointObserver[K] extends (...args: never[]) => unknown ? K : never;
}[keyof CheckpointObserver];

/**
 * The stand-in {@link openCheckpoints} returns where a workspace cannot take checkpoints. It has
 * every method of {@link CheckpointObserver}; each resolves to the same {@link Unavailable} value
 * and touches nothing — no file, no folder, no store — so an agent is never blocked:
 *
 * - `beforeWrite` / `afterWrite` resolve at once (it can be installed as a write tool's
 *   {@link WriteObserver}); arguments are not validated, since there is nothing to check them against.
 * - `withToolCall(scope, fn)` runs `fn` and returns its result (the one method whose value is
 *   the caller's own).
 *
 * Tell it apart from a working observer with {@link isUnavailable}.
 */
export class UnavailableCheckpoints implements WriteObserver, Unavailable, Record<Exclude<ObserverMethod, 'withToolCall'>, (...args: never[]) => Promise<Unavailable>> {
  /** Always false: checkpoints are off in this workspace. */
  readonly available: false = false;
  readonly reason: UnavailableReason;
  readonly detail: string;
  readonly #result: Unavailable;

  constructor(reason: UnavailableReason, detail: string) {
    this.reason = reason;
    this.detail = detail;
    this.#result = Object.freeze({ available: false, reason, detail });
  }

  /** The {@link Unavailable} value every method resolves to. */
  get result(): Unavailable {
    return this.#result;
  }

  /** No turn is opened. */
  beginTurn(_options?: { label?: string }): Promise<Unavailable> {
    return this.#answer();
  }

  /** Resolves at once; the write goes ahead uncaptured. */
  beforeWrite(_path: string, _op?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** Resolves at once. */
  afterWrite(_path: string, _op?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** There is no plan: nothing was recorded. */
  plan(_id: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing is restored (and nothing is written). */
  restore(_id: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing to seal. */
  close(): Promise<Unavailable> {
    return this.#answer();
  }

  /** No picture is taken; the call goes ahead. */
  callBegin(_callId: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** No open calls: nothing was pictured. */
  openCalls(): Promise<Unavailable> {
    return this.#answer();
  }

  /** No attribution: nothing was pictured before the call. */
  callEnd(_callId: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** No mark: nothing is pictured. */
  treeMark(_name: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** No change list: nothing was recorded. */
  turnChanges(_id: string): Promise<Unavailable> {
    return this.#answer();
  }

  /**
   * Runs `fn` and returns its result: the tool call is never blocked. Nothing is captured, and no
   * AsyncLocalStorage is created.
   */
  async withToolCall<T>(_scope: SnapshotScope, fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  /** Nothing is restored (and nothing is written). */
  restoreCall(_turn: string, _attribution: unknown, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** No savepoint is made (and nothing is read). */
  savepoint(_options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** There are no savepoints. */
  listSavepoints(): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing to compare. */
  diffSavepoint(_id: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing is restored (and nothing is written). */
  restoreSavepoint(_id: string, _options?: unknown): Promise<Unavailable> {
    return this.#answer();
  }

  /** No snapshot is taken. */
  snapshot(_request: SnapshotScope & { paths?: string[] }): Promise<Unavailable> {
    return this.#answer();
  }

  /** No snapshots: an unavailable value, not an empty list. */
  listSnapshots(_sessionId: string): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing is restored. */
  restoreSnapshot(_request: SnapshotScope & { paths?: string[] }): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing to drop. */
  dropSnapshot(_request: SnapshotScope): Promise<Unavailable> {
    return this.#answer();
  }

  /** Nothing to release. */
  drop(_sessionId: string): Promise<Unavailable> {
    return this.#answer();
  }

  #answer(): Promise<Unavailable> {
    return Promise.resolve(this.#result);
  }
}

/**
 * True for an {@link UnavailableCheckpoints} and for the {@link Unavailable} value its methods
 * resolve to; false for a working {@link CheckpointObserver} and for every result it returns
 * (a checkpoint id, a plan, a report, `undefined` from a write).
 *
 * @example
 * const checkpoints = await openCheckpoints(config, { projectRoot, sessionId });
 * if (isUnavailable(checkpoints)) log(`checkpoints off: ${checkpoints.detail}`);
 * const report = await checkpoints.restore(turnId);
 * if (isUnavailable(report)) tellUser(report.detail);
 */
export function isUnavailable<T>(value: T): value is Extract<T, Unavailable> {
  return typeof value === 'object' && value !== null && (value as { available?: unknown }).available === false;
}
