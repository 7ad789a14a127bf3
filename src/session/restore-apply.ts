import type { PathCaptureContext } from '../capture/capture-path.js';
import { isCredentialPath } from '../capture/coverage.js';
import type { CheckpointId } from '../core/id.js';
import type { Fingerprint, PathState } from '../core/model.js';
import { removeEmptiedFolders } from '../restore/emptied-folders.js';
import { applyRestore } from '../restore/apply.js';
import type { PlanEntry } from '../restore/plan.js';
import { applyingRecord } from './interrupted-restore.js';
import { foldersMadeBy, recordMadeFolders } from './made-folders.js';
import type { RestoreOptions, RestoreReport } from './restore-types.js';
import type { PlannedRestore } from './restore-planner.js';
import { saveBeforeSwap } from './save-first.js';
import { strayTempFiles } from './stray-temp-files.js';

// Carrying out a restore plan, the writing half: a `pre-restore` checkpoint opened first (so the
// restore can itself be undone), the record a killed apply is rolled back from, the one apply
// engine with each path saved between its guard and its swap, the save sealed with what was
// written, and then what follows a commit (emptied folders, the folders made, stray temp files).

/** Who carries a plan out: the project and its store, and the session the save is recorded for. */
export interface RestoreApplyContext {
  capture: PathCaptureContext;
  sessionId: string;
}

/**
 * Applies a plan through the one engine and returns its report. What each write overwrites is
 * saved into a `pre-restore` checkpoint first (labelled `options.saveLabel`), a credential file
 * is left (it is never copied, so it cannot be saved), and the folders the deletes emptied that
 * were made since the checkpoint are removed. `readObject` reads a stored copy (the store's, by
 * default). The caller holds the store lock.
 */
export async function applyPlannedRestore(
  context: RestoreApplyContext,
  { plan, irreversible }: PlannedRestore,
  options: RestoreOptions,
  readObject: (object: string) => Promise<Buffer> = (object) => context.capture.store.readObject(object),
): Promise<RestoreReport> {
  const { capture } = context;
  const { store, projectRoot } = capture;
  const writing = plan.entries.filter((e) => e.action === 'restore' || e.action === 'recreate' || e.action === 'delete');
  const report: RestoreReport = {
    available: true,
    checkpointId: plan.checkpointId as CheckpointId,
    preRestoreId: undefined,
    restored: [],
    refused: plan.entries.filter((e) => e.action === 'refuse'),
    skipped: plan.entries.filter((e) => e.action === 'skip' || e.action === 'leave'),
    failed: [],
    irreversible,
    cleanupPending: [],
    removedLeftovers: [],
    removedFolders: [],
  };
  if (writing.length === 0) {
    // Nothing to write, but a killed earlier restore may have left temp files beside these paths.
    report.cleanupPending = await strayTempFiles(capture.fs, projectRoot, plan.entries, []);
    return report;
  }

  // Save first: record what each write will overwrite, so this restore can itself be undone.
  // The save happens inside the apply, from what the guard just read (see save-first.ts).
  const saver = await store.openCheckpoint({
    kind: 'pre-restore',
    sessionId: context.sessionId,
    restoreOf: plan.checkpointId as CheckpointId,
    ...(options.saveLabel !== undefined ? { label: options.saveLabel } : {}),
  });
  report.preRestoreId = saver.id;
  const toApply: PlanEntry[] = [];
  for (const entry of writing) {
    if (entry.expectedHash?.startsWith('file:') === true && (capture.isUncopiedCredential ?? isCredentialPath)(entry.path)) {
      // Credential files are never copied, so one cannot be saved first: it is left alone.
      report.skipped.push({ ...entry, action: 'leave', reason: 'cannot-save-first:credential' });
      continue;
    }
    toApply.push(entry);
  }
  const saved = new Set<string>();
  // Recorded before any stage exists: if this process dies mid-apply, the next restore (of any
  // process) finds the folders and the name base, and removes what was left (its content is in
  // the pre-restore checkpoint, saved before each swap).
  const { name: inProgress, record } = applyingRecord({
    folders: foldersOf(toApply),
    save: saver.id,
    restoreOf: plan.checkpointId as CheckpointId,
    ...(options.saveLabel !== undefined ? { label: options.saveLabel } : {}),
    writes: toApply.map((entry) => [entry.path, targetFingerprint(entry.target, entry.action)]),
  });
  await store.writeState(inProgress, record, { durable: false }).catch(() => undefined);
  const applied = await applyRestore(
    {
      fs: capture.fs,
      projectRoot,
      readObject,
      beforeSwap: (entry, sight) => saveBeforeSwap(capture, saver, saved, entry, sight),
    },
    toApply,
    { ...(options.durable === true ? { durable: true } : {}), ...(options.signal !== undefined ? { signal: options.signal } : {}) },
  );
  await saver.appendMany(
    applied.restored.map((entry) => ({
      op: 'after' as const,
      path: entry.path,
      after: targetFingerprint(entry.target, entry.action),
      ...(entry.mode !== undefined && entry.action !== 'delete' ? { afterMode: entry.mode } : {}),
    })),
  );
  // Saved but not written (rolled back): their record says "unchanged", so the pre-restore
  // checkpoint never claims a change that did not happen.
  for (const failure of applied.failed) {
    const entry = toApply.find((e) => e.path === failure.path);
    if (entry?.expectedHash !== undefined && saved.has(entry.path)) await saver.append({ op: 'after', path: entry.path, after: entry.expectedHash });
  }
  await saver.seal({ complete: applied.failed.length === 0 });
  await store.deleteState(inProgress).catch(() => undefined);
  report.restored = applied.restored;
  // With created files deleted, the folders those deletes emptied that were made since the
  // checkpoint go too: an undo leaves no empty folder behind.
  if ((plan.options.created === 'delete' || plan.options.ownCreated !== undefined) && !applied.rolledBack) {
    const deleted = applied.restored.filter((entry) => entry.action === 'delete').map((entry) => entry.path);
    const since = Date.parse((await store.list()).find((m) => m.id === plan.checkpointId)?.createdAt ?? '');
    // Restoring a save (a redo): the folders its own restore made are newer than it by sequence,
    // whatever the clocks say (a folder's birth time comes from the file system's coarse clock,
    // and can read as older than the save opened a moment before it).
    const madeAfter = await foldersMadeBy(store, plan.checkpointId as CheckpointId);
    if (deleted.length > 0 && Number.isFinite(since)) report.removedFolders = await removeEmptiedFolders(capture.fs, projectRoot, deleted, since, madeAfter);
  }
  if (applied.madeFolders !== undefined && !applied.rolledBack) {
    await recordMadeFolders(store, saver.id, applied.madeFolders);
  }
  report.refused.push(...applied.refused);
  report.skipped.push(...applied.skipped);
  report.failed = applied.failed;
  report.cleanupPending = [...applied.cleanupPending, ...(await strayTempFiles(capture.fs, projectRoot, plan.entries, applied.cleanupPending))];
  return report;
}

/** The folders (project paths, `''` for the root) the entries live in. */
function foldersOf(entries: readonly PlanEntry[]): string[] {
  return [...new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')))].sort();
}

/** The fingerprint a writing entry leaves at its path. */
function targetFingerprint(target: PathState, action: PlanEntry['action']): Fingerprint {
  if (action === 'delete') return 'absent';
  if (target.type === 'file') return `file:${target.hash}`;
  if (target.type === 'symlink') return `symlink:${target.target}`;
  return 'absent';
}
