import { createHash } from 'node:crypto';
import { parseBaseline } from '../capture/baseline.js';
import type { Change } from '../capture/diff.js';
import { fingerprintOf, type Fingerprint } from '../core/model.js';
import type { CheckpointObserver } from '../session/observer.js';
import { MARK_SESSION } from '../session/calls.js';
import type { CheckpointStore } from '../store/store.js';
import { storeBehind, type StoreView } from '../store/view.js';

// Calls that overlap in time: an agent's long shell call while its patch tool runs (Codex sends
// the shell's after event only when the process ends), or two agents' sessions in one project.
// A whole-tree picture cannot tell which of two open calls changed a file, so while two calls
// overlap every hook event splits the time into segments: a picture of the tree at each event
// (a tree mark), and, for each segment, the calls open in it and what changed, in a log. When a
// whole-tree call ends, each change in its window is its own (changed only where it alone could
// have made it), another call's (changed only inside segments that call owns: not recorded for
// this call), or shared (refused by its undo, with the reason, unless forced).
//
//   who could have made a change in a segment: the open tool calls that name the file (a patch,
//   an editor's write); else every open tool call; else, no tool call being open, the open turns.
//   A turn owns what its own session's calls made; a tool call only what it alone could make.

/** A call as the log names it: its session (`codex:…`), its call id, and its label. */
export interface CallKey {
  session: string;
  callId: string;
  /** What the call ran (`Bash: npm test`, `apply_patch b.txt`), for the reason a person reads. */
  label?: string;
}

/** An open call of any session of the project. */
export interface OpenCall extends CallKey {
  /** The project paths of a call scoped to named files; absent for a whole-tree call. */
  scope?: string[];
}

/** One change a segment saw, and the calls that could have made it. */
interface LoggedChange {
  path: string;
  from: Fingerprint;
  to: Fingerprint;
  by: CallKey[];
}

/** The time between two hook events while calls overlapped. */
interface Segment {
  open: CallKey[];
  changes: LoggedChange[];
}

/** A change of a call's window that another call also could have made (or made in part). */
export interface SharedChange {
  path: string;
  /** The other calls open when the file changed. */
  with: CallKey[];
}

/** What the log says about one change of a call's window. */
export type Attribution = { kind: 'own' } | { kind: 'other'; by: CallKey[] } | { kind: 'shared'; with: CallKey[] };

const LOG_STATE = 'overlap-segments';
const MARK_NAME = 'hook-events';

/** True for the whole-turn call of an agent turn (`turn:<boundary id>`). */
function isTurnCall(callId: string): boolean {
  return callId.startsWith('turn:');
}

function key(call: CallKey): CallKey {
  return { session: call.session, callId: call.callId, ...(call.label !== undefined ? { label: call.label } : {}) };
}

function same(a: CallKey, b: CallKey): boolean {
  return a.session === b.session && a.callId === b.callId;
}

/** Every open call of every session of the project, from the persisted call baselines. */
export async function projectOpenCalls(store: CheckpointStore): Promise<OpenCall[]> {
  const open: OpenCall[] = [];
  for (const name of await store.listState('call-')) {
    const baseline = parseBaseline(await store.readState(name).catch(() => undefined));
    if (baseline === undefined || baseline.sessionId === MARK_SESSION) continue;
    open.push({
      session: baseline.sessionId,
      callId: baseline.callId,
      ...(baseline.command !== undefined ? { label: baseline.command } : {}),
      ...(baseline.scope !== undefined ? { scope: baseline.scope } : {}),
    });
  }
  return open;
}

/**
 * True when some change could have been made by either of two open calls, one of them whole-tree:
 * two tool calls, or calls of two sessions. A turn and its own session's calls never contend
 * (the turn owns them), nor do two calls that each name their files.
 */
export function overlapping(open: readonly OpenCall[]): boolean {
  for (let i = 0; i < open.length; i++) {
    for (let j = i + 1; j < open.length; j++) {
      const a = open[i] as OpenCall;
      const b = open[j] as OpenCall;
      const contend = a.session !== b.session || (!isTurnCall(a.callId) && !isTurnCall(b.callId));
      if (contend && (a.scope === undefined || b.scope === undefined)) return true;
    }
  }
  return false;
}

/** The open calls that could have changed `path`. Pure. */
export function candidatesOf(path: string, open: readonly OpenCall[]): OpenCall[] {
  const tools = open.filter((c) => !isTurnCall(c.callId));
  const naming = tools.filter((c) => c.scope?.includes(path) === true);
  if (naming.length > 0) return naming;
  if (tools.length > 0) return tools;
  return [...open];
}

/** True when what `candidate` made is `call`'s own: the same call, or, for a turn, any call of its session. */
function belongs(candidate: CallKey, call: CallKey): boolean {
  return isTurnCall(call.callId) ? candidate.session === call.session : same(candidate, call);
}

function unique(calls: readonly CallKey[]): CallKey[] {
  const out: CallKey[] = [];
  for (const call of calls) if (!out.some((c) => same(c, call))) out.push(key(call));
  return out;
}

/**
 * What one change of `call`'s window (from `from` to `to`) is, given the logged segments the call
 * was open in (oldest first). Unlogged stretches of the window had no overlap: a change made there
 * is the call's own. Another call's when every logged change of the path is another call's and
 * together they make the whole change; shared otherwise. Pure.
 */
