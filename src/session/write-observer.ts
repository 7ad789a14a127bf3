import type { Unavailable } from './unavailable.js';

/** What a write tool is about to do to a path. */
export interface WriteOp {
  /** The kind of mutation. */
  kind: 'write' | 'edit' | 'delete' | 'move' | 'patch';
  /** The tool call making it, for attribution. */
  callId?: string;
}

/**
 * The seam write tools call around every mutation. `path` is absolute, or relative to the project
 * root. `beforeWrite` must resolve before the tool touches the file; `afterWrite` after it is done.
 * Tools ignore the resolved value: a working observer resolves to `undefined`, the stand-in of a
 * workspace without checkpoints to an {@link Unavailable} (and the write goes ahead either way).
 */
export interface WriteObserver {
  /** Called before the tool changes `path`; captures its pre-image. */
  beforeWrite(path: string, op?: WriteOp): Promise<void | Unavailable>;
  /** Called after the tool changed `path`; records what it now holds, for the restore guard. */
  afterWrite(path: string, op?: WriteOp): Promise<void | Unavailable>;
}
