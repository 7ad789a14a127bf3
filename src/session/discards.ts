import { isCheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointStore } from '../store/store.js';
import { storeBehind, type StoreView } from '../store/view.js';
import { DISCARDS_STATE, discardHolding, parseDiscards, type Discard } from './timeline.js';

/** Options of {@link discardedCheckpoints}. */
export interface DiscardedOptions {
  /**
   * Also report each full discard's own boundary: the checkpoint a full undo went back to, whose
   * changes that undo took away (it stays restorable; restoring it changes nothing). @default false
   */
  boundaries?: boolean;
}

/**
 * The ranges earlier full restores discarded, as recorded in the store. An unreadable document
 * reads as none: plans then fold every checkpoint, which the guard keeps safe.
 */
export async function readDiscards(store: CheckpointStore): Promise<Discard[]> {
  try {
    return parseDiscards(await store.readState(DISCARDS_STATE));
  } catch (error) {
    if (isCheckpointError(error, 'CORRUPT_MANIFEST')) return [];
    throw error;
  }
}

/**
 * For each of `ids` that a full restore discarded (planning from it fails with `CONFLICT`), the
 * pre-restore checkpoint whose restore — a redo — brings it back. Lists use it to mark or hide
 * those checkpoints instead of offering a choice that cannot be taken. With `boundaries`, a full
 * discard's own `from` is reported too (its changes were undone).
 */
export async function discardedCheckpoints(view: StoreView, ids: readonly CheckpointId[], options: DiscardedOptions = {}): Promise<Map<CheckpointId, CheckpointId>> {
  const discards = await readDiscards(storeBehind(view));
  const held = new Map<CheckpointId, CheckpointId>();
  for (const id of ids) {
    const holding = discardHolding(id, discards) ?? (options.boundaries === true ? discards.find((d) => d.paths === undefined && d.from === id) : undefined);
    if (holding !== undefined) held.set(id, holding.preRestore);
  }
  return held;
}
