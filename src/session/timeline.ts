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
const TIMELINE_KINDS = new Set<CheckpointManifest['kind']>(['turn', 'call', 'pre-restore']);

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

/**
 * A stretch of the timeline a restore made obsolete: restoring to `from` brought the paths back
 * to their state at `from`, and `preRestore` recorded that restore. For the paths it covers, the
 * changes recorded in `[from, preRestore]` cancel out, so later plans leave them out (see
 * CHECKPOINT-DESIGN.md, "Discarded boundaries").
 */
export interface Discard {
  /** The boundary restored to. */
  from: CheckpointId;
  /** The restore's `pre-restore` checkpoint: the last member of the range. */
  preRestore: CheckpointId;
  /** The paths that left attribution (a partial restore: only those it wrote); absent = every path. */
  paths?: string[];
  /** Paths a redo (a restore of `preRestore`) brought back, so their history counts again. */
  revived?: string[];
}

/** Name of the store state document that holds the discards. */
export const DISCARDS_STATE = 'restore-discards';

const ID_PATTERN = /^\d{13}-[0-9a-z]{4}-[0-9a-f]{8}$/;

function isPathList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((p) => typeof p === 'string');
}

/**
 * The discards recorded in the store. A missing or malformed document reads as none: a plan
 * then folds every checkpoint, as before discards existed, which the guard keeps safe.
 */
export function parseDiscards(value: unknown): Discard[] {
  if (typeof value !== 'object' || value === null) return [];
  const list = (value as { discards?: unknown }).discards;
  if (!Array.isArray(list)) return [];
  const discards: Discard[] = [];
  for (const item of list as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { from, preRestore, paths, revived } = item as Record<string, unknown>;
    if (typeof from !== 'string' || !ID_PATTERN.test(from) || typeof preRestore !== 'string' || !ID_PATTERN.test(preRestore) || from > preRestore) continue;
    if (paths !== undefined && !isPathList(paths)) continue;
    if (revived !== undefined && !isPathList(revived)) continue;
    discards.push({
      from: from as CheckpointId,
      preRestore: preRestore as CheckpointId,
      ...(paths !== undefined ? { paths } : {}),
      ...(revived !== undefined ? { revived } : {}),
    });
  }
  return discards;
}

/**
 * The full discard whose range holds `anchor` strictly inside (after its `from`, before its
 * pre-restore): that boundary is on a branch a restore left, and planning from it alone would
 * mix states from both sides. Its own `from` and its pre-restore (a redo) stay restorable.
 */
export function discardHolding(anchor: CheckpointId, discards: readonly Discard[]): Discard | undefined {
  return discards.find((d) => d.paths === undefined && anchor > d.from && anchor < d.preRestore);
}

/**
 * Removes, from the manifests after `anchor`, the entries a discard covers: for a plan from before
 * a discarded range the whole range `[from, preRestore]` goes; from inside it, the part after the
 * anchor. The anchor itself is always kept whole, and calls are kept (their side effects happened).
 * Pure.
 */
export function withoutDiscarded(anchor: CheckpointId, manifests: readonly CheckpointManifest[], discards: readonly Discard[]): CheckpointManifest[] {
  const active = discards
    .filter((d) => anchor < d.preRestore)
    .map((d) => ({ ...d, only: d.paths === undefined ? undefined : new Set(d.paths), revived: new Set(d.revived ?? []) }));
  if (active.length === 0) return [...manifests];
  return manifests.map((manifest) => {
    if (manifest.id <= anchor) return manifest;
    const covering = active.filter((d) => manifest.id >= d.from && manifest.id <= d.preRestore);
    if (covering.length === 0) return manifest;
    const entries = manifest.entries.filter(
      (entry) => !covering.some((d) => (d.only === undefined || d.only.has(entry.path)) && !d.revived.has(entry.path)),
    );
    return entries.length === manifest.entries.length ? manifest : { ...manifest, entries, entryCount: entries.length };
  });
}

/**
 * The discards after a restore to `anchor` that wrote `restored` and saved into `preRestore`.
 * `full`: nothing was refused, failed or left, and no path filter was given. A restore of a
 * discard's own pre-restore (a redo) brings that discard's paths back first. Pure.
 */
export function recordDiscard(
  discards: readonly Discard[],
  anchor: CheckpointId,
  preRestore: CheckpointId,
  restored: readonly string[],
  full: boolean,
): Discard[] {
  const next: Discard[] = [];
  for (const discard of discards) {
    if (discard.preRestore !== anchor) {
      next.push(discard);
      continue;
    }
    if (full) continue; // a full redo undoes the whole discard
    const revived = [...new Set([...(discard.revived ?? []), ...restored])].sort();
    next.push({ ...discard, revived });
  }
  next.push(full ? { from: anchor, preRestore } : { from: anchor, preRestore, paths: [...restored].sort() });
  return next;
}
