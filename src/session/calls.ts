// Over ~450 lines: one job — a call's begin, end, retry and mark over its baseline — whose paths share the open-call state; the kept before picture (keptView, sameBaseline) is its end's.
import { baselineGeneration, baselineStateName, loadBaselinePicture, parseBaseline, toBaseline, type CallBaseline } from '../capture/baseline.js';
import { changedPathsBetween, diffPictures, ignoredGone, type Change } from '../capture/diff.js';
import { dropCallPicture, keepCallPicture, keptCallKey, takeCallPicture } from '../capture/kept-pictures.js';
import { pictureChange, type Picture } from '../capture/picture.js';
import type { PictureKeeper } from '../capture/picture-keeper.js';
import { CheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import { CALL_IGNORED_DELETED_MAX, CALL_NOTE_MAX_CHARS, CALL_NOTES_MAX, fingerprintOf, type CoverageCounts, type Gap, type PathState, type SideEffect } from '../core/model.js';
import type { CheckpointStore } from '../store/store.js';
import type { OpenTurn, TurnJournal } from './turns.js';
import { countCoverage } from '../capture/picture-coverage.js';
import { takeScopedPicture } from '../capture/scoped-picture.js';
import type { PathCaptureContext } from '../capture/capture-path.js';

/** What {@link CheckpointObserver.callEnd} attributes to a call. */
export interface CallAttribution {
  callId: string;
  /** Every changed, created or deleted path, with its pre-call state and post-call state. */
  changes: Change[];
  /** Paths whose attribution is unreliable (folder unreadable, file vanished mid-scan); restores refuse them. */
  incomplete: string[];
  /** What the pictures around the call did not capture. */
  gaps: Gap[];
  /** True when either picture stopped early or left folders unchecked. */
  partial: boolean;
  /** One human sentence about the gaps, empty when complete. */
  summary: string;
  /**
   * Entries the pictures left out by the coverage rules (ignored, `skip`; a folder ends with `/`)
   * that the call deleted: no copy was kept, and nothing else says they are gone. Kept in the
   * call's record too (`CallRecord.ignoredDeleted`), so `turnChanges` names them later. Known for
   * a whole-tree call whose before-picture passed over at most `BASELINE_IGNORED_MAX` entries when
   * the call was begun in another process (its baseline keeps their names up to that).
   */
  ignoredDeleted?: string[];
}

/** Options of {@link CheckpointObserver.callBegin}. */
export interface CallBeginOptions {
  /** What runs (recorded so an interrupted call can be named later). */
  command?: string;
  /** Aborts the picture. */
  signal?: AbortSignal;
  /** Progress of a long picture. */
  onProgress?: (progress: { walked: number; files: number; copied: number; toCopy: number }) => void;
  /**
   * Only these paths (absolute, or relative to the project): the call's pictures, before and
   * after, hold them alone instead of the whole tree — for a tool that names the files it writes
   * (an editor's write, a patch), which then costs reading those files, not two sweeps. What the
   * call does to any other path is not attributed to it. A path inside a symlinked folder or
   * outside the project is refused. @default the whole tree
   */
  paths?: string[];
  /**
   * The call is ended by another process — an agent's after-tool hook, a new process per event
   * — so this process ending is no sign of an interrupt: the call is never reported or adopted
   * as an interrupted run. A detached call left open (the agent died, its after-tool event never
   * came) is ended by its session ({@link CheckpointObserver.openCalls}). @default false
   */
  detached?: boolean;
  /**
   * What the call's changes are measured from. `'now'`: a picture taken as the call begins.
   * `'held'`: the newest whole-tree picture this observer took in the open turn (the turn's own,
   * or the previous call's end), when there is one — for a caller that learns of a call only
   * after the tool may have run (an ACP agent's `tool_call` notification, read late under load),
   * where a picture taken now could already hold the call's change. Scoped calls always picture now.
   * @default 'now'
   */
  baseline?: 'now' | 'held';
}

/** Options of {@link CheckpointObserver.callEnd}. */
export interface CallEndOptions {
  /** What else the call did, beyond files: `network` and `desktop_control` are listed as irreversible. @default 'filesystem' */
  sideEffect?: SideEffect;
  /** Aborts the picture. */
  signal?: AbortSignal;
  /** The exit code of the command the call ran, recorded with the call (`turnback list` shows it). @default none */
  exitCode?: number;
  /**
   * The paths, among the changes the call's pictures found, that another call made (an agent's
   * other tool call, another session's, open in the same window): they are not recorded for this
   * call, so its undo never takes them back. Given the changes, returns the paths to leave out.
   * @default none
   */
  omit?: (changes: readonly Change[]) => Iterable<string> | Promise<Iterable<string>>;
  /**
   * Lines about what the call did beyond files — git's HEAD moved, files staged — kept with the call
   * record so later lists and undo previews can say what a file restore does not undo. At most
   * {@link CALL_NOTES_MAX} lines of at most {@link CALL_NOTE_MAX_CHARS} characters. @default none
   */
  notes?: string[];
}

/** What {@link CheckpointObserver.callBegin} took. */
export interface CallBeginResult {
  /** The turn the call belongs to. */
  checkpointId: CheckpointId;
  partial: boolean;
  gaps: Gap[];
  summary: string;
  /** What the picture covered and left out on purpose (ignored, credential, over the size limit). */
  coverage?: CoverageCounts;
  /**
   * Set when files git does not hold were copied past the copy budget (their bytes exist nowhere
   * else, so no budget leaves them): the sentence saying how many, for a person to be told.
   */
  pastBudget?: string;
}

/**
 * What {@link CheckpointObserver.callBegin} returns for a detached call: no `checkpointId` when it
 * began outside a turn (the process that ends it records it in a checkpoint of its own).
 */
export type DetachedCallBeginResult = Omit<CallBeginResult, 'checkpointId'> & { checkpointId?: CheckpointId };

type CallPicture = Pick<Picture, 'records' | 'unchecked' | 'partial' | 'gaps' | 'summary' | 'ignoreEpoch' | 'ignoredPaths'>;

/** An open call: its baseline (the first before-picture) as persisted and as pictured. */
interface OpenCall {
  baseline: CallBaseline;
  picture: CallPicture;
  startedAt: string;
  coverage?: CoverageCounts;
}

/**
 * The session name of tree marks' persisted pictures: a detached call baseline no session owns
 * (never an interrupted run, never one of a session's open calls), whose picture base is kept.
 */
export const MARK_SESSION = 'turnback:mark';

const SIDE_EFFECTS = new Set<string>(['none', 'filesystem', 'network', 'desktop_control']);

/**
 * Shell-call attribution: a whole-tree picture before a call (persisted as its baseline) and
 * after it, and the difference recorded on the turn's timeline as the call's changes.
 */
export class CallAttributor {
  readonly #calls = new Map<string, OpenCall>();
  /** The newest whole-tree picture of a call's begin or end, and the turn open when it was taken. */
  #held: { picture: Picture; turn: CheckpointId } | undefined;

  constructor(
    private readonly store: CheckpointStore,
    private readonly sessionId: string,
    private readonly ownerPid: number,
    private readonly pictures: PictureKeeper,
    private readonly turns: TurnJournal,
    private readonly capture: PathCaptureContext,
  ) {}

  /** The picture-base generations the open calls' baselines name (a base prune keeps them). */
  *liveGenerations(): Iterable<string> {
    for (const call of this.#calls.values()) {
      const generation = baselineGeneration(call.baseline);
      if (generation !== undefined) yield generation;
    }
  }

  /**
   * Pictures the tree before call `callId` and persists the picture as its baseline. `openTurn`
   * runs once the call id is known to be valid: it yields the turn the call belongs to, with the
   * post-write records settled (a half-recorded write must not read as a shell change).
   */
  async begin(callId: string, options: CallBeginOptions, openTurn: () => Promise<OpenTurn | undefined>, scope?: string[]): Promise<DetachedCallBeginResult> {
    assertCallId(callId);
    // A caller that holds both ends of its call and begins it twice has a bug: refused, as before.
    if (this.#calls.has(callId) && options.detached !== true) throw new CheckpointError('INVALID_ARGUMENT', `call ${callId} is already open`);
    // An agent retries a call under the same id (a new before event): the first before-picture stays the call's.
    const first = await this.#openCall(callId);
    if (first !== undefined) return this.#retry(callId, first, options);
    // Checked before anything is written: a bad call id opens no turn.
    const turn = await openTurn();
    // A held picture counts only within the turn it was taken in: a restore seals the turn, and a
    // picture from before a restore would attribute the restore's writes to this call.
    const held = scope === undefined && options.baseline === 'held' && turn !== undefined && this.#held?.turn === turn.writer.id ? this.#held.picture : undefined;
    const picture = scope !== undefined ? await takeScopedPicture(this.capture, scope) : (held ?? (await this.pictures.take(options)));
    if (scope === undefined) this.#hold(picture);
    const call = {
      sessionId: this.sessionId,
      callId,
      ...(turn !== undefined ? { checkpointId: turn.writer.id } : {}),
      pid: this.ownerPid,
      ...(options.command !== undefined ? { command: options.command } : {}),
      ...(scope !== undefined ? { scope } : {}),
      ...(options.detached === true ? { detached: true } : {}),
    };
    // Persisted relative to the current picture base: only what differs from it is written. A
    // scoped picture's few records are all inline.
    const baseline = scope !== undefined ? toBaseline(picture, call) : toBaseline(picture, call, this.pictures.base, this.pictures.deltaOf(picture.records));
    // Not fsynced, like the captures it refers to: it survives a process crash; after a power loss
    // a missing baseline makes callEnd report the call as unknown, never attribute it wrongly.
    // Registered first: a stat cache save that runs meanwhile must see the base this baseline names.
    // Counted once, for the picture a call rests on (not for every picture a session takes).
    const coverage = countCoverage(picture.records, picture.ignored ?? 0, picture.left, pictureChange(picture.records));
    this.#calls.set(callId, { baseline, picture, startedAt: baseline.startedAt, coverage });
    const stateName = baselineStateName(this.sessionId, callId);
    try {
      await this.store.writeState(stateName, baseline, { durable: false });
    } catch (error) {
      this.#calls.delete(callId);
      throw error;
    }
    // A detached call is ended by another observer, often of this same process (a server's next
    // hook event): it finds the picture here rather than reading the baseline's base back.
    if (options.detached === true && scope === undefined) {
      const identity = await this.store.stateIdentity(stateName).catch(() => undefined);
      if (identity !== undefined) keepCallPicture(keptCallKey(this.store.root, stateName), { identity, baseline, picture });
    }
    return { ...(turn !== undefined ? { checkpointId: turn.writer.id } : {}), partial: picture.partial, gaps: picture.gaps, summary: picture.summary, coverage, ...(picture.pastBudget !== undefined ? { pastBudget: picture.pastBudget } : {}) };
  }

  /**
   * The call `callId` still open: begun in this process, or by another process of this session
   * (its baseline in the store). A baseline whose picture can no longer be read counts as none.
   */
  async #openCall(callId: string): Promise<OpenCall | undefined> {
    const here = this.#calls.get(callId);
    if (here !== undefined) return here;
    const baseline = parseBaseline(await this.store.readState(baselineStateName(this.sessionId, callId)).catch(() => undefined));
    if (baseline === undefined || baseline.sessionId !== this.sessionId || baseline.callId !== callId) return undefined;
    const view = await loadBaselinePicture(this.store, baseline, this.pictures.base);
    return view === undefined ? undefined : { baseline, picture: { ...view, summary: '' }, startedAt: baseline.startedAt };
  }

  /**
   * A repeated begin of an open call (an agent retrying it under the same id). The first
   * baseline is kept — the call's end diffs against it, so undoing the call reaches the state
   * before its first attempt. What the earlier attempts left (the paths changed since the first
   * picture, in the state this picture found) is kept too, as a snapshot of the call
   * (`scopeId` = the call id), off the timeline: its pre-images are those in-between states.
   */
  async #retry(callId: string, first: OpenCall, options: CallBeginOptions): Promise<DetachedCallBeginResult> {
    const scope = first.baseline.scope;
    const now = scope !== undefined ? await takeScopedPicture(this.capture, scope) : await this.pictures.take(options);
    const between = now.records === first.picture.records ? [] : diffPictures(first.picture, now);
    if (between.length > 0) {
      const writer = await this.store.openCheckpoint({ kind: 'snapshot', sessionId: this.sessionId, scopeId: callId, label: `${first.baseline.command ?? callId} (before a retry)` });
      for (const change of between) await writer.append({ op: 'before', path: change.path, state: change.after ?? { type: 'absent' }, callId });
      for (const gap of now.gaps) await writer.append({ op: 'gap', gap });
      await writer.seal({ complete: !now.partial });
    }
    const checkpointId = first.baseline.checkpointId;
    return { ...(checkpointId !== undefined ? { checkpointId } : {}), partial: now.partial || first.picture.partial, gaps: now.gaps, summary: now.summary, ...(first.coverage !== undefined ? { coverage: first.coverage } : {}) };
  }

  /**
   * Pictures the tree after the call and records every changed path with its pre-call state and
   * post-call fingerprint: on the turn it began in, or, after a restart (the baseline read back
   * from the store), in a `call` checkpoint of its own.
   */
  async end(callId: string, options: CallEndOptions): Promise<CallAttribution> {
    assertCallId(callId);
    const sideEffect = options.sideEffect ?? 'filesystem';
    if (!SIDE_EFFECTS.has(sideEffect)) throw new CheckpointError('INVALID_ARGUMENT', `unknown side-effect class: ${String(sideEffect)}`);
    if (options.exitCode !== undefined && !Number.isSafeInteger(options.exitCode)) throw new CheckpointError('INVALID_ARGUMENT', 'exitCode must be an integer');
    const notes = options.notes;
    if (notes !== undefined && (!Array.isArray(notes) || notes.length > CALL_NOTES_MAX || !notes.every((n) => typeof n === 'string' && n.length > 0 && n.length <= CALL_NOTE_MAX_CHARS))) {
      throw new CheckpointError('INVALID_ARGUMENT', `notes must be at most ${CALL_NOTES_MAX} non-empty strings of at most ${CALL_NOTE_MAX_CHARS} characters`);
    }
    const stateName = baselineStateName(this.sessionId, callId);
    let call = this.#calls.get(callId);
    const begunHere = call !== undefined;
    if (call === undefined) {
      // The identity before the read: a document replaced in between reads as another one.
      const kept = takeCallPicture(keptCallKey(this.store.root, stateName));
      const identity = kept === undefined ? undefined : await this.store.stateIdentity(stateName).catch(() => undefined);
      const baseline = parseBaseline(await this.store.readState(stateName));
      if (baseline === undefined) throw new CheckpointError('UNKNOWN_CALL', `no callBegin recorded for call ${callId}`);
      const view = kept !== undefined && identity === kept.identity && sameBaseline(kept.baseline, baseline) ? keptView(kept.picture, baseline) : await loadBaselinePicture(this.store, baseline, this.pictures.base);
      if (view === undefined) throw new CheckpointError('UNKNOWN_CALL', `the picture taken before call ${callId} can no longer be read`);
      call = { baseline, picture: { ...view, summary: '' }, startedAt: baseline.startedAt };
    }
    const scope = call.baseline.scope;
    const after =
      scope !== undefined
        ? await takeScopedPicture(this.capture, scope)
        : await this.pictures.take(
            { ...(options.signal !== undefined ? { signal: options.signal } : {}) },
            // Begun here: the baseline's own records, so unchanged files come back as the same
            // objects and the diff below compares identities. Begun by another observer (an
            // agent's before-tool hook): the keeper's own stat cache and settled listings — in
            // this process usually the before picture itself, which the watcher answers from —
            // and the diff compares identities where the before picture was kept here
            // (takeCallPicture), stats where it was read back from the store.
            begunHere ? this.pictures.cacheOf(call.picture.records, call.picture.ignoreEpoch) : undefined,
          );
    if (scope === undefined) this.#hold(after);
    // The very same map means every record is the baseline's own: nothing to compare. A map built
    // over it names what may differ: only those paths are compared.
    const found = after.records === call.picture.records ? [] : diffPictures(call.picture, after, changedPathsBetween(call.picture.records, after.records));
    const omitted = options.omit === undefined || found.length === 0 ? new Set<string>() : new Set(await options.omit(found));
    const changes = omitted.size === 0 ? found : found.filter((change) => !omitted.has(change.path));
    const incomplete = incompletePaths(call.picture, after);
    const ignoredDeleted = scope === undefined ? ignoredGone(call.picture, after) : [];
    // The call's records go to the turn it began in, or, after a restart, to a checkpoint of its own.
    const open = this.turns.current;
    const turn = open !== undefined && call.baseline.checkpointId !== undefined && open.writer.id === call.baseline.checkpointId ? open : undefined;
    const writer = turn?.writer ?? (await this.store.openCheckpoint({ kind: 'call', sessionId: this.sessionId, label: call.baseline.command ?? callId }));
    for (const change of changes) {
      const before: PathState = change.before ?? { type: 'absent' };
      const afterPrint = change.after === undefined ? 'absent' : fingerprintOf(change.after);
      await writer.append({ op: 'before', path: change.path, state: before, callId });
      if (afterPrint !== undefined) {
        await writer.append({ op: 'after', path: change.path, after: afterPrint, ...(change.after?.type === 'file' ? { afterMode: change.after.mode } : {}), callId });
      }
      turn?.touched.set(change.path, Promise.resolve());
    }
    const changedPaths = new Set(changes.map((c) => c.path));
    for (const path of incomplete) {
      // The pre-call state puts the path on the timeline, so a restore lists it and refuses it
      // (incomplete attribution) instead of silently leaving it out of the plan.
      const before = call.picture.records.get(path)?.state;
      if (before !== undefined && !changedPaths.has(path)) {
        await writer.append({ op: 'before', path, state: before, callId });
        turn?.touched.set(path, Promise.resolve());
      }
      await writer.append({ op: 'incomplete', path, callId });
    }
    // What the picture before the call could not cover (a budget it hit, a folder it could not
    // read) is kept with the checkpoint too: a later list or status must still say it.
    const gaps = [...call.picture.gaps.filter((gap) => gap.path === undefined && !after.gaps.some((a) => a.reason === gap.reason && a.detail === gap.detail)), ...after.gaps];
    for (const gap of gaps) await writer.append({ op: 'gap', gap });
    await writer.append({
      op: 'call',
      call: {
        callId,
        sideEffect,
        startedAt: call.startedAt,
        endedAt: new Date().toISOString(),
        ...(incomplete.length > 0 ? { incompletePaths: incomplete } : {}),
        ...(options.exitCode !== undefined ? { exitCode: options.exitCode } : {}),
        ...(notes !== undefined && notes.length > 0 ? { notes: [...notes] } : {}),
        ...(call.coverage !== undefined ? { coverage: call.coverage } : {}),
        ...(ignoredDeleted.length > 0 ? { ignoredDeleted: ignoredDeleted.slice(0, CALL_IGNORED_DELETED_MAX) } : {}),
        ...(ignoredDeleted.length > CALL_IGNORED_DELETED_MAX ? { ignoredDeletedMore: ignoredDeleted.length - CALL_IGNORED_DELETED_MAX } : {}),
      },
    });
    if (turn === undefined) await writer.seal({ complete: !after.partial && !call.picture.partial });
    else if (after.partial || call.picture.partial) await writer.append({ op: 'meta', complete: false });
    this.#calls.delete(callId);
    dropCallPicture(keptCallKey(this.store.root, stateName));
    await this.store.deleteState(stateName);
    return {
      callId,
      changes,
      incomplete,
      gaps,
      partial: after.partial || call.picture.partial,
      summary: after.summary || call.picture.summary,
      ...(ignoredDeleted.length > 0 ? { ignoredDeleted } : {}),
    };
  }

  /** Keeps `picture` as the newest one of the open turn (nothing outside a turn). */
  #hold(picture: Picture): void {
    const turn = this.turns.current?.writer.id;
    this.#held = turn === undefined ? undefined : { picture, turn };
  }

  /**
   * Pictures the whole tree and returns what changed since the last mark of the same `name` (none
   * the first time: `first`), in this process or another; the picture is kept as the next mark's
   * start, or, with `keep: false`, the mark is removed. Nothing goes on the timeline.
   */
  async mark(name: string, keep: boolean): Promise<{ changes: Change[]; first: boolean; partial: boolean }> {
    assertCallId(name);
    const stateName = baselineStateName(MARK_SESSION, name);
    const previous = parseBaseline(await this.store.readState(stateName).catch(() => undefined));
    const view = previous === undefined ? undefined : await loadBaselinePicture(this.store, previous, this.pictures.base);
    const picture = await this.pictures.take({});
    const changes = view === undefined ? [] : diffPictures(view, picture);
    if (keep) {
      const baseline = toBaseline(picture, { sessionId: MARK_SESSION, callId: name, pid: this.ownerPid, detached: true }, this.pictures.base, this.pictures.deltaOf(picture.records));
      await this.store.writeState(stateName, baseline, { durable: false });
    } else if (previous !== undefined) await this.store.deleteState(stateName);
    return { changes, first: view === undefined, partial: picture.partial || (view?.partial ?? false) };
  }

  /** This session's open calls — in this process, and those another process began and left open — oldest first. */
  async openCalls(): Promise<{ callId: string; startedAt: string; command?: string; detached: boolean }[]> {
    const open = new Map<string, { callId: string; startedAt: string; command?: string; detached: boolean }>();
    for (const [callId, call] of this.#calls) open.set(callId, describeOpen(call.baseline));
    if (this.store.listState !== undefined) {
      for (const name of await this.store.listState('call-')) {
        const baseline = parseBaseline(await this.store.readState(name).catch(() => undefined));
        if (baseline === undefined || baseline.sessionId !== this.sessionId || open.has(baseline.callId)) continue;
        open.set(baseline.callId, describeOpen(baseline));
      }
    }
    return [...open.values()].sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
  }

  /** Forgets this session's open calls and removes their baselines (a drop). */
  async dropAll(): Promise<void> {
    for (const callId of this.#calls.keys()) {
      dropCallPicture(keptCallKey(this.store.root, baselineStateName(this.sessionId, callId)));
      await this.store.deleteState(baselineStateName(this.sessionId, callId));
    }
    this.#calls.clear();
  }
}

