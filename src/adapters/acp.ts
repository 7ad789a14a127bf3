import { RequestError, type AgentApp } from '@agentclientprotocol/sdk';
import { isCheckpointError } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { SideEffect } from '../core/model.js';
import type { CallAttribution } from '../session/calls.js';
import type { CheckpointObserver } from '../session/observer.js';
import { openCheckpoints, type CheckpointConfigInput } from '../session/open.js';
import { isUnavailable, type Unavailable, type UnavailableCheckpoints } from '../session/unavailable.js';

// The agent side of the Agent Client Protocol (`@agentclientprotocol/sdk` 2.x, an optional peer
// dependency of this entry only): seed 000's `session/workspace_checkpoint` on an SDK agent app,
// each session's checkpoints rooted at its cwd, advertised in the `initialize` response.

/** The method a client calls (ACP's un-prefixed name, as seed 000 gives it). */
export const WORKSPACE_CHECKPOINT_METHOD = 'session/workspace_checkpoint';
/** The same method under turnback's own prefix (ACP reserves un-prefixed names for the protocol). */
export const WORKSPACE_CHECKPOINT_ALIAS = '_turnback/workspace_checkpoint';

const ACTIONS = ['capture', 'call_begin', 'call_end', 'plan', 'restore', 'drop'] as const;
const SIDE_EFFECTS: readonly SideEffect[] = ['none', 'filesystem', 'network', 'desktop_control'];

/** The params of `session/workspace_checkpoint`, checked. */
export interface WorkspaceCheckpointParams {
  sessionId: string;
  action: (typeof ACTIONS)[number];
  boundaryId?: string;
  callId?: string;
  sideEffect?: SideEffect;
  paths?: string[];
}

/** What {@link withWorkspaceCheckpoints} takes. */
export interface AcpCheckpointOptions {
  /** turnback's config (`[capabilities.checkpoint]`): disabled unless it enables checkpoints. */
  config: CheckpointConfigInput;
  /** Environment for the default store folder and the home folder. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * The transcript half of `session/rollback` and `session/redo`: the agent moves its
   * conversation to (rollback) or back past (redo) the prompt `boundaryId` began. Without it only
   * the files are rolled back, and the answer says so.
   */
  onTranscript?: (request: { sessionId: string; direction: 'rollback' | 'redo'; boundaryId: string }) => Promise<void> | void;
}

/** The methods of seed 003 this helper answers, each also under `_turnback/…`. */
export const ROLLBACK_METHOD = 'session/rollback';
/** Re-applies the last rollback. */
export const REDO_METHOD = 'session/redo';
/** Restores one ended tool call's own pre-images. */
export const RESTORE_TOOL_CALL_METHOD = 'session/restore_tool_call';

/** What `session/rollback` and `session/redo` answer: which halves ran. */
export interface TurnMoveResult {
  available: true;
  boundaryId: string;
  /** The files' half: `restored` through the engine (saved first), or `failed` with the receipt. */
  files: 'restored' | 'failed';
  /** The conversation's half: the agent's callback ran, failed, or was not given. */
  transcript: 'moved' | 'failed' | 'not-provided';
  /** The restore's receipt (its `preRestoreId` is what a redo writes back). */
  receipt: object;
}

interface SessionCheckpoints {
  checkpoints: Promise<CheckpointObserver | UnavailableCheckpoints>;
  /** The client's boundary ids → turnback checkpoint ids, in capture order. */
  boundaries: Map<string, CheckpointId>;
  /** Boundaries rolled back, newest last, each with the save its restore made (what a redo writes back). */
  rolledBack: { boundaryId: string; preRestoreId: CheckpointId }[];
  /** Ended tool calls: the checkpoint each was recorded in, and what it changed. */
  calls: Map<string, { turn: CheckpointId; changes: CallAttribution['changes'] }>;
}

/** A JSON-RPC "invalid params" error whose `data.code` says which ({@link CheckpointErrorCode} or `UNKNOWN_SESSION`). */
function invalid(code: string, message: string): RequestError {
  return RequestError.invalidParams({ code }, message);
}

/** The longest `sessionId`, `boundaryId` or `callId` a checkpoint request may carry (a call id's own bound). */
const ACP_ID_MAX_CHARS = 512;

