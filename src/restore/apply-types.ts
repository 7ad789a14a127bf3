import type { Fingerprint } from '../core/model.js';
import type { DiskState } from '../fs/disk-state.js';
import type { FileSystem } from '../fs/file-system.js';
import type { PlanEntry, PlanReason } from './plan.js';

// The types the restore engine's parts share: what the caller gives an apply, and what flows
// between preflight, the transaction and the swaps.

/** What apply needs: the file system, the canonical project root, and verified object reads. */
export interface ApplyContext {
  fs: FileSystem;
  /** Absolute, canonical project root. */
  projectRoot: string;
  /** Returns an object's bytes; should throw `INTEGRITY` on a size or hash mismatch. */
  readObject(object: string): Promise<Buffer>;
  /**
   * Called for each entry after its guard passed and before its destination is touched, with
   * what the guard just read: the session layer saves that content (the pre-restore save) here,
   * so a file is read once for both. `'go'` swaps; `refuse` (the content moved again) and `leave`
   * (it cannot be saved) remove the entry's stage and report it. A throw fails the restore and
   * rolls back like any failed step.
   */
  beforeSwap?(entry: PlanEntry, sight: GuardSight): Promise<SwapDecision>;
}

/** What the guard read just before a swap. */
export interface GuardSight {
  state: DiskState;
  /** The content of a regular file of at most 256 KiB, read by the guard; absent for larger ones. */
  bytes?: Buffer;
}

/** The answer of {@link ApplyContext.beforeSwap}. */
export type SwapDecision = 'go' | { refuse: Fingerprint } | { leave: PlanReason };

/** A plan entry that writes: restore, recreate or delete. */
export type WritingEntry = PlanEntry & { action: 'restore' | 'recreate' | 'delete' };

/** A writing entry after preflight: its object bytes (when held) and the mode to write. */
export interface Prepared {
  entry: WritingEntry;
  /** Object bytes held from preflight; `undefined` for symlinks, deletes, and past the memory budget. */
  bytes?: Buffer;
  mode: number;
  /** Set when the entry cannot be written (its stored copy is missing or damaged): it is left, with this reason. */
  left?: PlanReason;
}

/**
 * Files up to this size are staged with synchronous calls: a thread-pool round trip costs about
 * 80 µs on a busy machine, a synchronous call a few, and a restore of many small files is a long
 * run of such calls. Bounded so one call never blocks the event loop for long.
 */
export const SYNC_WRITE_MAX_BYTES: number = 256 * 1024;

/** True when an entry writes a file too large for the synchronous path (staged only when its turn comes). */
export function isLarge(item: Prepared): boolean {
  return item.entry.action !== 'delete' && item.entry.target.type === 'file' && item.entry.target.size > SYNC_WRITE_MAX_BYTES;
}

/** The guard found something else than the plan expected: the entry is refused. */
export class Refused {
  constructor(readonly found: string) {}
}

/** The entry cannot be done safely (it cannot be saved first): it is left, with the reason. */
export class Left {
  constructor(readonly reason: PlanReason) {}
}

/** Throws the signal's reason (an `AbortError` when it gave none) once it is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted !== true) return;
  const reason: unknown = signal.reason;
  if (reason instanceof Error) throw reason;
  throw new DOMException(reason === undefined ? 'restore aborted' : String(reason), 'AbortError');
}
