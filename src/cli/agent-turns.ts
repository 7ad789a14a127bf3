import { callWords, parseAgentSessionId, sharedChanges, turnCallId } from '../hooks.js';
import { isCheckpointError, type CheckpointId, type CheckpointMeta, type StoreView } from '../index.js';
import { observerFor, type CliContext } from './context.js';
import type { Picture } from './pictures.js';

// The pictures an agent's hooks took (src/hooks/), as turns: each prompt is a boundary (a turn
// checkpoint labelled with the prompt), each tool call a call checkpoint after it, and the turn's
// own whole-tree call (`turn:<boundary id>`) says what the whole turn changed.

/** One agent turn, as `list` shows it. */
export interface AgentTurn {
  /** `claude`, `codex`, …, or `acp`. */
  agent: string;
  /** The agent's own session id. */
  session: string;
  /** 1 for the session's first prompt. */
  turn: number;
  /** The boundary: undoing to it undoes this turn (and any later one). */
  boundary: Picture;
  /** The turn's whole-tree call checkpoint (what the whole turn changed), once the turn ended. */
  whole?: Picture;
  /** The tool calls' checkpoints, newest first. */
  calls: Picture[];
}

/** The agent turn each picture belongs to (by id), and the turns themselves, newest first. */
export interface AgentTurns {
  turns: AgentTurn[];
  byPicture: Map<CheckpointId, AgentTurn>;
}

/** Groups the agent sessions' pictures of `pictures` (newest first) into turns. */
export async function agentTurns(store: StoreView, pictures: readonly Picture[]): Promise<AgentTurns> {
  const bySession = new Map<string, Picture[]>();
  for (const picture of pictures) {
    if (parseAgentSessionId(picture.sessionId) === undefined) continue;
    const list = bySession.get(picture.sessionId as string) ?? [];
    list.push(picture);
    bySession.set(picture.sessionId as string, list);
  }
  const turns: AgentTurn[] = [];
  const byPicture = new Map<CheckpointId, AgentTurn>();
  for (const [sessionId, newestFirst] of bySession) {
    const { agent, session } = parseAgentSessionId(sessionId) as { agent: string; session: string };
    const oldestFirst = [...newestFirst].reverse();
    const boundaries = oldestFirst.filter((p) => p.kind === 'turn' && p.label !== undefined && p.label.length > 0);
    const ofBoundary = new Map<string, AgentTurn>();
    boundaries.forEach((boundary, index) => {
      const turn: AgentTurn = { agent, session, turn: index + 1, boundary, calls: [] };
      ofBoundary.set(boundary.id, turn);
      byPicture.set(boundary.id, turn);
      turns.push(turn);
    });
    let current: AgentTurn | undefined;
    for (const picture of oldestFirst) {
      const own = ofBoundary.get(picture.id);
      if (own !== undefined) {
        current = own;
        continue;
      }
      if (picture.kind === 'call') {
        // The turn's own picture names its boundary; it may end after later turns began.
        const callId = (await store.manifest(picture.id).catch(() => undefined))?.calls[0]?.callId;
        const whole = callId?.startsWith('turn:') === true ? ofBoundary.get(callId.slice('turn:'.length)) : undefined;
        if (whole !== undefined && turnCallId(whole.boundary.id) === callId) {
          whole.whole = picture;
          byPicture.set(picture.id, whole);
          continue;
        }
      }
      if (current === undefined) continue;
      current.calls.unshift(picture);
      byPicture.set(picture.id, current);
    }
  }
  turns.sort((a, b) => (a.boundary.id < b.boundary.id ? 1 : -1));
  return { turns, byPicture };
}

/**
 * How many files the whole turn changed: its whole-turn picture's count (hook agents, once the
 * turn ended), or the boundary's own (an ACP turn records its calls in its boundary); `undefined`
 * while a hook agent's turn is still going.
 */
export function turnChanged(turn: AgentTurn): number | undefined {
  if (turn.whole !== undefined) return turn.whole.entryCount;
  return turn.boundary.entryCount > 0 || turn.agent === 'acp' ? turn.boundary.entryCount : undefined;
}

/** `claude 6f2a1b3c… · turn 3 "rename the parser"` */
export function turnTitle(turn: AgentTurn, shown: (text: string) => string): string {
  const session = turn.session.length > 8 ? `${turn.session.slice(0, 8)}…` : turn.session;
  return `${turn.agent} ${shown(session)} · turn ${turn.turn} "${shown(turn.boundary.label ?? '')}"`;
}

/**
 * The pictures an `undo` offers, newest first, with every agent turn as one entry — its
 * boundary, labelled `claude turn 3: <prompt>`, counting what the whole turn changed — in place
 * of its tool calls' and whole-turn pictures. So a bare `undo` takes back the last turn, and
 * `undo`, `undo` steps back turn by turn.
 */
export function turnsAsTargets(newestFirst: readonly Picture[], agents: AgentTurns): Picture[] {
  const targets: Picture[] = [];
  const seen = new Set<AgentTurn>();
  for (const picture of newestFirst) {
    const turn = agents.byPicture.get(picture.id);
    if (turn === undefined) {
      targets.push(picture);
      continue;
    }
    if (seen.has(turn)) continue;
    seen.add(turn);
    const changed = turnChanged(turn) ?? turn.calls.reduce((sum, call) => sum + call.entryCount, 0);
    targets.push({ ...turn.boundary, label: `${turn.agent} turn ${turn.turn}: ${turn.boundary.label ?? ''}`, entryCount: changed });
  }
  return targets;
}