export function attributionOf(call: CallKey, change: { path: string; from: Fingerprint; to: Fingerprint }, segments: readonly Segment[]): Attribution {
  const steps = segments.filter((s) => s.open.some((c) => same(c, call))).flatMap((s) => s.changes.filter((c) => c.path === change.path));
  if (steps.length === 0) return { kind: 'own' };
  const foreign = unique(steps.flatMap((s) => s.by.filter((c) => !belongs(c, call))));
  if (foreign.length === 0) return { kind: 'own' };
  const allForeign = steps.every((s) => s.by.every((c) => !belongs(c, call)));
  const whole = steps[0]?.from === change.from && steps.at(-1)?.to === change.to && steps.every((s, i) => i === 0 || steps[i - 1]?.to === s.from);
  if (allForeign && whole) return { kind: 'other', by: foreign };
  return { kind: 'shared', with: foreign };
}

function parseLog(value: unknown): Segment[] {
  const segments = (value as { segments?: unknown } | undefined)?.segments;
  if (!Array.isArray(segments)) return [];
  return segments.filter(
    (s): s is Segment => typeof s === 'object' && s !== null && Array.isArray((s as Segment).open) && Array.isArray((s as Segment).changes),
  );
}

function fingerprintOfChange(state: Change['before']): Fingerprint {
  return state === undefined ? 'absent' : (fingerprintOf(state) ?? 'absent');
}

/**
 * Splits the overlapping calls' windows at a hook event, before the event does its own work
 * (hold the store lock across both): while calls overlap — before the event, or once it has
 * opened `opening` — the tree is pictured and what changed since the last event is logged with
 * the calls open meanwhile. Segments no open call is in any more are dropped. Returns the number
 * of changes logged.
 */
export async function splitAtEvent(observer: CheckpointObserver, change: { opening?: OpenCall; closing?: (call: OpenCall) => boolean } = {}): Promise<number> {
  const store = storeBehind(observer.store);
  const open = await projectOpenCalls(store);
  const before = overlapping(open);
  const remaining = open.filter((c) => change.closing?.(c) !== true);
  const after = overlapping(change.opening !== undefined ? [...remaining, change.opening] : remaining);
  const log = parseLog(await store.readState(LOG_STATE).catch(() => undefined));
  // A segment matters while a call open in it can still end and ask.
  const kept = log.filter((s) => s.open.some((c) => open.some((o) => same(o, c))));
  if (!before && !after) {
    if (kept.length !== log.length) await writeLog(store, kept);
    return 0;
  }
  const mark = await observer.treeMark(MARK_NAME, { keep: after });
  let logged = 0;
  if (before && !mark.first && mark.changes.length > 0) {
    const changes = mark.changes.map((c) => ({ path: c.path, from: fingerprintOfChange(c.before), to: fingerprintOfChange(c.after), by: candidatesOf(c.path, open).map(key) }));
    kept.push({ open: open.map(key), changes });
    logged = changes.length;
  }
  if (logged > 0 || kept.length !== log.length) await writeLog(store, kept);
  return logged;
}

async function writeLog(store: CheckpointStore, segments: Segment[]): Promise<void> {
  if (segments.length === 0) await store.deleteState(LOG_STATE);
  else await store.writeState(LOG_STATE, { format: 'turnback-overlap-segments', version: 1, segments }, { durable: false });
}

function sharedStateName(session: string, callId: string): string {
  return `overlap-${createHash('sha256').update(`${session}\0${callId}`).digest('hex').slice(0, 24)}`;
}

/**
 * The `omit` of a whole-tree call's end (see `CallEndOptions.omit`): the changes another call
 * made are left out; the shared ones are kept with the call (so a forced undo has their
 * pre-image) and recorded, for its undo to refuse.
 */
export function omitOthers(observer: CheckpointObserver, call: CallKey): (changes: readonly Change[]) => Promise<string[]> {
  return async (changes) => {
    const store = storeBehind(observer.store);
    const segments = parseLog(await store.readState(LOG_STATE).catch(() => undefined));
    if (segments.length === 0) return [];
    const others: string[] = [];
    const shared: SharedChange[] = [];
    for (const change of changes) {
      const attribution = attributionOf(call, { path: change.path, from: fingerprintOfChange(change.before), to: fingerprintOfChange(change.after) }, segments);
      if (attribution.kind === 'other') others.push(change.path);
      else if (attribution.kind === 'shared') shared.push({ path: change.path, with: attribution.with });
    }
    if (shared.length > 0) await store.writeState(sharedStateName(call.session, call.callId), { format: 'turnback-overlap', version: 1, session: call.session, callId: call.callId, shared }, { durable: false });
    return others;
  };
}

/** The changes of call `callId` of `session` that another call open at the time could have made too (its undo refuses them). */
export async function sharedChanges(view: StoreView, session: string, callId: string): Promise<SharedChange[]> {
  const value = (await storeBehind(view).readState(sharedStateName(session, callId)).catch(() => undefined)) as { shared?: unknown } | undefined;
  if (!Array.isArray(value?.shared)) return [];
  return (value.shared as SharedChange[]).filter((s) => typeof s?.path === 'string' && Array.isArray(s.with));
}

/** `apply_patch b.txt (codex)`: how a reason names another call. */
export function callWords(call: CallKey): string {
  const agent = call.session.split(':')[0] ?? call.session;
  if (isTurnCall(call.callId)) return `${agent}'s turn${call.label !== undefined ? ` "${call.label}"` : ''}`;
  return `${call.label ?? `call ${call.callId}`} (${agent})`;
}
