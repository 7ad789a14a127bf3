import { parseAgentSessionId, turnCallId } from '../hooks.js';
import { isCheckpointError, type CheckpointId, type StoreView } from '../index.js';
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

/** The checkpoint that recorded agent tool call `callId` (its own call checkpoint, or a turn that holds it). */
export async function checkpointOfCall(store: StoreView, callId: string): Promise<CheckpointId | undefined> {
  const metas = (await store.list()).filter((m) => m.kind === 'call' || m.kind === 'turn').sort((a, b) => (a.id < b.id ? 1 : -1));
  for (const meta of metas) {
    const manifest = await store.manifest(meta.id).catch(() => undefined);
    if (manifest?.calls.some((c) => c.callId === callId) === true) return meta.id;
  }
  return undefined;
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
