import { capturePath, type PathCaptureContext } from '../capture/capture-path.js';
import type { Change } from '../capture/diff.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import { fingerprintOf, type CheckpointManifest, type Gap } from '../core/model.js';
import type { CheckpointWriter, JournalRecord } from '../store/store.js';

/** A turn's change list, derived from its manifest. */
export interface TurnChanges {
  checkpointId: CheckpointId;
  changes: Change[];
  gaps: Gap[];
  /** True when the checkpoint was cut short or recorded gaps: the list may be incomplete. */
  partial: boolean;
  /**
   * Entries the pictures passed over (ignored, `skip`; a folder ends with `/`) that the
   * checkpoint's calls deleted, sorted: no copy was kept (see `CallRecord.ignoredDeleted`).
   */
  ignoredDeleted?: string[];
  /** Of those, how many more were deleted than `ignoredDeleted` names. */
  ignoredDeletedMore?: number;
}

/** The open turn: its journal and what it has captured so far. */
export interface OpenTurn {
  writer: CheckpointWriter;
  /** The label it was opened with (a continuation after a failed journal keeps it). */
  label: string | undefined;
  /** Per path: the capture in flight or done, so a repeat touch costs one map lookup. */
  touched: Map<string, Promise<void>>;
  /** Paths whose `after` record is in the journal: a later one only supersedes it. */
  afterWritten: Set<string>;
}

/**
 * The turn journal of one observer: opens and seals turn checkpoints, captures each path's
 * pre-image the first time a turn touches it, and appends its post-write records.
 */
export class TurnJournal {
  #turn: OpenTurn | undefined;
  #opening: Promise<OpenTurn> | undefined;
  readonly #gaps: Gap[] = [];

  constructor(
    private readonly capture: PathCaptureContext,
    private readonly sessionId: string,
    /** Runs before a turn is sealed: the deferred post-write hashes and the stat cache save. */
    private readonly settle: { beforeSeal(): Promise<void>; afterSeal(): Promise<void> },
  ) {}

  /** The open turn, if any. */
  get current(): OpenTurn | undefined {
    return this.#turn;
  }

  /** Gaps recorded since the observer was created. */
  get gaps(): readonly Gap[] {
    return this.#gaps;
  }

  /** Records a gap for the observer's report (not in any journal). */
  recordGap(gap: Gap): void {
    this.#gaps.push(gap);
  }

  /** The open turn, opening one (unlabelled) if none is. */
  async ensure(): Promise<OpenTurn> {
    return this.#turn ?? this.open(undefined);
  }

  /**
   * The turn a capture goes into: the open one, or a new one when none is open or the open one's
   * journal failed (a full disk). A failed journal takes no more lines, so the turn continues in
   * a new checkpoint with the same label; a restore from the first one folds both, since the
   * timeline folds every checkpoint after it.
   */
  async writable(): Promise<OpenTurn> {
    const turn = this.#turn;
    if (turn !== undefined && !turn.writer.failed) return turn;
    if (turn !== undefined) {
      this.#turn = undefined;
      await Promise.allSettled(turn.touched.values());
      // Sealed if the disk allows (the manifest says complete: false, with the failure as a gap);
      // else left open, and read by folding its journal.
      await turn.writer.seal().catch(() => turn.writer.close().catch(() => undefined));
    }
    return this.open(turn?.label);
  }

