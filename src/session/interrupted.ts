import { diffPictures, type Change } from '../capture/diff.js';
import { resolveCoverage, type CoverageOptions } from '../capture/coverage.js';
import { takePicture } from '../capture/picture.js';
import { errnoCode } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import type { Gap } from '../core/model.js';
import type { CheckpointStore } from '../store/store.js';
import { loadBaselinePicture, parseBaseline, type CallBaseline } from './baseline.js';

/** A call whose process died between callBegin and callEnd. */
export interface InterruptedCall {
  sessionId: string;
  callId: string;
  checkpointId: CheckpointId;
  command: string | undefined;
  startedAt: string;
  pid: number;
  /** The state document holding its baseline (internal). */
  stateName: string;
}

/** What changed since an interrupted call's picture, up to now. */
export interface ChangesSinceInterrupted {
  changes: Change[];
  gaps: Gap[];
  partial: boolean;
  summary: string;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === 'EPERM';
  }
}

/**
 * Lists calls that began but never ended because their process died (terminal closed, SIGKILL,
 * reboot). Their baselines stay in the store until {@link dismissInterrupted} or a later callEnd.
 */
export async function interruptedRuns(store: CheckpointStore): Promise<InterruptedCall[]> {
  const names = await store.listState('call-');
  const result: InterruptedCall[] = [];
  for (const name of names) {
    const baseline = parseBaseline(await store.readState(name));
    if (baseline === undefined || processAlive(baseline.pid)) continue;
    result.push(toInterrupted(baseline, name));
  }
  return result.sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
}

function toInterrupted(baseline: CallBaseline, stateName: string): InterruptedCall {
  return {
    sessionId: baseline.sessionId,
    callId: baseline.callId,
    checkpointId: baseline.checkpointId,
    command: baseline.command,
    startedAt: baseline.startedAt,
    pid: baseline.pid,
    stateName,
  };
}

/**
 * Diffs an interrupted call's picture against the tree now (including edits made since the kill).
 * Takes a new picture, which copies changed files into the store.
 */
export async function changesSinceInterrupted(
  store: CheckpointStore,
  call: InterruptedCall,
  coverage: CoverageOptions = {},
): Promise<ChangesSinceInterrupted> {
  const baseline = parseBaseline(await store.readState(call.stateName));
  const before = baseline === undefined ? undefined : await loadBaselinePicture(store, baseline);
  if (baseline === undefined || before === undefined) return { changes: [], gaps: [{ reason: 'no-baseline', detail: 'the interrupted call left no readable picture' }], partial: true, summary: 'no checkpoint: the picture before the command is gone' };
  await loadHasher();
  const now = await takePicture({ store, projectRoot: store.projectRoot, coverage: resolveCoverage(coverage), cache: before, exclude: [store.root] });
  return {
    changes: diffPictures(before, now),
    gaps: [...baseline.gaps, ...now.gaps],
    partial: baseline.partial || now.partial,
    summary: now.summary || (baseline.partial ? 'checkpoint partial before the command' : ''),
  };
}

/** Forgets an interrupted call once a person has seen it (its checkpoint stays restorable). */
export async function dismissInterrupted(store: CheckpointStore, call: InterruptedCall): Promise<void> {
  await store.writeState(call.stateName, null);
}