/**
 * The checkpoint that holds what `meta` changed: for an agent turn's boundary (which records
 * nothing itself), the turn's whole-turn picture once the turn has ended; else `meta` itself. So
 * the id the list and the turn's end line offer shows, diffs and reverts the whole turn.
 */
export async function changesHolder(store: StoreView, meta: CheckpointMeta): Promise<CheckpointMeta> {
  if (meta.kind !== 'turn' || meta.entryCount > 0 || parseAgentSessionId(meta.sessionId) === undefined) return meta;
  const whole = turnCallId(meta.id);
  for (const other of await store.list()) {
    if (other.kind !== 'call' || other.sessionId !== meta.sessionId || other.id < meta.id) continue;
    const manifest = await store.manifest(other.id).catch(() => undefined);
    if (manifest?.calls.some((c) => c.callId === whole) === true) return other;
  }
  return meta;
}

/** What an undo of an agent's turn takes back when other agents' sessions worked in the project too. */
export interface SessionScope {
  /** The paths the session's own pictures changed, from the turn on, that no other session changed. */
  paths: string[];
  /** Paths only other sessions changed since: left as they are. */
  left: { path: string; by: string }[];
  /** Paths the session changed that another session changed too, or that changed while another's call ran: refused, with why. */
  refused: { path: string; why: string }[];
}

/**
 * The scope of an undo of agent turn `boundary`: its session's own changes from the turn on. The
 * turns of other agents' sessions that overlap in time are never taken back with it: what they
 * changed is left, and a path both changed, or that changed while another session's call was
 * open too, is refused (unless `forced`). `undefined` when no other agent session recorded
 * anything since the turn began: the undo is the plain restore to the turn's start.
 */
export async function sessionScope(store: StoreView, boundary: CheckpointMeta, forced: readonly string[]): Promise<SessionScope | undefined> {
  const session = boundary.sessionId;
  if (session === undefined || parseAgentSessionId(session) === undefined || boundary.kind !== 'turn') return undefined;
  const since = (await store.list()).filter((m) => m.id >= boundary.id && (m.kind === 'turn' || m.kind === 'call') && m.entryCount > 0).sort((a, b) => (a.id < b.id ? -1 : 1));
  const others = since.filter((m) => m.sessionId !== session && parseAgentSessionId(m.sessionId) !== undefined);
  if (others.length === 0) return undefined;
  const ownAfter = new Map<string, Set<string | undefined>>();
  const refused = new Map<string, string>();
  for (const meta of since.filter((m) => m.sessionId === session)) {
    const manifest = await store.manifest(meta.id as CheckpointId);
    for (const entry of manifest.entries) {
      const ends = ownAfter.get(entry.path) ?? new Set();
      ends.add(entry.after);
      ownAfter.set(entry.path, ends);
    }
    for (const call of manifest.calls) {
      for (const change of await sharedChanges(store, session, call.callId)) {
        const foreign = change.with.filter((c) => c.session !== session);
        if (foreign.length > 0 && !refused.has(change.path)) refused.set(change.path, `changed while ${foreign.map(callWords).join(', ')} ran too`);
      }
    }
  }
  const left = new Map<string, string>();
  for (const meta of others) {
    const manifest = await store.manifest(meta.id as CheckpointId);
    const agent = parseAgentSessionId(meta.sessionId)?.agent ?? 'another agent';
    const by = `${agent}: ${meta.label ?? meta.kind}`;
    for (const entry of manifest.entries) {
      const ours = ownAfter.get(entry.path);
      // A picture of theirs whose window held our change ends the path where ours did.
      if (ours === undefined) {
        if (!left.has(entry.path)) left.set(entry.path, by);
      } else if (!ours.has(entry.after) && !refused.has(entry.path)) refused.set(entry.path, `changed by ${by} too`);
    }
  }
  for (const path of forced) refused.delete(path);
  const paths = [...ownAfter.keys()].filter((p) => !refused.has(p)).sort();
  return {
    paths,
    left: [...left].filter(([p]) => !ownAfter.has(p)).map(([path, by]) => ({ path, by })),
    refused: [...refused].filter(([p]) => ownAfter.has(p)).map(([path, why]) => ({ path, why })),
  };
}

/**
 * Ends the tool and turn calls agents' hooks left open — a turn still going, or one whose after
 * and stop events never came (the person interrupted the agent) — as the session's next prompt
 * would, so what they changed is recorded and an undo can take it back: until then their
 * pictures are call baselines no checkpoint names, and `list` offered the turn while `undo`
 * found nothing. Returns the sessions whose calls were ended, with how many.
 */
export async function endOpenAgentCalls(context: CliContext, store: StoreView): Promise<{ sessionId: string; ended: number }[]> {
  const sessions = new Set<string>();
  for (const meta of await store.list()) {
    const agent = parseAgentSessionId(meta.sessionId);
    // ACP sessions live in their proxy's process: their calls are its own, never detached.
    if (agent !== undefined && agent.agent !== 'acp') sessions.add(meta.sessionId as string);
  }
  const done: { sessionId: string; ended: number }[] = [];
  for (const sessionId of sessions) {
    const observer = observerFor(context, store, sessionId);
    try {
      let ended = 0;
      for (const call of await observer.openCalls()) {
        if (!call.detached) continue;
        try {
          await observer.callEnd(call.callId, { sideEffect: 'filesystem' });
          ended += 1;
        } catch (error) {
          // The agent's own event ended it meanwhile.
          if (!isCheckpointError(error, 'UNKNOWN_CALL')) throw error;
        }
      }
      if (ended > 0) done.push({ sessionId, ended });
    } finally {
      await observer.close().catch(() => undefined);
    }
  }
  return done;
}