  /** Opens a turn checkpoint; concurrent callers share one. */
  async open(label: string | undefined): Promise<OpenTurn> {
    if (this.#opening !== undefined) return this.#opening;
    this.#opening = (async () => {
      await loadHasher();
      const writer = await this.capture.store.openCheckpoint({ kind: 'turn', sessionId: this.sessionId, ...(label !== undefined ? { label } : {}) });
      const turn: OpenTurn = { writer, label, touched: new Map(), afterWritten: new Set() };
      this.#turn = turn;
      return turn;
    })();
    try {
      return await this.#opening;
    } finally {
      this.#opening = undefined;
    }
  }

  /** Seals the open turn, once its captures and post-write hashes have settled. */
  async seal(): Promise<void> {
    const turn = this.#turn;
    if (turn === undefined) return;
    this.#turn = undefined;
    await Promise.allSettled(turn.touched.values());
    // Content fingerprints, not identities, go into a sealed manifest: an identity stops matching
    // as soon as the same content is written back (a redo), and the guard would refuse it.
    await this.settle.beforeSeal();
    await turn.writer.seal();
    await this.settle.afterSeal();
  }

  /**
   * Captures the pre-image of `projectPath` the first time `turn` touches it; a repeat touch
   * returns the capture already in flight or done.
   */
  async captureOnce(turn: OpenTurn, projectPath: string, callId: string | undefined): Promise<void> {
    const inFlight = turn.touched.get(projectPath);
    if (inFlight !== undefined) return inFlight;
    const capture = this.#captureInto(turn, projectPath, callId).catch((error: unknown) => {
      if (isCallerError(error)) throw error;
      // The store failed (a full disk): a reported gap, and the agent's write goes ahead.
      this.recordStoreFailure(projectPath, error);
    });
    turn.touched.set(projectPath, capture);
    try {
      await capture;
    } catch (error) {
      turn.touched.delete(projectPath);
      throw error;
    }
  }

  /** Records that the store could not take what a capture or a record of `projectPath` needed. */
  recordStoreFailure(projectPath: string, error: unknown): void {
    this.recordGap(storeFailureGap(projectPath, error));
  }

  /**
   * Appends a post-write record. A repeat touch's record only supersedes the last one: written
   * within milliseconds (or before any other record), not with a system call of its own.
   */
  async recordAfter(turn: OpenTurn, record: Extract<JournalRecord, { op: 'after' }>): Promise<void> {
    if (turn.afterWritten.has(record.path)) await turn.writer.appendSoon(record);
    else {
      await turn.writer.append(record);
      turn.afterWritten.add(record.path);
    }
  }

  /** Records a write that arrived without its `beforeWrite`: nothing to restore for it. */
  async recordMissingPreImage(projectPath: string): Promise<void> {
    const gap: Gap = { path: projectPath, reason: 'no-pre-image', detail: 'afterWrite without beforeWrite in this turn: nothing to restore' };
    this.recordGap(gap);
    if (this.#turn !== undefined) await this.#turn.writer.append({ op: 'gap', gap });
  }

  async #captureInto(turn: OpenTurn, projectPath: string, callId: string | undefined): Promise<void> {
    const captured = await capturePath(this.capture, projectPath);
    if (captured.gap !== undefined) {
      this.recordGap(captured.gap);
      await turn.writer.append({ op: 'gap', gap: captured.gap });
    }
    await turn.writer.append({ op: 'before', path: projectPath, state: captured.state, ...(callId !== undefined ? { callId } : {}) });
  }
}

/** True for the errors that are the caller's: a bad path or argument, a closed observer. They are thrown, never turned into gaps. */
export function isCallerError(error: unknown): boolean {
  return isCheckpointError(error) && (error.code === 'INVALID_PATH' || error.code === 'OUTSIDE_ROOT' || error.code === 'INVALID_ARGUMENT' || error.code === 'CLOSED');
}

/** The gap for a store failure about `path`: `store-full` for ENOSPC/EDQUOT, else `journal-write-failed`. */
export function storeFailureGap(path: string, error: unknown): Gap {
  const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
  const full = code === 'ENOSPC' || code === 'EDQUOT';
  const message = error instanceof Error ? error.message : String(error);
  return full
    ? { path, reason: 'store-full', detail: `the checkpoint store is full: ${path} was written without a checkpoint` }
    : { path, reason: 'journal-write-failed', detail: `the checkpoint store failed (${message}): ${path} was written without a checkpoint` };
}

/** A manifest's entries as a change list; entries whose content and mode ended where they began are dropped. */
export function turnChangesOf(manifest: CheckpointManifest): TurnChanges {
  const changes: Change[] = [];
  for (const entry of manifest.entries) {
    const before = fingerprintOf(entry.before);
    const sameMode = entry.before.type !== 'file' || entry.afterMode === undefined || (entry.afterMode & 0o777) === (entry.before.mode & 0o777);
    if (entry.after !== undefined && before !== undefined && before === entry.after && sameMode) continue;
    if (entry.before.type === 'absent') changes.push({ path: entry.path, kind: 'created', before: entry.before });
    else if (entry.after === 'absent') changes.push({ path: entry.path, kind: 'deleted', before: entry.before });
    else changes.push({ path: entry.path, kind: 'changed', before: entry.before });
  }
  const ignored = new Set<string>();
  let more = 0;
  for (const call of manifest.calls) {
    for (const entry of call.ignoredDeleted ?? []) ignored.add(entry);
    more += call.ignoredDeletedMore ?? 0;
  }
  const ignoredDeleted = [...ignored].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    checkpointId: manifest.id,
    changes,
    gaps: manifest.gaps,
    partial: !manifest.complete || manifest.gaps.length > 0,
    ...(ignoredDeleted.length > 0 ? { ignoredDeleted } : {}),
    ...(more > 0 ? { ignoredDeletedMore: more } : {}),
  };
}
