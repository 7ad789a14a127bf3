import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest, Fingerprint, PathState, SideEffect } from '../core/model.js';

/** One path's history from a checkpoint on: what to go back to and what the guard expects now. */
export interface TimelinePath {
  path: string;
  /** State at the checkpoint: the pre-image from the earliest checkpoint at or after it that touched the path. */
  target: PathState;
  /** Fingerprint after the latest recorded change; undefined when the latest change has no post record. */
  lastAfter: Fingerprint | undefined;
  /** True when any attribution of this path since the checkpoint is unreliable. */
  incomplete: boolean;
  /** The checkpoint whose pre-image is the target. */
  from: CheckpointId;
}

/** A call after the checkpoint whose side effects a file restore cannot undo. */
export interface IrreversibleCall {
  callId: string;
  sideEffect: SideEffect;
}

/** Checkpoint kinds whose entries are changes on the shared timeline (snapshots and pictures are not). */
const TIMELINE_KINDS = new Set<CheckpointManifest['kind']>(['turn', 'call', 'pre-restore', 'savepoint']);

/** True when a checkpoint of this kind takes part in turn restores. */
export function isTimelineKind(kind: CheckpointManifest['kind']): boolean {
  return TIMELINE_KINDS.has(kind);
}

/**
 * Folds the manifests at or after a checkpoint (any order in, sorted by id here) into one entry per
 * path. Pure: manifests in, paths out. `anyKind` folds snapshots too (a snapshot restore folds only its own).
 */
export function foldTimeline(
  manifests: readonly CheckpointManifest[],
  anyKind = false,
): { paths: TimelinePath[]; irreversible: IrreversibleCall[] } {
  const ordered = [...manifests].filter((m) => anyKind || isTimelineKind(m.kind)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const byPath = new Map<string, TimelinePath>();
  const irreversible: IrreversibleCall[] = [];
  for (const manifest of ordered) {
    for (const call of manifest.calls) {
      if (call.sideEffect === 'network' || call.sideEffect === 'desktop_control') {
        irreversible.push({ callId: call.callId, sideEffect: call.sideEffect });
      }
    }
    for (const entry of manifest.entries) {
      const known = byPath.get(entry.path);
      if (known === undefined) {
        byPath.set(entry.path, {
          path: entry.path,
          target: entry.before,
          lastAfter: entry.after,
          incomplete: entry.incomplete === true,
          from: manifest.id,
        });
      } else {
        known.lastAfter = entry.after;
        known.incomplete ||= entry.incomplete === true;
      }
    }
  }
  const paths = [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { paths, irreversible };
}
