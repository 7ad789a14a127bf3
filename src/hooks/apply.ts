import * as path from 'node:path';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { Change } from '../capture/diff.js';
import { realPathOf } from '../fs/paths.js';
import type { CheckpointObserver } from '../session/observer.js';
import { storeBehind } from '../store/view.js';
import { classifyTool, namedPaths, pairingKey, promptLabel, type HookEvent } from './events.js';
import type { AgentSpec } from './agents.js';
import { lastTurnToolCalls, missedCalls, missedNote, type ArrivedCalls, type MissedCall, type TranscriptCall } from './transcript.js';
import { readTranscriptTail } from './transcript-read.js';
import { CALL_NOTES_MAX, type CheckpointMeta } from '../core/model.js';
import { omitOthers, sharedChanges, splitAtEvent, type OpenCall } from './overlap.js';
import { shownText } from '../report/escape.js';
import { ignoredDeletedText } from '../report/reasons.js';

// What each hook event does to the agent session's observer. Every event runs in a process of
// its own (a hook is a new process per event, served or not), so nothing is kept in memory
// between events: a turn is a boundary checkpoint plus a whole-tree call named after it, a tool
// call is a detached call named by the agent's tool-call id, and the store is what links them.
//
//   prompt       end what the last turn left open; a boundary (labelled with the prompt's first
//                line) and a whole-tree picture for the turn (call `turn:<boundary id>`); an
//                empty prompt while a turn is open changes nothing (the agent going on)
//   before-tool  read-only tools: nothing; a write tool naming its files: a picture of those
//                files alone; anything else (a shell, an MCP tool, a tool turnback does not
//                know): a whole-tree picture
//   after-tool   the call's end: what it changed, attributed to it; a network tool's call is
//                listed as irreversible
//   stop         the turn's end: what the whole turn changed (every tool, and any change no tool
//                event bracketed), and the line the person sees; calls left open are ended
//   session-end  every call left open is ended

/** What one event did, for the log and the agent. */
export interface HookOutcome {
  /** What happened, in a few words (`turn 3 began`, `call toolu_1 ended: 2 changed`). */
  action: string;
  /** The line the person sees in the agent, when the agent shows one (the turn's end). */
  message?: string;
}

/** The call id of a turn's whole-tree picture. */
export function turnCallId(boundary: CheckpointId | string): string {
  return `turn:${boundary}`;
}

/** The boundaries of this observer's session, oldest first: its labelled turns (from `metas`, the store's list, when the caller has it already). */
async function boundaries(observer: CheckpointObserver, metas?: readonly CheckpointMeta[]): Promise<{ id: CheckpointId; label: string }[]> {
  return (metas ?? (await observer.store.list()))
    .filter((m) => m.sessionId === observer.sessionId && m.kind === 'turn' && m.label !== undefined && m.label.length > 0)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((m) => ({ id: m.id, label: m.label as string }));
}

/** Ends every call of the session still open (a turn or tool whose end never came); returns how many. */
async function endOpenCalls(observer: CheckpointObserver, except?: string): Promise<number> {
  let ended = 0;
  for (const call of await observer.openCalls()) {
    if (call.callId === except) continue;
    try {
      await observer.callEnd(call.callId, { sideEffect: 'filesystem', omit: omitOthers(observer, { session: observer.sessionId, callId: call.callId }) });
      ended += 1;
    } catch (error) {
      // Another event of the session ended it meanwhile.
      if (!isCheckpointError(error, 'UNKNOWN_CALL')) throw error;
    }
  }
  return ended;
}

/** `3 changed, 1 new, 1 deleted`, or `no file changed`. */
export function changeCounts(changes: readonly Pick<Change, 'kind'>[]): string {
  const count = (kind: Change['kind']): number => changes.filter((c) => c.kind === kind).length;
  const parts = [
    [count('changed'), 'changed'],
    [count('created'), 'new'],
    [count('deleted'), 'deleted'],
  ]
    .filter(([n]) => (n as number) > 0)
    .map(([n, word]) => `${n as number} ${word as string}`);
  return parts.length === 0 ? 'no file changed' : parts.join(', ');
}

/** ` (partial: …)` for a picture its budget or a limit cut short, so the log never reads a cut picture as a whole one. */
function partialWords(result: { partial: boolean; summary: string }): string {
  return result.partial ? ` (partial: ${result.summary !== '' ? result.summary : 'a picture was cut short'})` : '';
}

