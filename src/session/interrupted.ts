import { diffPictures, type Change } from '../capture/diff.js';
import { resolveCoverage } from '../capture/coverage.js';
import type { ResolvedCheckpointConfig } from './config.js';
import { observerOptionsFromConfig } from './options.js';
import { takePicture } from '../capture/picture.js';
import { isPidAlive } from '../core/pid.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import type { Gap } from '../core/model.js';
import { storeBehind, type StoreView } from '../store/view.js';
import { pictureStoreOf } from '../capture/stable-read.js';
import { loadBaselinePicture, parseBaseline, type CallBaseline } from '../capture/baseline.js';

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

/**
 * Lists calls that began but never ended because their process died (terminal closed, SIGKILL,
 * reboot). Their baselines stay in the store until {@link dismissInterrupted} or a later callEnd.
 */
export async function interruptedRuns(view: StoreView): Promise<InterruptedCall[]> {
  const store = storeBehind(view);
  const names = await store.listState('call-');
  const result: InterruptedCall[] = [];
  for (const name of names) {
    const baseline = parseBaseline(await store.readState(name));
    // A detached call (an agent hook's) is ended by its session's next event, not adopted here.
    if (baseline === undefined || baseline.detached === true || baseline.checkpointId === undefined || isPidAlive(baseline.pid)) continue;
    result.push(toInterrupted({ ...baseline, checkpointId: baseline.checkpointId }, name));
  }
  return result.sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
}

function toInterrupted(baseline: CallBaseline & { checkpointId: CheckpointId }, stateName: string): InterruptedCall {
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
  view: StoreView,
  call: InterruptedCall,
  options: { config?: ResolvedCheckpointConfig } = {},
): Promise<ChangesSinceInterrupted> {
  const coverage = options.config === undefined ? {} : (observerOptionsFromConfig(options.config).coverage ?? {});
  const store = storeBehind(view);
  const baseline = parseBaseline(await store.readState(call.stateName));
  const before = baseline === undefined ? undefined : await loadBaselinePicture(store, baseline);
  if (baseline === undefined || before === undefined) return { changes: [], gaps: [{ reason: 'no-baseline', detail: 'the interrupted call left no readable picture' }], partial: true, summary: 'no checkpoint: the picture before the command is gone' };
  await loadHasher();
  const now = await takePicture({ store: pictureStoreOf(store), projectRoot: store.projectRoot, coverage: resolveCoverage(coverage), cache: before, exclude: [store.root] });
  return {
    changes: diffPictures(before, now),
    gaps: [...baseline.gaps, ...now.gaps],
    partial: baseline.partial || now.partial,
    summary: now.summary || (baseline.partial ? 'checkpoint partial before the command' : ''),
  };
}

/** Forgets an interrupted call once a person has seen it (its checkpoint stays restorable). */
export async function dismissInterrupted(view: StoreView, call: InterruptedCall): Promise<void> {
  await storeBehind(view).writeState(call.stateName, null);
}
