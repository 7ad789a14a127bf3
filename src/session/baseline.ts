import { createHash } from 'node:crypto';
import type { Picture, PictureRecord } from '../capture/picture.js';
import type { UncheckedPath } from '../capture/scan.js';
import type { CheckpointId } from '../core/id.js';
import type { Gap } from '../core/model.js';

/** A call's pre-call picture, persisted so another process can attribute or report it after a crash. */
export interface CallBaseline {
  format: 'turnback-call';
  version: 1;
  sessionId: string;
  callId: string;
  checkpointId: CheckpointId;
  /** What ran, when a surface knows it (the CLI records the command line). */
  command?: string;
  /** The process that owns the call; a dead pid with a baseline left means the call was interrupted. */
  pid: number;
  startedAt: string;
  partial: boolean;
  gaps: Gap[];
  unchecked: UncheckedPath[];
  records: PictureRecord[];
}

/** The state document name of a call's baseline (names are limited to `[a-z0-9._-]`). */
export function baselineStateName(sessionId: string, callId: string): string {
  const digest = createHash('sha256').update(`${sessionId}\0${callId}`).digest('hex').slice(0, 24);
  return `call-${digest}`;
}

/** Builds the persisted form of a pre-call picture. */
export function toBaseline(
  picture: Picture,
  call: { sessionId: string; callId: string; checkpointId: CheckpointId; command?: string; pid: number },
): CallBaseline {
  return {
    format: 'turnback-call',
    version: 1,
    sessionId: call.sessionId,
    callId: call.callId,
    checkpointId: call.checkpointId,
    ...(call.command !== undefined ? { command: call.command } : {}),
    pid: call.pid,
    startedAt: new Date().toISOString(),
    partial: picture.partial,
    gaps: picture.gaps,
    unchecked: picture.unchecked,
    records: [...picture.records.values()],
  };
}

/** Parses a persisted baseline; `undefined` for anything malformed (a torn write is never trusted). */
export function parseBaseline(value: unknown): CallBaseline | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const doc = value as Partial<CallBaseline>;
  if (doc.format !== 'turnback-call' || doc.version !== 1 || !Array.isArray(doc.records)) return undefined;
  if (typeof doc.sessionId !== 'string' || typeof doc.callId !== 'string' || typeof doc.checkpointId !== 'string') return undefined;
  if (typeof doc.pid !== 'number' || typeof doc.startedAt !== 'string') return undefined;
  return doc as CallBaseline;
}

/** The picture view of a baseline, for diffing. */
export function baselinePicture(baseline: CallBaseline): Pick<Picture, 'records' | 'unchecked' | 'partial' | 'gaps'> {
  return {
    records: new Map(baseline.records.map((r) => [r.path, r])),
    unchecked: baseline.unchecked,
    partial: baseline.partial,
    gaps: baseline.gaps,
  };
}
