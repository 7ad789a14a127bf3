import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { isCheckpointError } from '../core/errors.js';
import type { SideEffect } from '../core/model.js';
import { realPathOf } from '../fs/paths.js';
import { isUnavailable } from '../session/unavailable.js';
import { WORKSPACE_CHECKPOINT_METHOD, acpCheckpointSessions, advertise, type AcpCheckpointOptions, type TurnbackMethod } from './acp.js';

// `turnback acp -- AGENT…`: a stdio proxy between an ACP client (an editor) and any ACP agent.
// Every line is forwarded as received, in order, except the agent's `initialize` answer (which
// gains turnback's capabilities) and the requests turnback answers itself. Checkpoint work never
// stops a message: a failure is logged and the proxy keeps forwarding.

/** What {@link runAcpProxy} takes. */
export interface AcpProxyOptions extends AcpCheckpointOptions {
  /** The agent's command line. */
  command: readonly string[];
  /** The client's messages (the proxy's stdin). */
  input: Readable;
  /** Where the client reads (the proxy's stdout). */
  output: Writable;
  /** turnback's own notes (failures it absorbed). @default stderr */
  log?: (line: string) => void;
}

type Message = { jsonrpc?: string; id?: string | number | null; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: unknown };

/** Calls `onLine` with each complete line of `stream` (without its newline), in order. */
function eachLine(stream: Readable, onLine: (line: string) => void, onEnd: () => void): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
      onLine(pending.slice(0, at));
      pending = pending.slice(at + 1);
    }
  });
  stream.on('end', () => {
    if (pending.length > 0) onLine(pending);
    onEnd();
  });
}

function parse(line: string): Message | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Message) : undefined;
  } catch {
    return undefined;
  }
}

/** The side-effect class of an ACP tool kind: `fetch` reaches the network (irreversible), the rest may change files. */
function sideEffectOf(kind: unknown): SideEffect {
  return kind === 'fetch' ? 'network' : 'filesystem';
}

