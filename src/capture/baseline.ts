import { createHash } from 'node:crypto';
import type { Picture, PictureRecord } from './picture.js';
import {
  applyDelta,
  parsePersistedRecords,
  pictureDelta,
  readPictureBase,
  type PictureBase,
  type PictureBaseRef,
  type PersistedRecords,
  type StateDocuments,
} from './picture-persist.js';
import type { UncheckedPath } from './scan.js';
import type { CheckpointId } from '../core/id.js';
import type { Gap } from '../core/model.js';

/**
 * A call's pre-call picture, persisted so another process can attribute or report it after a
 * crash. Version 2 stores only what differs from a shared picture base (see
 * {@link PictureBase}): a call around an unchanged tree writes a few hundred bytes, not the tree.
 */
export interface CallBaseline {
  format: 'turnback-call';
  version: 1 | 2;
  sessionId: string;
  callId: string;
  /** The turn the call began in; absent for a detached call begun outside a turn. */
  checkpointId?: CheckpointId;
  /** What ran, when a surface knows it (the CLI records the command line). */
  command?: string;
  /** The process that owns the call; a dead pid with a baseline left means the call was interrupted. */
  pid: number;
  startedAt: string;
  partial: boolean;
  gaps: Gap[];
  unchecked: UncheckedPath[];
  /** Version 2: the base the records are relative to (`null`: none, every record is inline). */
  base?: PictureBaseRef | null;
  /** Version 2: base paths the picture did not hold. */
  removed?: string[];
  /** Version 1: every record; version 2: the records not in the base or different from it. */
  records: PictureRecord[];
  /**
   * The project paths of a scoped call (see `takeScopedPicture`): its pictures hold these paths
   * alone, and its records are all inline. Absent for a whole-tree call.
   */
  scope?: string[];
  /** Ended by another process by design (an agent hook's call): never an interrupted run. */
  detached?: boolean;
  /**
   * A whole-tree call's entries the picture passed over (ignored, `skip`; a folder ends with `/`):
   * the process that ends the call names the ones it deleted (an agent's hook ends a call in
   * another process). Absent when the picture had more than {@link BASELINE_IGNORED_MAX}: then
   * none can be named.
   */
  ignored?: string[];
}

/**
 * The most passed-over entries a baseline keeps (a folder counts once, so a tree of thousands of
 * ignored files in a few ignored folders keeps a few). Past it the baseline keeps none: a
 * baseline is written for every call, and a few hundred kilobytes per call would cost more than
 * naming the deletions is worth.
 */
export const BASELINE_IGNORED_MAX = 5000;

/** The state document name of a call's baseline (names are limited to `[a-z0-9._-]`). */
export function baselineStateName(sessionId: string, callId: string): string {
  const digest = createHash('sha256').update(`${sessionId}\0${callId}`).digest('hex').slice(0, 24);
  return `call-${digest}`;
}

/**
 * Builds the persisted form of a pre-call picture, relative to `base` when given. `delta` is
 * `pictureDelta(picture.records, base)` when the caller already has it.
 */
export function toBaseline(
  picture: Picture,
  call: { sessionId: string; callId: string; checkpointId?: CheckpointId; command?: string; pid: number; scope?: string[]; detached?: boolean },
  base?: PictureBase,
  delta: PersistedRecords = pictureDelta(picture.records, base),
): CallBaseline {
  return {
    format: 'turnback-call',
    version: 2,
    sessionId: call.sessionId,
    callId: call.callId,
    ...(call.checkpointId !== undefined ? { checkpointId: call.checkpointId } : {}),
    ...(call.command !== undefined ? { command: call.command } : {}),
    ...(call.scope !== undefined ? { scope: call.scope } : {}),
    ...(call.detached === true ? { detached: true } : {}),
    ...(call.scope === undefined && picture.ignoredPaths !== undefined && picture.ignoredPaths.length > 0 && picture.ignoredPaths.length <= BASELINE_IGNORED_MAX ? { ignored: [...picture.ignoredPaths] } : {}),
    pid: call.pid,
    startedAt: new Date().toISOString(),
    partial: picture.partial,
    gaps: picture.gaps,
    unchecked: picture.unchecked,
    base: delta.base,
    removed: delta.removed,
    records: delta.records,
  };
}

/** Parses a persisted baseline; `undefined` for anything malformed (a torn write is never trusted). */
export function parseBaseline(value: unknown): CallBaseline | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const doc = value as Partial<CallBaseline>;
  if (doc.format !== 'turnback-call' || (doc.version !== 1 && doc.version !== 2) || !Array.isArray(doc.records)) return undefined;
  if (typeof doc.sessionId !== 'string' || typeof doc.callId !== 'string') return undefined;
  // Only a detached call may have begun outside a turn.
  if (typeof doc.checkpointId !== 'string' && !(doc.checkpointId === undefined && doc.detached === true)) return undefined;
  if (typeof doc.pid !== 'number' || typeof doc.startedAt !== 'string') return undefined;
  if (!Array.isArray(doc.gaps) || !Array.isArray(doc.unchecked)) return undefined;
  if (doc.scope !== undefined && (!Array.isArray(doc.scope) || !doc.scope.every((p) => typeof p === 'string' && p.length > 0))) return undefined;
  if (doc.ignored !== undefined && (!Array.isArray(doc.ignored) || doc.ignored.length > BASELINE_IGNORED_MAX || !doc.ignored.every((p) => typeof p === 'string' && p.length > 0))) return undefined;
  if (doc.version === 2) {
    const persisted = parsePersistedRecords(doc);
    if (persisted === undefined) return undefined;
    return { ...(doc as CallBaseline), base: persisted.base, removed: persisted.removed, records: persisted.records };
  }
  return doc as CallBaseline;
}

/** The generation of the base a baseline refers to, if any (its base must be kept). */
export function baselineGeneration(baseline: CallBaseline): string | undefined {
  return baseline.base?.generation;
}

/**
 * The picture view of a baseline, for diffing: its base read back and its delta applied.
 * `undefined` when the base it names cannot be read whole.
 */
export async function loadBaselinePicture(
  store: StateDocuments,
  baseline: CallBaseline,
  known?: PictureBase,
): Promise<Pick<Picture, 'records' | 'unchecked' | 'partial' | 'gaps' | 'ignoredPaths'> | undefined> {
  let base: PictureBase | undefined;
  if (baseline.version === 2 && baseline.base !== undefined && baseline.base !== null) {
    base = known?.ref.generation === baseline.base.generation ? known : await readPictureBase(store, baseline.base);
    if (base === undefined) return undefined;
  }
  return {
    records: baseline.version === 2 ? applyDelta(base, { records: baseline.records, removed: baseline.removed ?? [] }) : new Map(baseline.records.map((r) => [r.path, r])),
    unchecked: baseline.unchecked,
    partial: baseline.partial,
    gaps: baseline.gaps,
    ...(baseline.ignored !== undefined ? { ignoredPaths: baseline.ignored } : {}),
  };
}