/** True when `absolute` is below the project root (a write outside the project is not ours to keep). */
function insideProject(projectRoot: string, absolute: string): boolean {
  const relative = path.relative(projectRoot, absolute);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/**
 * The files a write tool names that are in the project, as real paths: the agent may reach the
 * project through a symlink (its `cwd`, or the path it gives), and the project root is
 * canonical, so each path is resolved first (see `realPathOf`). A final component that is a link
 * gives both the link's own entry and where it points, each kept when inside.
 */
async function writtenInside(projectRoot: string, paths: readonly string[]): Promise<string[]> {
  const inside = new Set<string>();
  for (const named of paths) {
    const { real, link } = await realPathOf(named, projectRoot);
    for (const candidate of link === undefined ? [real] : [link, real]) if (insideProject(projectRoot, candidate)) inside.add(candidate);
  }
  return [...inside];
}

/** The short id a person types (`turnback undo 1a2b3c4d`). */
function shortIdOf(id: string): string {
  return id.slice(-8);
}

/** The label a tool call's checkpoint carries: `Bash: npm test`, `Edit src/a.ts`. */
function callLabel(event: HookEvent, projectRoot: string): string {
  const tool = event.toolName ?? 'tool';
  if (event.toolClass === 'write' && event.paths !== undefined) return `${tool} ${event.paths.map((p) => path.relative(projectRoot, p)).join(' ')}`;
  if (event.command !== undefined) return `${tool}: ${event.command}`;
  return tool;
}

/** The open call an after event ends: the agent's id, or the oldest open call of the same tool and input. */
async function callIdFor(observer: CheckpointObserver, event: HookEvent, opening: boolean): Promise<string> {
  if (event.toolCallId !== undefined) return event.toolCallId;
  const key = pairingKey(event);
  const open = (await observer.openCalls()).filter((c) => c.callId.startsWith(`${key}#`));
  if (opening) return `${key}#${Date.now().toString(36)}-${open.length}`;
  return open[0]?.callId ?? `${key}#none`;
}

/** How long an event waits for another session's event to finish with the store (the agents' hook timeout is 30 s). */
const EVENT_LOCK_MS = 20_000;

/** Options of {@link applyHookEvent}. */
export interface ApplyHookOptions {
  /**
   * Epoch milliseconds by which the event's work ends (the hook's budget: the agent goes ahead
   * then). An event still waiting for the store lock then gives up, with a `STORE_BUSY` error that
   * says what is not recorded: begun later, its picture could hold what the agent did meanwhile.
   * @default wait up to 20 s
   */
  deadline?: number;
  /** The budget in seconds, for the words of that error. */
  budgetSeconds?: number;
  /**
   * The agent whose hook this is: with it, an event that carries the agent's transcript compares
   * the turn's tool calls there with those that arrived (transcript.ts), sweeps the whole tree
   * when one did not, and the turn's end names each missed call. @default no comparison
   */
  agent?: AgentSpec;
}

/** What turnback recorded of the calls of the session since `boundary` (in `metas`, the store's list): begun (a picture taken), and still open. */
async function arrivedSince(observer: CheckpointObserver, boundary: CheckpointId, metas: readonly CheckpointMeta[]): Promise<ArrivedCalls> {
  const open = new Set((await observer.openCalls()).map((call) => call.callId));
  const began = new Set(open);
  for (const meta of metas) {
    if (meta.sessionId !== observer.sessionId || meta.id <= boundary) continue;
    const manifest = await observer.store.manifest(meta.id).catch(() => undefined);
    for (const call of manifest?.calls ?? []) began.add(call.callId);
  }
  return { began, open };
}

/** True when turnback pictures `call` (the same test its before event takes): a tool the hooks bracket, not read-only, not a write outside the project. */
async function picturedCall(spec: AgentSpec, projectRoot: string, cwd: string, call: TranscriptCall): Promise<boolean> {
  if (spec.toolMatcher !== undefined && !new RegExp(`^(?:${spec.toolMatcher})$`).test(call.name)) return false;
  const named = namedPaths(call.name, call.input);
  const toolClass = classifyTool(spec, call.name, named);
  if (toolClass === 'read-only') return false;
  return toolClass !== 'write' || (await writtenInside(projectRoot, named.map((p) => path.resolve(cwd, p)))).length > 0;
}

/** The label a missed call is named by, as its picture would have been (`Bash: npm test`, `Write notes.txt`). */
function missedLabel(spec: AgentSpec, projectRoot: string, cwd: string, call: MissedCall): string {
  const named = namedPaths(call.name, call.input);
  const command = typeof call.input.command === 'string' ? call.input.command : undefined;
  return callLabel({ kind: 'before-tool', eventName: 'PreToolUse', session: '', toolName: call.name, toolClass: classifyTool(spec, call.name, named), paths: named.map((p) => path.resolve(cwd, p)), ...(command !== undefined ? { command } : {}) }, projectRoot);
}

/**
 * The calls of the open turn (since `boundary`) whose events did not reach turnback, from the
 * agent's transcript; none when the event names no transcript or it cannot be read.
 */
async function turnMissedCalls(observer: CheckpointObserver, event: HookEvent, boundary: CheckpointId, spec: AgentSpec | undefined, metas: readonly CheckpointMeta[]): Promise<{ call: MissedCall; label: string }[]> {
  if (spec === undefined || event.transcriptPath === undefined) return [];
  const text = readTranscriptTail(event.transcriptPath);
  if (text === undefined) return [];
  const calls = lastTurnToolCalls(text);
  if (calls.length === 0) return [];
  const cwd = event.cwd ?? observer.projectRoot;
  const pictured = new Set<string>();
  for (const call of calls) if (call.id !== event.toolCallId && (await picturedCall(spec, observer.projectRoot, cwd, call))) pictured.add(call.id);
  // No other call of the turn that turnback pictures (a turn's first call): nothing can be
  // missed, and what arrived (the session's open calls, the manifests since the turn began) is not read.
  if (pictured.size === 0) return [];
  const missed = missedCalls(calls, await arrivedSince(observer, boundary, metas), (call) => pictured.has(call.id), event.toolCallId);
  return missed.map((call) => ({ call, label: missedLabel(spec, observer.projectRoot, cwd, call) }));
}

/** The notes a turn keeps for its missed calls: one per call, the last saying how many more when they pass the record's limit. */
function missedNotes(missed: readonly { call: MissedCall; label: string }[]): string[] {
  const notes = missed.map(({ call, label }) => missedNote(call, shownText(label)));
  if (notes.length <= CALL_NOTES_MAX) return notes;
  return [...notes.slice(0, CALL_NOTES_MAX - 1), `${missed.length - CALL_NOTES_MAX + 1} more calls were not pictured (their hooks did not reach turnback): ${missed.slice(CALL_NOTES_MAX - 1).map((m) => m.call.id).join(', ')}`.slice(0, 500)];
}

/** What an event that could not have the store in time leaves unrecorded, in words. */
function notRecorded(event: HookEvent): string {
  switch (event.kind) {
    case 'prompt':
      return 'the turn is not begun (its tool calls are still pictured one by one)';
    case 'before-tool':
      return `the ${event.toolName ?? 'tool'} call is not pictured (the turn's picture holds what it changes)`;
    case 'after-tool':
      return `the ${event.toolName ?? 'tool'} call stays open (the turn's end pictures it)`;
    case 'stop':
      return "the turn stays open (the next prompt's hook ends it)";
    case 'session-end':
      return "the session's open calls stay open";
  }
}

/**
 * Applies one hook event to `observer`, whose session is the agent's (see `agentSessionId`).
 * Throws what the store throws: the caller (the hook command) logs it and exits 0.
 *
 * Events of every session of the project take turns (the store lock), so that the split of
 * overlapping calls' windows at this event (see overlap.ts) and the event's own pictures see the
 * same moment.
 */
export async function applyHookEvent(observer: CheckpointObserver, event: HookEvent, options: ApplyHookOptions = {}): Promise<HookOutcome> {
  const left = options.deadline === undefined ? EVENT_LOCK_MS : Math.min(EVENT_LOCK_MS, options.deadline - Date.now());
  const late = (detail: string): CheckpointError =>
    new CheckpointError('STORE_BUSY', `${detail} until this hook's ${options.budgetSeconds !== undefined ? `${options.budgetSeconds} s ` : ''}budget ran out: ${notRecorded(event)}`);
  if (left <= 0) throw late('other events held the store');
  let began = false;
  try {
    return await storeBehind(observer.store).withLock(
      () => {
        began = true;
        return applyLocked(observer, event, options.agent);
      },
      { timeoutMs: left },
    );
  } catch (error) {
    if (!began && isCheckpointError(error, 'STORE_BUSY')) throw late(error.message.replace(/^the store is locked/, 'the store was locked'));
    throw error;
  }
}

async function applyLocked(observer: CheckpointObserver, event: HookEvent, agent: AgentSpec | undefined): Promise<HookOutcome> {
  const session = observer.sessionId;
  const ofSession = (call: OpenCall): boolean => call.session === session;
  switch (event.kind) {
    case 'prompt': {
      // A person's prompt is never empty: an empty one inside an open turn is the agent going
      // on. Qwen Code fires UserPromptSubmit before every model request of a turn, the ones that
      // carry tool results too, with those requests' text as the prompt: none
      // (GeminiClient.sendMessageStream, packages/core/src/core/client.ts).
      if ((event.prompt ?? '').trim().length === 0) {
        const turns = await boundaries(observer);
        const last = turns.at(-1);
        const open = last !== undefined && (await observer.openCalls()).some((c) => c.callId === turnCallId(last.id));
        if (open) return { action: `an empty prompt inside turn ${turns.length}: the turn goes on` };
      }
      await splitAtEvent(observer, { opening: { session, callId: 'turn:' }, closing: ofSession });
      const ended = await endOpenCalls(observer);
      const label = promptLabel(event.prompt);
      const boundary = await observer.beginTurn({ label });
      await observer.callBegin(turnCallId(boundary), { command: label, detached: true });
      const turn = (await boundaries(observer)).length;
      return { action: `turn ${turn} began (${boundary})${ended > 0 ? `; ${ended} call(s) left open were ended` : ''}` };
    }
    case 'before-tool': {
      if (event.toolClass === 'read-only') return { action: `${event.toolName ?? 'tool'}: read-only, nothing pictured` };
      const callId = await callIdFor(observer, event, true);
      // A call of this turn whose events did not get through (an HTTP hook that could not reach
      // the server): this event sweeps the whole tree, so what that call did is pictured now.
      // One read of the store's list for the turn and what arrived since it began.
      const metas = agent !== undefined && event.transcriptPath !== undefined ? await observer.store.list() : undefined;
      const turn = metas !== undefined ? (await boundaries(observer, metas)).at(-1) : undefined;
      const missed = turn === undefined || metas === undefined ? [] : await turnMissedCalls(observer, event, turn.id, agent, metas);
      // A call whose after event was missed ends here, so its window stops at this picture, not at the turn's end.
      const open = new Set((await observer.openCalls()).map((call) => call.callId));
      let closed = 0;
      for (const { call } of missed) {
        if (!call.missing.includes('PostToolUse') || !open.has(call.id)) continue;
        await splitAtEvent(observer, { closing: (other) => ofSession(other) && other.callId === call.id });
        await observer.callEnd(call.id, { sideEffect: 'filesystem', omit: omitOthers(observer, { session, callId: call.id }) });
        closed += 1;
      }
      const swept = missed.length > 0 ? `; swept the whole tree: ${missed.length} call(s) of this turn not pictured (${missed.map((m) => m.call.id).join(', ')})${closed > 0 ? `, ${closed} ended here` : ''}` : '';
      if (event.toolClass === 'write' && event.paths !== undefined && missed.length === 0) {
        const inside = await writtenInside(observer.projectRoot, event.paths);
        if (inside.length === 0) return { action: `${event.toolName ?? 'tool'}: writes outside the project only, nothing pictured` };
        const scope = inside.map((p) => path.relative(observer.projectRoot, p).split(path.sep).join('/'));
        await splitAtEvent(observer, { opening: { session, callId, scope } });
        const begun = await observer.callBegin(callId, { paths: inside, command: callLabel({ ...event, paths: inside }, observer.projectRoot), detached: true });
        return { action: `call ${callId} began: ${inside.length} named file(s)${partialWords(begun)}` };
      }
      await splitAtEvent(observer, { opening: { session, callId } });
      const begun = await observer.callBegin(callId, { command: callLabel(event, observer.projectRoot), detached: true });
      return { action: `call ${callId} began: whole tree${partialWords(begun)}${swept}` };
    }
    case 'after-tool': {
      if (event.toolClass === 'read-only') return { action: `${event.toolName ?? 'tool'}: read-only` };
      const callId = await callIdFor(observer, event, false);
      await splitAtEvent(observer, { closing: (call) => ofSession(call) && call.callId === callId });
      try {
        const attribution = await observer.callEnd(callId, { sideEffect: event.toolClass === 'network' ? 'network' : 'filesystem', omit: omitOthers(observer, { session, callId }) });
        return { action: `call ${callId} ended: ${changeCounts(attribution.changes)}${partialWords(attribution)}` };
      } catch (error) {
        // No before event on record (hooks installed mid-call, or it was ended as stale): the
        // turn's picture still attributes what the call did.
        if (isCheckpointError(error, 'UNKNOWN_CALL')) return { action: `call ${callId}: no before event on record; the turn's picture covers it` };
        throw error;
      }
    }
    case 'stop': {
      await splitAtEvent(observer, { closing: ofSession });
      const metas = await observer.store.list();
      const turns = await boundaries(observer, metas);
      const last = turns.at(-1);
      const open = new Set((await observer.openCalls()).map((c) => c.callId));
      if (last === undefined || !open.has(turnCallId(last.id))) {
        const ended = await endOpenCalls(observer);
        return { action: `no turn open${ended > 0 ? `; ${ended} call(s) ended` : ''}` };
      }
      // Before the open calls are ended: a call still open now is one whose after event never came.
      const missed = await turnMissedCalls(observer, event, last.id, agent, metas);
      const ended = await endOpenCalls(observer, turnCallId(last.id));
      const turnCall = turnCallId(last.id);
      // The whole-tree picture also saw what other calls open meanwhile did (another session's):
      // those are left out of the turn, and the person is told this turn's own changes. The
      // calls whose hooks did not get through are named with the turn, one by one.
      const notes = missedNotes(missed);
      const attribution = await observer.callEnd(turnCall, { sideEffect: 'filesystem', omit: omitOthers(observer, { session, callId: turnCall }), ...(notes.length > 0 ? { notes } : {}) });
      const missedWords = missed.length > 0 ? `${missed.length} ${missed.length === 1 ? 'call' : 'calls'} not pictured, their hooks did not reach turnback (turnback show ${shortIdOf(last.id)})` : '';
      const shared = new Set((await sharedChanges(observer.store, session, turnCall)).map((s) => s.path));
      const own = attribution.changes.filter((change) => !shared.has(change.path));
      const counts = changeCounts(own);
      const sharedWords = shared.size > 0 ? `; ${shared.size} more changed while another agent's call ran too (undo asks before taking ${shared.size === 1 ? 'it' : 'them'} back)` : '';
      // What the pictures passed over and the turn deleted has no copy: said once, as `run` says it.
      const ignored = ignoredDeletedText(attribution.ignoredDeleted ?? []);
      const action = `turn ${turns.length} ended: ${counts}${sharedWords}${ignored !== '' ? `; ${ignored}` : ''}${ended > 0 ? `; ${ended} call(s) left open were ended` : ''}${missed.length > 0 ? `; not pictured: ${missed.map((m) => m.call.id).join(', ')}` : ''}`;
      if (own.length === 0 && shared.size === 0) {
        const said = [ignored, missedWords].filter((words) => words !== '').join(' · ');
        return said === '' ? { action } : { action, message: `turnback: ${said}` };
      }
      // A walk stopped by a limit says how much it left, in the line the person sees.
      const stopped = attribution.gaps.find((gap) => gap.reason === 'walk-entries' || gap.reason === 'time-limit');
      const gaps = stopped !== undefined ? ` (picture cut short: ${shownText(stopped.detail)})` : attribution.partial ? ' (some files had no copy: turnback status says which)' : '';
      return { action, message: `turnback: ${counts}${sharedWords}${gaps} · turnback undo ${shortIdOf(last.id)}${ignored !== '' ? ` · ${ignored}` : ''}${missedWords !== '' ? ` · ${missedWords}` : ''}` };
    }
    case 'session-end': {
      await splitAtEvent(observer, { closing: ofSession });
      const ended = await endOpenCalls(observer);
      return { action: `session ended${ended > 0 ? `; ${ended} call(s) left open were ended` : ''}` };
    }
  }
}