/** True when `read` is the baseline `written` (read back from the store): the same call, moment, owner and base. */
function sameBaseline(written: CallBaseline, read: CallBaseline): boolean {
  return (
    written.sessionId === read.sessionId &&
    written.callId === read.callId &&
    written.startedAt === read.startedAt &&
    written.pid === read.pid &&
    written.checkpointId === read.checkpointId &&
    (written.base?.generation ?? null) === (read.base?.generation ?? null) &&
    written.records.length === read.records.length &&
    (written.removed?.length ?? 0) === (read.removed?.length ?? 0)
  );
}

/**
 * A kept before picture as {@link loadBaselinePicture} would give it back from `baseline`: the
 * picture's own records (the same objects the after picture reuses), and only what the baseline
 * keeps besides — so both paths give one checkpoint.
 */
function keptView(picture: Omit<CallPicture, 'summary'>, baseline: CallBaseline): Omit<CallPicture, 'summary'> {
  return {
    records: picture.records,
    unchecked: baseline.unchecked,
    partial: baseline.partial,
    gaps: baseline.gaps,
    ...(picture.ignoreEpoch !== undefined ? { ignoreEpoch: picture.ignoreEpoch } : {}),
    ...(baseline.ignored !== undefined ? { ignoredPaths: baseline.ignored } : {}),
  };
}