const FIELDS: Record<WorkspaceCheckpointParams['action'], { required: readonly string[]; allowed: readonly string[] }> = {
  capture: { required: ['boundaryId'], allowed: ['boundaryId'] },
  call_begin: { required: ['callId'], allowed: ['callId'] },
  call_end: { required: ['callId'], allowed: ['callId', 'sideEffect'] },
  plan: { required: ['boundaryId'], allowed: ['boundaryId'] },
  restore: { required: ['boundaryId'], allowed: ['boundaryId', 'paths'] },
  drop: { required: [], allowed: [] },
};

/**
 * Checks the params whole before anything is touched. @throws RequestError invalid params
 * (`data.code`: `INVALID_ARGUMENT`) for an unknown action, a missing or foreign field, a wrong
 * type, or an empty `paths`.
 */
export function parseWorkspaceCheckpointParams(raw: unknown): WorkspaceCheckpointParams {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('INVALID_ARGUMENT', 'params must be an object');
  const p = raw as Record<string, unknown>;
  if (typeof p.sessionId !== 'string' || p.sessionId.length === 0) throw invalid('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
  if (typeof p.action !== 'string' || !(ACTIONS as readonly string[]).includes(p.action)) throw invalid('INVALID_ARGUMENT', `action must be one of ${ACTIONS.join(', ')}`);
  const action = p.action as WorkspaceCheckpointParams['action'];
  const { required, allowed } = FIELDS[action];
  for (const key of Object.keys(p)) {
    if (key === 'sessionId' || key === 'action' || key === '_meta') continue;
    if (!allowed.includes(key)) throw invalid('INVALID_ARGUMENT', `${key} does not belong to action ${action}`);
  }
  for (const key of required) if (typeof p[key] !== 'string' || (p[key] as string).length === 0) throw invalid('INVALID_ARGUMENT', `${action} needs ${key} (a non-empty string)`);
  // A boundary id is a key the client names again (plan, restore) and the turn's label: refused
  // past the bound, never cut (two long ids cut alike would name one turn).
  for (const key of ['sessionId', 'boundaryId', 'callId'] as const) {
    const value = p[key];
    if (typeof value === 'string' && value.length > ACP_ID_MAX_CHARS) throw invalid('INVALID_ARGUMENT', `${key} must be at most ${ACP_ID_MAX_CHARS} characters (got ${value.length})`);
  }
  if (p.sideEffect !== undefined && !SIDE_EFFECTS.includes(p.sideEffect as SideEffect)) throw invalid('INVALID_ARGUMENT', `sideEffect must be one of ${SIDE_EFFECTS.join(', ')}`);
  if (p.paths !== undefined && (!Array.isArray(p.paths) || p.paths.length === 0 || !p.paths.every((item) => typeof item === 'string'))) {
    throw invalid('INVALID_ARGUMENT', 'paths must be a non-empty list of strings when present');
  }
  return p as unknown as WorkspaceCheckpointParams;
}

/** A library error as a JSON-RPC error with its typed code in `data`. */
function asRequestError(error: unknown): unknown {
  if (!isCheckpointError(error)) return error;
  const caller = ['INVALID_PATH', 'OUTSIDE_ROOT', 'INVALID_ID', 'UNKNOWN_CHECKPOINT', 'INVALID_ARGUMENT', 'UNKNOWN_CALL', 'FOREIGN_WORKSPACE'].includes(error.code);
  const data = { code: error.code, ...(error.path !== undefined ? { path: error.path } : {}) };
  return caller ? RequestError.invalidParams(data, error.message) : RequestError.internalError(data, error.message);
}

/** A request turnback answers itself, by method name: `(params, notify) => result`. */
export type TurnbackMethod = (params: unknown, notify: (method: string, params: unknown) => Promise<void>) => Promise<object>;

/** The per-session checkpoint state of one ACP connection, and the methods that act on it. */
export interface AcpCheckpointSessions {
  /** Starts a session's checkpoints at its cwd (on `session/new`, `load`, `resume`). */
  track(sessionId: string, cwd: string): void;
  /** Releases a session's checkpoint state (on `session/close`, or `drop`). */
  drop(sessionId: string): Promise<void>;
  /** The session's checkpoints, when the session is known. */
  checkpointsOf(sessionId: string): Promise<CheckpointObserver | UnavailableCheckpoints> | undefined;
  /** Every method turnback answers, by name (the ACP names and their `_turnback/…` aliases). */
  readonly methods: ReadonlyMap<string, TurnbackMethod>;
}

/**
 * The checkpoint state of the sessions of one ACP connection and the methods over it: what
 * {@link withWorkspaceCheckpoints} registers on an SDK agent, and what the `turnback acp` proxy
 * answers itself.
 */
export function acpCheckpointSessions(options: AcpCheckpointOptions): AcpCheckpointSessions {
  const sessions = new Map<string, SessionCheckpoints>();
  const track = (sessionId: string, cwd: string): void => {
    if (sessions.has(sessionId)) return;
    // Named `acp:<session>` in the store, so `turnback list` groups the session's turns.
    sessions.set(sessionId, { checkpoints: openCheckpoints(options.config, { projectRoot: cwd, sessionId: `acp:${sessionId}`, ...(options.env !== undefined ? { env: options.env } : {}) }), boundaries: new Map(), rolledBack: [], calls: new Map() });
  };
  const drop = async (sessionId: string): Promise<void> => {
    const session = sessions.get(sessionId);
    sessions.delete(sessionId);
    const checkpoints = await session?.checkpoints;
    if (checkpoints !== undefined && !isUnavailable(checkpoints)) {
      await checkpoints.drop(checkpoints.sessionId).catch(() => undefined);
      await checkpoints.close().catch(() => undefined);
    }
  };

  /** A session's checkpoints, or the unavailable answer. @throws RequestError `UNKNOWN_SESSION`. */
  const opened = async (sessionId: string): Promise<{ session: SessionCheckpoints; checkpoints: CheckpointObserver } | Unavailable> => {
    const session = sessions.get(sessionId);
    if (session === undefined) throw invalid('UNKNOWN_SESSION', `no session ${sessionId} on this connection`);
    const checkpoints = await session.checkpoints;
    return isUnavailable(checkpoints) ? checkpoints.result : { session, checkpoints };
  };

  const handle = async (raw: unknown): Promise<object> => {
    const params = parseWorkspaceCheckpointParams(raw);
    const found = await opened(params.sessionId);
    if (!('session' in found)) return found;
    const { session, checkpoints } = found;
    const boundary = (): CheckpointId => {
      const id = session.boundaries.get(params.boundaryId as string);
      if (id === undefined) throw invalid('UNKNOWN_CHECKPOINT', `no boundary ${params.boundaryId} in session ${params.sessionId}`);
      return id;
    };
    try {
      switch (params.action) {
        case 'capture': {
          if (session.boundaries.has(params.boundaryId as string)) throw invalid('INVALID_ARGUMENT', `boundary ${params.boundaryId} was captured already`);
          const checkpointId = await checkpoints.beginTurn({ label: params.boundaryId as string });
          session.boundaries.set(params.boundaryId as string, checkpointId);
          // A new prompt ends the redo walk, as an editor's undo stack does.
          session.rolledBack.length = 0;
          return { available: true, boundaryId: params.boundaryId, checkpointId };
        }
        case 'call_begin':
          return { available: true, ...(await checkpoints.callBegin(params.callId as string)) };
        case 'call_end': {
          const attribution = await checkpoints.callEnd(params.callId as string, params.sideEffect !== undefined ? { sideEffect: params.sideEffect } : {});
          const turn = checkpoints.currentTurn;
          if (turn !== undefined) session.calls.set(params.callId as string, { turn, changes: attribution.changes });
          return { available: true, ...attribution };
        }
        case 'plan':
          return { available: true, boundaryId: params.boundaryId, ...(await checkpoints.plan(boundary())) };
        case 'restore':
          return { boundaryId: params.boundaryId, ...(await checkpoints.restore(boundary(), params.paths !== undefined ? { paths: params.paths } : {})) };
        case 'drop':
          await drop(params.sessionId);
          return { available: true, dropped: true };
      }
    } catch (error) {
      throw asRequestError(error);
    }
  };

  /** `session/rollback` (the last prompt turn not rolled back yet) and `session/redo` (the last rollback). */
  const move = async (raw: unknown, direction: 'rollback' | 'redo'): Promise<object> => {
    if (typeof raw !== 'object' || raw === null || typeof (raw as { sessionId?: unknown }).sessionId !== 'string') throw invalid('INVALID_ARGUMENT', 'sessionId must be a string');
    const extra = Object.keys(raw).filter((key) => key !== 'sessionId' && key !== '_meta');
    if (extra.length > 0) throw invalid('INVALID_ARGUMENT', `unexpected params: ${extra.join(', ')}`);
    const sessionId = (raw as { sessionId: string }).sessionId;
    const found = await opened(sessionId);
    if (!('session' in found)) return found;
    const { session, checkpoints } = found;
    let boundaryId: string;
    let target: CheckpointId;
    if (direction === 'rollback') {
      const done = new Set(session.rolledBack.map((entry) => entry.boundaryId));
      const candidate = [...session.boundaries].reverse().find(([id]) => !done.has(id));
      if (candidate === undefined) throw invalid('NOTHING_TO_ROLL_BACK', `session ${sessionId} has no prompt turn left to roll back`);
      [boundaryId, target] = candidate;
    } else {
      const last = session.rolledBack.at(-1);
      if (last === undefined) throw invalid('NOTHING_TO_REDO', `session ${sessionId} has no rollback to redo`);
      boundaryId = last.boundaryId;
      target = last.preRestoreId;
    }
    let receipt;
    try {
      receipt = await checkpoints.restore(target, { saveLabel: `before ${direction} of ${boundaryId}` });
    } catch (error) {
      throw asRequestError(error);
    }
    const filesDone = receipt.failed.length === 0 && receipt.refused.length === 0;
    if (filesDone) {
      if (direction === 'rollback' && receipt.preRestoreId !== undefined) session.rolledBack.push({ boundaryId, preRestoreId: receipt.preRestoreId });
      if (direction === 'redo') session.rolledBack.pop();
    }
    let transcript: TurnMoveResult['transcript'] = 'not-provided';
    if (filesDone && options.onTranscript !== undefined) {
      try {
        await options.onTranscript({ sessionId, direction, boundaryId });
        transcript = 'moved';
      } catch {
        transcript = 'failed';
      }
    }
    return { available: true, boundaryId, files: filesDone ? 'restored' : 'failed', transcript, receipt } satisfies TurnMoveResult;
  };

  /** `session/restore_tool_call`: one ended call's own pre-call states back, then a `tool_call_update` to the client. */
  const restoreToolCall = async (raw: unknown, notify: (update: object) => Promise<void>): Promise<object> => {
    if (typeof raw !== 'object' || raw === null) throw invalid('INVALID_ARGUMENT', 'params must be an object');
    const { sessionId, toolCallId } = raw as { sessionId?: unknown; toolCallId?: unknown };
    const extra = Object.keys(raw).filter((key) => key !== 'sessionId' && key !== 'toolCallId' && key !== '_meta');
    if (typeof sessionId !== 'string' || typeof toolCallId !== 'string' || toolCallId.length === 0 || extra.length > 0) throw invalid('INVALID_ARGUMENT', 'params are { sessionId, toolCallId }');
    const found = await opened(sessionId);
    if (!('session' in found)) return found;
    const { session, checkpoints } = found;
    const call = session.calls.get(toolCallId);
    if (call === undefined) throw invalid('UNKNOWN_CALL', `no ended tool call ${toolCallId} in session ${sessionId}`);
    let receipt;
    try {
      receipt = await checkpoints.restoreCall(call.turn, call, {});
    } catch (error) {
      throw asRequestError(error);
    }
    const restoredPaths = receipt.restored.map((entry) => entry.path);
    if (receipt.failed.length === 0 && restoredPaths.length > 0) {
      // Seed 003's shape, under turnback's key; a client that does not know `restored` may ignore it.
      await notify({ sessionId, update: { sessionUpdate: 'tool_call_update', toolCallId, status: 'restored', _meta: { turnback: { kind: 'tool_call_restored', restoredPaths } } } }).catch(() => undefined);
    }
    return { toolCallId, ...receipt };
  };

  const methods = new Map<string, TurnbackMethod>();
  for (const method of [WORKSPACE_CHECKPOINT_METHOD, WORKSPACE_CHECKPOINT_ALIAS]) methods.set(method, (params) => handle(params));
  for (const method of [RESTORE_TOOL_CALL_METHOD, '_turnback/restore_tool_call']) methods.set(method, (params, notify) => restoreToolCall(params, (update) => notify('session/update', update)));
  for (const [method, direction] of [
    [ROLLBACK_METHOD, 'rollback'],
    [REDO_METHOD, 'redo'],
  ] as const) {
    methods.set(method, (params) => move(params, direction));
    methods.set(`_turnback/${method.slice('session/'.length)}`, (params) => move(params, direction));
  }
  return { track, drop, checkpointsOf: (sessionId) => sessions.get(sessionId)?.checkpoints, methods };
}

/**
 * Registers turnback's `session/workspace_checkpoint` (and its `_turnback/…` alias) on an ACP
 * agent app and advertises it in the app's `initialize` response. Call it on the app before
 * registering the app's own handlers: its `initialize`, `session/new`, `session/load` and
 * `session/close` handlers are wrapped to advertise the method, to learn each session's cwd (the
 * root of its checkpoints), and to drop a session's checkpoint state when it closes.
 *
 * Where checkpoints are not available (disabled, the home folder, `/`, not a folder) every
 * action answers `{ available: false, reason, detail }`, never an empty success.
 */
export function withWorkspaceCheckpoints(app: AgentApp, options: AcpCheckpointOptions): AgentApp {
  const sessions = acpCheckpointSessions(options);
  const register = app.onRequest.bind(app) as (method: string, ...rest: unknown[]) => AgentApp;
  const passThrough = { parse: (params: unknown) => params };
  for (const [method, answer] of sessions.methods) {
    register(method, passThrough, ({ params, client: peer }: { params: unknown; client: { notify(method: string, params: unknown): Promise<void> } }) => answer(params, (name, value) => peer.notify(name, value)));
  }

  type Handler = (context: { params: Record<string, unknown> }) => Promise<unknown> | unknown;
  const wrapped = (method: string, handler: Handler): Handler => {
    switch (method) {
      case 'initialize':
        return async (context) => advertise((await handler(context)) as Record<string, unknown>);
      case 'session/new':
        return async (context) => {
          const response = (await handler(context)) as { sessionId: string };
          sessions.track(response.sessionId, context.params.cwd as string);
          return response;
        };
      case 'session/load':
      case 'session/resume':
        return async (context) => {
          const response = await handler(context);
          sessions.track(context.params.sessionId as string, context.params.cwd as string);
          return response;
        };
      case 'session/close':
        return async (context) => {
          const response = await handler(context);
          await sessions.drop(context.params.sessionId as string);
          return response;
        };
      default:
        return handler;
    }
  };
  app.onRequest = ((method: string, ...rest: unknown[]) => {
    if (rest.length === 1 && typeof rest[0] === 'function') return register(method, wrapped(method, rest[0] as Handler));
    return register(method, ...rest);
  }) as AgentApp['onRequest'];
  return app;
}

/** The `initialize` response with turnback's method named under `_meta` (ACP's extension point). */
export function advertise(response: Record<string, unknown>): Record<string, unknown> {
  const capabilities = (response.agentCapabilities ?? {}) as Record<string, unknown>;
  const meta = (capabilities._meta ?? {}) as Record<string, unknown>;
  const session = (capabilities.sessionCapabilities ?? {}) as Record<string, unknown>;
  return {
    ...response,
    agentCapabilities: {
      ...capabilities,
      // Seed 003's keys; ACP's schema does not define them yet, so they are said under _meta too.
      sessionCapabilities: { ...session, rollback: {}, redo: {}, restoreToolCall: {} },
      _meta: {
        ...meta,
        turnback: {
          workspaceCheckpoint: { methods: [WORKSPACE_CHECKPOINT_METHOD, WORKSPACE_CHECKPOINT_ALIAS], actions: [...ACTIONS] },
          rollback: { methods: [ROLLBACK_METHOD, '_turnback/rollback'] },
          restoreToolCall: { methods: [RESTORE_TOOL_CALL_METHOD, '_turnback/restore_tool_call'] },
          redo: { methods: [REDO_METHOD, '_turnback/redo'] },
        },
      },
    },
  };
}
