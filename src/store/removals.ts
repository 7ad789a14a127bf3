import type { CheckpointId } from '../core/id.js';
import type { PruneReason } from './retention.js';
import type { StateDocumentFolder } from './state-documents.js';

/**
 * Why a checkpoint is gone: pruned past `retain`, cleared for `keep_days` or the store cap, or
 * dropped by its session (`drop`, a snapshot evicted or dropped).
 */
export type RemovalReason = PruneReason | 'dropped';

/** A checkpoint that was in the store and was removed. */
export interface Removal {
  id: CheckpointId;
  reason: RemovalReason;
  /** ISO time of the removal. */
  at: string;
}

/** The state document that remembers removals, so an id that is gone is told from one that never existed. */
const REMOVALS_STATE = 'removed-checkpoints';
/** Removals remembered; the oldest are forgotten first (an id older than that reads as unknown). */
const REMOVALS_KEPT = 5000;

function parse(doc: unknown): Removal[] {
  const list = (doc as { removals?: unknown } | null | undefined)?.removals;
  return Array.isArray(list) ? (list.filter((r) => typeof r?.id === 'string' && typeof r?.reason === 'string' && typeof r?.at === 'string') as Removal[]) : [];
}

/** Adds removals to the record (best effort: a record that cannot be written only costs a vaguer message). */
export async function recordRemovals(state: StateDocumentFolder, removals: readonly Omit<Removal, 'at'>[]): Promise<void> {
  if (removals.length === 0) return;
  const at = new Date().toISOString();
  const known = parse(await state.readState(REMOVALS_STATE).catch(() => undefined));
  const next = [...known, ...removals.map((r) => ({ ...r, at }))].slice(-REMOVALS_KEPT);
  await state.writeState(REMOVALS_STATE, { version: 1, removals: next }, { durable: false }).catch(() => undefined);
}

/**
 * The newest removal of `id` (a full id, the 8-hex tail `list` shows, or a prefix of 4 or more
 * characters of either), if the record still remembers it.
 */
export async function removalOf(state: StateDocumentFolder, id: string): Promise<Removal | undefined> {
  const known = parse(await state.readState(REMOVALS_STATE).catch(() => undefined));
  for (let i = known.length - 1; i >= 0; i--) {
    const removal = known[i] as Removal;
    if (removal.id === id || removal.id.endsWith(`-${id}`)) return removal;
    const tail = removal.id.slice(removal.id.lastIndexOf('-') + 1);
    if (id.length >= 4 && (removal.id.startsWith(id) || tail.startsWith(id))) return removal;
  }
  return undefined;
}

/** A person's words for why `id` is not in the store. */
export function goneMessage(id: string, removal: Removal | undefined): string {
  if (removal === undefined) return `no checkpoint ${id} in this store (it never existed here)`;
  const when = removal.at.slice(0, 16).replace('T', ' ');
  switch (removal.reason) {
    case 'retain':
      return `checkpoint ${id} was pruned on ${when}: only the newest \`retain\` checkpoints are kept`;
    case 'keep-days':
      return `checkpoint ${id} was cleared on ${when}: it was older than \`keep_days\``;
    case 'store-full':
      return `checkpoint ${id} was cleared on ${when}: the store was over \`max_store_gib\``;
    case 'dropped':
      return `checkpoint ${id} was dropped by its session on ${when}`;
  }
}
