/**
 * Every error turnback throws is a {@link CheckpointError} with one of these codes.
 *
 * - `INVALID_PATH`: empty, non-string, NUL byte, `..` escape, or a path through a symlinked folder.
 * - `OUTSIDE_ROOT`: the path resolves outside the project root.
 * - `INVALID_ID`: a string that is not a well-formed CheckpointId.
 * - `UNKNOWN_CHECKPOINT`: a well-formed id the store does not hold (never taken, or pruned).
 * - `FOREIGN_WORKSPACE`: a manifest or store that belongs to another project root.
 * - `CORRUPT_MANIFEST`: a manifest or journal that does not parse or fails its schema.
 * - `INTEGRITY`: an object whose size or hash differs from its key.
 * - `STORE_BUSY`: another process holds the store lock longer than we may wait, or a process of
 *   an older turnback has a store open that this one would upgrade.
 * - `STORE_UNAVAILABLE`: the store cannot be opened (unwritable, a symlink, not a folder).
 * - `INVALID_CONFIG`: a config value of the wrong type or out of range.
 * - `INVALID_ARGUMENT`: any other caller input that fails validation.
 * - `UNAVAILABLE`: the workspace cannot take checkpoints (home folder, `/`, not a folder).
 * - `CONFLICT`: a restore precondition no longer holds (a file changed after the plan).
 * - `UNKNOWN_CALL`: `callEnd` of a call id that no `callBegin` recorded (or whose baseline is gone).
 * - `CLOSED`: a method of an observer after its `close()`.
 * - `INTERNAL`: a state the code believed impossible (a bug in turnback, never the caller's input).
 * - `IO`: an unexpected operating-system failure; `cause` carries the original.
 * - `REMOTE_UNAVAILABLE`: a remote store could not be reached or answered with a passing failure
 *   (unreachable endpoint, lost network, throttled, a server error): try again later. `found`
 *   says which: `unreachable`, `throttled`, `server-error`, `timeout`.
 * - `REMOTE_REFUSED`: a remote store will not do this as configured, and trying again will not
 *   help: `found` says why: `denied` (credentials), `no-bucket`, `no-conditional-writes`,
 *   `bad-request`.
 */
export type CheckpointErrorCode =
  | 'INVALID_PATH'
  | 'OUTSIDE_ROOT'
  | 'INVALID_ID'
  | 'UNKNOWN_CHECKPOINT'
  | 'FOREIGN_WORKSPACE'
  | 'CORRUPT_MANIFEST'
  | 'INTEGRITY'
  | 'STORE_BUSY'
  | 'STORE_UNAVAILABLE'
  | 'INVALID_CONFIG'
  | 'INVALID_ARGUMENT'
  | 'UNAVAILABLE'
  | 'CONFLICT'
  | 'UNKNOWN_CALL'
  | 'CLOSED'
  | 'INTERNAL'
  | 'IO'
  | 'REMOTE_UNAVAILABLE'
  | 'REMOTE_REFUSED';

/** Evidence attached to a {@link CheckpointError}. All fields are optional. */
export interface CheckpointErrorDetails {
  /** The project-relative (or raw, when invalid) path the error is about. */
  path?: string;
  /** What was expected (a hash, a size, a workspace). */
  expected?: string;
  /** What was found instead. */
  found?: string;
  /** The underlying error. */
  cause?: unknown;
}

/**
 * Marks every CheckpointError, whichever copy of this module made it: the command is one bundle
 * and the `turnback/mcp` entry it loads is another, so `instanceof` alone misses the observer's
 * errors there (the MCP answers then said "ERROR" instead of the code).
 */
const BRAND = Symbol.for('turnback.CheckpointError');

/**
 * The one error class of turnback. Switch on {@link CheckpointError.code}; never parse messages.
 *
 * @example
 * try { await observer.restore(id) } catch (e) { if (isCheckpointError(e, 'INVALID_ID')) ... }
 */
export class CheckpointError extends Error {
  /** The typed reason. */
  readonly code: CheckpointErrorCode;
  /** The path involved, when there is one. */
  readonly path: string | undefined;
  /** The expected value (hash, size, workspace), when relevant. */
  readonly expected: string | undefined;
  /** The value found instead, when relevant. */
  readonly found: string | undefined;

  constructor(code: CheckpointErrorCode, message: string, details: CheckpointErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'CheckpointError';
    this.code = code;
    this.path = details.path;
    this.expected = details.expected;
    this.found = details.found;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True when `value` is a {@link CheckpointError}, optionally of one code.
 *
 * @example isCheckpointError(err, 'STORE_BUSY')
 */
export function isCheckpointError(value: unknown, code?: CheckpointErrorCode): value is CheckpointError {
  const ours = value instanceof CheckpointError || (typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true && value instanceof Error);
  return ours && (code === undefined || (value as CheckpointError).code === code);
}

/** Wraps an unknown thrown value as an `IO` CheckpointError unless it already is one. */
export function asCheckpointError(error: unknown, message: string, path?: string): CheckpointError {
  if (error instanceof CheckpointError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new CheckpointError('IO', `${message}: ${reason}`, { path, cause: error });
}

/** Exhaustiveness helper for `switch` statements over unions. */
export function assertNever(value: never): never {
  throw new CheckpointError('INTERNAL', `unexpected value: ${JSON.stringify(value)}`);
}

/** The errno code of a Node.js system error, if any. */
export function errnoCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}