function describeOpen(baseline: CallBaseline): { callId: string; startedAt: string; command?: string; detached: boolean } {
  return { callId: baseline.callId, startedAt: baseline.startedAt, ...(baseline.command !== undefined ? { command: baseline.command } : {}), detached: baseline.detached === true };
}

function assertCallId(callId: unknown): asserts callId is string {
  if (typeof callId !== 'string' || callId.length === 0 || callId.length > 512) {
    throw new CheckpointError('INVALID_ARGUMENT', 'callId must be a non-empty string of at most 512 characters');
  }
}

/** Paths whose attribution a call cannot vouch for: under a folder either picture could not read. */
function incompletePaths(before: Pick<Picture, 'records' | 'unchecked'>, after: Pick<Picture, 'records' | 'unchecked' | 'gaps'>): string[] {
  const unreadable = [...before.unchecked, ...after.unchecked].filter((u) => u.reason === 'unreadable' || u.reason === 'unreadable-name');
  const result = new Set<string>();
  for (const folder of unreadable) {
    const prefix = folder.path === '.' ? '' : `${folder.path}/`;
    for (const path of before.records.keys()) if (path.startsWith(prefix) || path === folder.path) result.add(path);
  }
  for (const gap of after.gaps) {
    if (gap.path !== undefined && gap.reason === 'changed-during-capture') result.add(gap.path);
  }
  return [...result].sort();
}
