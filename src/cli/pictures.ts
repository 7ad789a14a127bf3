import { CheckpointError, type CheckpointId, type CheckpointMeta, type CheckpointStore } from '../index.js';

/** Checkpoint kinds the user can undo to: runs, restores' saves, and calls attributed after a restart. */
const UNDOABLE = new Set<CheckpointMeta['kind']>(['turn', 'pre-restore', 'call']);

/** What a person calls a checkpoint: `before ./tidy.sh`, or `before undo` for a restore's save. */
export function displayLabel(meta: Pick<CheckpointMeta, 'kind' | 'label'>): string {
  if (meta.kind === 'pre-restore') return 'before undo';
  if (meta.label !== undefined && meta.label.length > 0) return meta.label;
  return `before ${meta.kind}`;
}

/** `14:02` today, `2024-05-01 14:02` on other days, in local time. */
export function displayTime(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const pad = (n: number): string => String(n).padStart(2, '0');
  const hm = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  const sameDay = at.getFullYear() === now.getFullYear() && at.getMonth() === now.getMonth() && at.getDate() === now.getDate();
  return sameDay ? hm : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${hm}`;
}

/** The short id shown in lists: the random tail of the id, which `resolveId` accepts. */
export function shortId(id: string): string {
  return id.slice(-8);
}

/** Undoable checkpoints, newest first. */
export async function undoablePictures(store: CheckpointStore): Promise<CheckpointMeta[]> {
  const metas = await store.list();
  return metas.filter((m) => UNDOABLE.has(m.kind)).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/**
 * Finds a checkpoint by its full id or its short id (the 8-character tail shown by `list`).
 *
 * @throws CheckpointError `UNKNOWN_CHECKPOINT` when none matches (cleared or never taken),
 *   `INVALID_ID` when the text is neither form or a short id is ambiguous.
 */
export async function resolveId(store: CheckpointStore, text: string): Promise<CheckpointMeta> {
  const metas = await store.list();
  const exact = metas.find((m) => m.id === text);
  if (exact !== undefined) return exact;
  if (/^[0-9]{13}-[0-9a-z]{4}-[0-9a-f]{8}$/.test(text)) {
    throw new CheckpointError('UNKNOWN_CHECKPOINT', clearedMessage(text));
  }
  if (!/^[0-9a-f]{8}$/.test(text)) throw new CheckpointError('INVALID_ID', `not a checkpoint id: ${JSON.stringify(text.slice(0, 80))}`);
  const matches = metas.filter((m) => m.id.endsWith(`-${text}`));
  if (matches.length === 1) return matches[0] as CheckpointMeta;
  if (matches.length > 1) throw new CheckpointError('INVALID_ID', `the short id ${text} is ambiguous; give the full id (turnback list --json)`);
  throw new CheckpointError('UNKNOWN_CHECKPOINT', clearedMessage(text));
}

/** The message for a checkpoint that is not in the store. */
export function clearedMessage(id: string): string {
  return `the checkpoint ${id} was cleared (older than keep_days, or the store was full)`;
}

/** The undo target for one path: the newest undoable checkpoint with an entry for it. */
export async function latestCheckpointFor(store: CheckpointStore, projectPath: string): Promise<CheckpointMeta | undefined> {
  for (const meta of await undoablePictures(store)) {
    const manifest = await store.manifest(meta.id as CheckpointId);
    if (manifest.entries.some((e) => e.path === projectPath)) return meta;
  }
  return undefined;
}
