import type { CheckpointId } from '../core/id.js';
import type { CheckpointStore } from '../store/store.js';

// The record of the folders a restore made, kept under its save's id: the restore of that save
// (a redo) removes them once emptied by sequence, not by asking the file system's coarse clock
// whether a folder is older than the save (see CHECKPOINT-DESIGN.md, "No empty folder left behind").

/**
 * State documents (`made-folders-<save id>`) naming the folders a restore made, so the restore of
 * its save (a redo) removes them once emptied without asking the clock which came first.
 */
export const MADE_FOLDERS_PREFIX = 'made-folders-';

/**
 * Records the folders the restore whose save is `saveId` made and left holding its writes. Not
 * durable and never thrown: without the record a redo falls back to the folders' birth times.
 */
export async function recordMadeFolders(store: CheckpointStore, saveId: CheckpointId, folders: readonly string[]): Promise<void> {
  await store.writeState(`${MADE_FOLDERS_PREFIX}${saveId}`, { version: 1, folders }, { durable: false }).catch(() => undefined);
}

/** The folders the restore that made save `id` created (its record), or none. */
export async function foldersMadeBy(store: CheckpointStore, id: CheckpointId): Promise<ReadonlySet<string>> {
  const record = (await store.readState(`${MADE_FOLDERS_PREFIX}${id}`).catch(() => undefined)) as { folders?: unknown } | undefined;
  return new Set(Array.isArray(record?.folders) ? record.folders.filter((f): f is string => typeof f === 'string') : []);
}
