import { checkpointIdTime, type CheckpointId } from '../core/id.js';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import type { StoreBackend } from './backend.js';
import { keysOf, readRemoteManifest, remoteCheckpointIds, REMOTE_GRACE_MS } from './sync.js';
import type { WorkspaceIdentity } from './workspace-identity.js';

// Retention on the remote store, safe against other machines pushing into the same bucket at the
// same moment. Two sweeps, as git's prune:
// 1. manifests past the retention (beyond the newest `retain`, or older than `keepDays`) go;
// 2. bundles no manifest names go — only those older than the grace period (REMOTE_GRACE_MS).
// A pusher touches every bundle it is about to name (sync.ts), so a bundle some push will name is
// young; and the sweep reads the manifests after the first sweep and deletes within half the
// grace period of that reading (else it reads them again). So a bundle a manifest names — one
// written before the reading, or one a push writes after it — is never deleted.

/** Options of {@link pruneRemote}. */
export interface RemotePruneOptions {
  /** Checkpoints kept, newest first. */
  retain: number;
  /** Age in days past which a checkpoint goes. */
  keepDays: number;
  /** How young an unnamed bundle is spared. @default REMOTE_GRACE_MS (one hour) */
  graceMs?: number;
  /** Say what would go; remove nothing. */
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** What a remote prune did (or would do). */
export interface RemotePruneReport {
  /** Checkpoints removed from the remote, oldest first. */
  removed: CheckpointId[];
  /** Checkpoints kept. */
  kept: number;
  /** Bundles nothing names any more, removed. */
  bundlesRemoved: number;
  /** Bundles nothing names yet younger than the grace period: a push may be about to name them. */
  bundlesSpared: number;
  /** Bytes the removed bundles held. */
  bytesRemoved: number;
}

/**
 * Prunes the remote copy of `workspace` (see the module comment for why it is safe beside other
 * machines' pushes).
 * @throws CheckpointError `INVALID_ARGUMENT` for bad numbers; `REMOTE_UNAVAILABLE`, `REMOTE_REFUSED`.
 */
export async function pruneRemote(backend: StoreBackend, workspace: WorkspaceIdentity, options: RemotePruneOptions): Promise<RemotePruneReport> {
  const { retain, keepDays } = options;
  const graceMs = options.graceMs ?? REMOTE_GRACE_MS;
  if (!Number.isSafeInteger(retain) || retain < 1) throw new CheckpointError('INVALID_ARGUMENT', 'retain must be a whole number of at least 1');
  if (typeof keepDays !== 'number' || !(keepDays > 0)) throw new CheckpointError('INVALID_ARGUMENT', 'keepDays must be a positive number');
  if (typeof graceMs !== 'number' || !(graceMs >= 0)) throw new CheckpointError('INVALID_ARGUMENT', 'graceMs must be a non-negative number');
  const call = options.signal !== undefined ? { signal: options.signal } : {};
  const keys = keysOf(workspace);
  const ids = await remoteCheckpointIds(backend, workspace, options);
  const cutoff = Date.now() - keepDays * 24 * 60 * 60 * 1000;
  const removed = ids.filter((id, index) => index < ids.length - retain || checkpointIdTime(id) < cutoff);
  const report: RemotePruneReport = { removed, kept: ids.length - removed.length, bundlesRemoved: 0, bundlesSpared: 0, bytesRemoved: 0 };
  if (options.dryRun !== true) {
    for (const id of removed) {
      // The mark first: a machine that still holds the checkpoint never pushes it back.
      await backend.create(`${keys.pruned}${id}`, new Uint8Array(0), call);
      await backend.delete(keys.manifest(id), call);
    }
  }

  for (let sweep = 0; sweep < 5; sweep++) {
    // What the manifests name now, read after the removals (and after any push that landed meanwhile).
    const readAt = Date.now();
    const gone = new Set(options.dryRun === true ? removed : []);
    const named = new Set<string>();
    for (const id of await remoteCheckpointIds(backend, workspace, options)) {
      if (gone.has(id)) continue;
      try {
        for (const bundle of Object.values((await readRemoteManifest(backend, workspace, id, options)).objects)) named.add(bundle);
      } catch (error) {
        // Removed by another prune meanwhile: it names nothing any more.
        if (isCheckpointError(error, 'UNKNOWN_CHECKPOINT')) continue;
        throw error;
      }
    }
    let stale = false;
    report.bundlesSpared = 0;
    for await (const entry of backend.list(keys.bundles, call)) {
      const name = entry.key.slice(keys.bundles.length).replace(/\.tbb$/, '');
      if (named.has(name)) continue;
      if (Date.now() - entry.modifiedAt < graceMs) {
        report.bundlesSpared += 1;
        continue;
      }
      // The reading is too old to trust: read the manifests again before deleting more.
      if (graceMs > 0 && Date.now() - readAt > graceMs / 2) {
        stale = true;
        break;
      }
      if (options.dryRun !== true) await backend.delete(entry.key, call);
      report.bundlesRemoved += 1;
      report.bytesRemoved += entry.size;
    }
    if (!stale) break;
  }
  return report;
}