/** The first line of a prompt's text, cut to 60 characters: a boundary's label. */
function promptLabel(params: Record<string, unknown> | undefined): string {
  const blocks = Array.isArray(params?.prompt) ? (params.prompt as { type?: unknown; text?: unknown }[]) : [];
  const text = blocks.find((block) => block.type === 'text' && typeof block.text === 'string')?.text as string | undefined;
  const first = (text ?? 'prompt').split('\n', 1)[0]?.trim() ?? 'prompt';
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

/**
 * Runs the agent and proxies until both sides are done; resolves with the agent's exit code.
 * Takes a boundary at each `session/prompt` (labelled with the prompt's first line), brackets
 * each tool call the agent reports (`tool_call` → call begin, `tool_call_update` completed or
 * failed → call end, `fetch` tools recorded as network), captures the pre-image of each
 * `fs/write_text_file` before forwarding it, and answers turnback's methods (see acp.ts) itself.
 */
export function runAcpProxy(options: AcpProxyOptions): Promise<number> {
  const { input, output } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`turnback acp: ${line}\n`));
  const sessions = acpCheckpointSessions(options);
  const checkpoint = sessions.methods.get(WORKSPACE_CHECKPOINT_METHOD) as TurnbackMethod;
  const [file, ...args] = options.command;
  const agent = spawn(file as string, args, { stdio: ['pipe', 'pipe', 'inherit'] });

  /** Client requests awaiting the agent's answer, and agent requests awaiting the client's. */
  const fromClient = new Map<string, Message>();
  const fromAgent = new Map<string, Message>();
  /**
   * Tool calls begun and not ended yet, by session and id (two sessions may use the same tool-call
   * id): their session, id and kind (the work queue keeps begin before end).
   */
  const calls = new Map<string, { kind: unknown; sessionId: string; callId: string }>();
  /** Tool calls whose end came before their start (an agent's messages out of order): never begun. */
  const endedEarly = new Set<string>();
  const callKey = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`;
  let prompts = 0;
  /** Prompt requests in flight → the call that pictures their whole turn. */
  const promptCalls = new Map<string, { sessionId: string; callId: string }>();
  /** Checkpoint work, one after another, off the forwarding path. */
  let work: Promise<unknown> = Promise.resolve();
  const later = (label: string, task: () => Promise<unknown>): Promise<unknown> => {
    work = work.then(task).catch((error: unknown) => log(`${label}: ${error instanceof Error ? error.message : String(error)}`));
    return work;
  };
  /** Each session's folder, as the client named it: an agent's relative path is taken against it. */
  const folders = new Map<string, string>();
  const track = (sessionId: string, cwd: string): void => {
    folders.set(sessionId, cwd);
    sessions.track(sessionId, cwd);
  };
  /**
   * The files a client write changes, as real paths (the agent may name the project through a
   * symlink; the session's root is canonical): the write's target, and a link's own entry.
   */
  const onWriteTargets = async (sessionId: string, target: string, record: (path: string) => Promise<unknown>): Promise<void> => {
    const { real, link } = await realPathOf(target, folders.get(sessionId) ?? process.cwd());
    if (link === undefined) return void (await record(real));
    await record(link);
    try {
      await record(real);
    } catch (error) {
      // A link in the project to a file outside it: the link is pictured, its target is not ours.
      if (!isCheckpointError(error, 'OUTSIDE_ROOT')) throw error;
    }
  };
  const toClient = (line: string): void => void output.write(`${line}\n`);
  const toAgent = (line: string): void => void agent.stdin.write(`${line}\n`);
  const notifyClient = async (method: string, params: unknown): Promise<void> => toClient(JSON.stringify({ jsonrpc: '2.0', method, params }));
  const keyOf = (id: Message['id']): string => JSON.stringify(id);

  let clientChain: Promise<void> = Promise.resolve();
  let agentChain: Promise<void> = Promise.resolve();

  const onClientLine = async (line: string): Promise<void> => {
    const message = parse(line);
    const method = message?.method;
    if (message === undefined) return toAgent(line);
    if (method !== undefined && message.id !== undefined) {
      const answer = sessions.methods.get(method);
      if (answer !== undefined) {
        // turnback's own method: answered here, never forwarded — once the checkpoint work queued
        // before it is done, so a call whose end the agent already reported is ended when asked about.
        await work;
        try {
          toClient(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: await answer(message.params, notifyClient) }));
        } catch (error) {
          const { code, message: text, data } = error as { code?: number; message?: string; data?: unknown };
          toClient(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: typeof code === 'number' ? code : -32603, message: text ?? String(error), ...(data !== undefined ? { data } : {}) } }));
        }
        return;
      }
      fromClient.set(keyOf(message.id), message);
      if (method === 'session/prompt' && typeof message.params?.sessionId === 'string') {
        const sessionId = message.params.sessionId;
        const n = ++prompts;
        // The boundary, and a picture of the whole tree, are down before the agent sees the prompt:
        // whatever the turn changes has its pre-image, even where a tool call's own picture (taken
        // when the agent reports the call, while the agent goes on) comes too late.
        await later('boundary', () => checkpoint({ sessionId, action: 'capture', boundaryId: `${promptLabel(message.params)} (#${n})` }, notifyClient));
        await later('prompt picture', () => checkpoint({ sessionId, action: 'call_begin', callId: `prompt-${n}` }, notifyClient));
        promptCalls.set(keyOf(message.id), { sessionId, callId: `prompt-${n}` });
      }
    } else if (method === undefined && message.id !== undefined) {
      const asked = fromAgent.get(keyOf(message.id));
      fromAgent.delete(keyOf(message.id));
      if (asked?.method === 'fs/write_text_file' && typeof asked.params?.sessionId === 'string' && typeof asked.params.path === 'string') {
        const { sessionId, path } = asked.params as { sessionId: string; path: string };
        toAgent(line);
        void later('after write', async () => {
          const checkpoints = await sessions.checkpointsOf(sessionId);
          if (checkpoints !== undefined && !isUnavailable(checkpoints)) await onWriteTargets(sessionId, path, (target) => checkpoints.afterWrite(target));
        });
        return;
      }
    }
    toAgent(line);
  };

  const onAgentLine = async (line: string): Promise<void> => {
    const message = parse(line);
    if (message === undefined) return toClient(line);
    if (message.method === undefined && message.id !== undefined) {
      const asked = fromClient.get(keyOf(message.id));
      fromClient.delete(keyOf(message.id));
      if (asked?.method === 'initialize' && message.result !== undefined) return toClient(JSON.stringify({ ...message, result: advertise(message.result) }));
      const prompt = promptCalls.get(keyOf(message.id));
      if (prompt !== undefined) {
        promptCalls.delete(keyOf(message.id));
        // The turn's end: attributed after the answer goes out. A tool call of the session the
        // agent never ended is over with its turn: ended first, so its picture is not left open.
        toClient(line);
        for (const [key, call] of [...calls]) {
          if (call.sessionId !== prompt.sessionId) continue;
          calls.delete(key);
          await later('call end (turn over)', () => checkpoint({ sessionId: call.sessionId, action: 'call_end', callId: call.callId, sideEffect: sideEffectOf(call.kind) }, notifyClient));
        }
        await later('prompt end', () => checkpoint({ sessionId: prompt.sessionId, action: 'call_end', callId: prompt.callId }, notifyClient));
        return;
      }
      if (asked?.method === 'session/new' && typeof message.result?.sessionId === 'string' && typeof asked.params?.cwd === 'string') track(message.result.sessionId, asked.params.cwd);
      if ((asked?.method === 'session/load' || asked?.method === 'session/resume') && message.error === undefined && typeof asked.params?.sessionId === 'string' && typeof asked.params.cwd === 'string') {
        track(asked.params.sessionId, asked.params.cwd);
      }
      if (asked?.method === 'session/close' && typeof asked.params?.sessionId === 'string') {
        const sessionId = asked.params.sessionId;
        folders.delete(sessionId);
        void later('close', () => sessions.drop(sessionId));
      }
      return toClient(line);
    }
    if (message.method === 'session/update') {
      const sessionId = message.params?.sessionId;
      const update = message.params?.update as { sessionUpdate?: unknown; toolCallId?: unknown; status?: unknown; kind?: unknown } | undefined;
      if (typeof sessionId === 'string' && typeof update?.toolCallId === 'string' && (update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update')) {
        const callId = update.toolCallId;
        const key = callKey(sessionId, callId);
        const final = update.status === 'completed' || update.status === 'failed';
        const call = calls.get(key);
        if (final) {
          calls.delete(key);
          if (call !== undefined) void later('call end', () => checkpoint({ sessionId, action: 'call_end', callId, sideEffect: sideEffectOf(update.kind ?? call.kind) }, notifyClient));
          // Its end before its start (messages out of order): the late start begins nothing; the
          // prompt's own picture holds what it did.
          else endedEarly.add(key);
        } else if (call === undefined && !endedEarly.has(key)) {
          // Its start, or the first news of it (an update before the tool_call itself).
          // Measured from the newest picture already held (the prompt's, or the previous call's
          // end), never one taken now: the agent does not wait for this notification to be read,
          // so its tool may have run already.
          void later('call begin', async () => {
            const checkpoints = await sessions.checkpointsOf(sessionId);
            if (checkpoints !== undefined && !isUnavailable(checkpoints)) await checkpoints.callBegin(callId, { baseline: 'held' });
          });
          calls.set(key, { kind: update.kind, sessionId, callId });
        }
      }
      return toClient(line);
    }
    if (message.method === 'fs/write_text_file' && message.id !== undefined && typeof message.params?.sessionId === 'string' && typeof message.params.path === 'string') {
      fromAgent.set(keyOf(message.id), message);
      const { sessionId, path } = message.params as { sessionId: string; path: string };
      // The pre-image is taken before the client can write.
      await later('before write', async () => {
        const checkpoints = await sessions.checkpointsOf(sessionId);
        if (checkpoints !== undefined && !isUnavailable(checkpoints)) await onWriteTargets(sessionId, path, (target) => checkpoints.beforeWrite(target));
      });
      return toClient(line);
    }
    if (message.method === 'session/request_permission' && message.id !== undefined) {
      // The call's picture (queued when the agent reported it) is down before the person can allow it.
      fromAgent.set(keyOf(message.id), message);
      await work;
      return toClient(line);
    }
    if (message.method !== undefined && message.id !== undefined) fromAgent.set(keyOf(message.id), message);
    toClient(line);
  };

  return new Promise<number>((resolve) => {
    let agentDone = false;
    eachLine(
      input,
      (line) => {
        clientChain = clientChain.then(() => onClientLine(line)).catch((error: unknown) => log(`client message: ${String(error)}`));
      },
      () => void clientChain.then(() => agent.stdin.end()),
    );
    eachLine(
      agent.stdout,
      (line) => {
        agentChain = agentChain.then(() => onAgentLine(line)).catch((error: unknown) => log(`agent message: ${String(error)}`));
      },
      () => {
        agentDone = true;
      },
    );
    agent.stdin.on('error', () => undefined);
    agent.on('exit', (code, signal) => {
      void agentChain.then(async () => {
        // Calls and prompts the agent never ended are closed, so their pictures are not left open.
        for (const call of calls.values()) await later('call end (agent gone)', () => checkpoint({ sessionId: call.sessionId, action: 'call_end', callId: call.callId }, notifyClient));
        for (const prompt of promptCalls.values()) await later('prompt end (agent gone)', () => checkpoint({ sessionId: prompt.sessionId, action: 'call_end', callId: prompt.callId }, notifyClient));
        calls.clear();
        promptCalls.clear();
        await work;
        if (!agentDone) log('the agent exited before its output ended');
        output.end();
        // Nobody is left to forward the client's messages to: stop reading them.
        input.destroy();
        resolve(code ?? (signal !== null ? 128 : 1));
      });
    });
  });
}
