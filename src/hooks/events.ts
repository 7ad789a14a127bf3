import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { CheckpointError } from '../core/errors.js';
import type { AgentSpec, HookKind } from './agents.js';

// An agent's hook payload, read into one shape (pure: text in, data out). Every agent names the
// same few things differently; what turnback needs is the session, the tool call, the tool and
// what it will touch, the prompt, and the folder.

/** The largest payload read: a tool input may hold a whole file's new text. */
export const MAX_PAYLOAD_BYTES: number = 8 * 1024 * 1024;

/** What a tool call is to turnback. */
export type ToolClass = 'read-only' | 'write' | 'shell' | 'network';

/** One hook event, read. */
export interface HookEvent {
  kind: HookKind;
  /** The agent's event name, as its hook called it. */
  eventName: string;
  /** The agent's own session id (`default` when its payload carries none). */
  session: string;
  /** The agent's tool-call id, when its payload has one. */
  toolCallId?: string;
  toolName?: string;
  toolInput?: Record<string, unknown>;
  /** The command a shell tool runs, when the input says. */
  command?: string;
  /** The files a write tool names, absolute (resolved against the payload's folder). */
  paths?: string[];
  /** The user's prompt (a `prompt` event). */
  prompt?: string;
  /** The folder the agent works in. */
  cwd?: string;
  /** What the tool is to turnback (tool events). */
  toolClass?: ToolClass;
  /** The agent's transcript (Claude Code's `transcript_path`), for an agent whose hooks may not get through (HTTP hooks). */
  transcriptPath?: string;
}

function field(payload: Record<string, unknown>, names: readonly string[]): unknown {
  for (const name of names) if (payload[name] !== undefined && payload[name] !== null) return payload[name];
  return undefined;
}

function text(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A tool input: an object, a JSON string of one, or the text of a freeform tool, read as
 * `{input: text}`. Copilot CLI 1.0.102 sends its function tools' `toolArgs` as an object and its
 * freeform `apply_patch`'s as the patch text itself (seen in the harness, test/agents).
 */
function inputObject(value: unknown): Record<string, unknown> | undefined {
  if (typeof value === 'string') {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (isRecord(parsed)) return parsed;
    } catch {
      // Not JSON: a freeform tool's text.
    }
    return value.length > 0 ? { input: value } : undefined;
  }
  return isRecord(value) ? value : undefined;
}

/** The file paths an `apply_patch` body names (added, updated, deleted, moved to): Codex's format, which Copilot CLI's takes. */
export function patchPaths(patch: string): string[] {
  const found: string[] = [];
  for (const line of patch.split('\n')) {
    const match = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/.exec(line.trimEnd());
    if (match?.[1] !== undefined) found.push(match[1].trim());
  }
  return found;
}

/** The files a write tool's input names, as the agent gave them (relative or absolute). */
export function namedPaths(toolName: string, input: Record<string, unknown>): string[] {
  if (toolName === 'apply_patch') {
    const body = field(input, ['command', 'input', 'patch']);
    if (typeof body === 'string') return patchPaths(body);
    if (Array.isArray(body)) return patchPaths(body.filter((part): part is string => typeof part === 'string').join('\n'));
    return [];
  }
  const named = field(input, ['file_path', 'notebook_path', 'filePath', 'absolute_path', 'path']);
  return typeof named === 'string' && named.length > 0 ? [named] : [];
}

/** What a tool is, by the agent's table row and what its input names. */
export function classifyTool(spec: AgentSpec, toolName: string, paths: readonly string[]): ToolClass {
  if (spec.readOnlyTools.test(toolName)) return 'read-only';
  if (spec.writeTools.test(toolName) && paths.length > 0) return 'write';
  if (spec.networkTools.test(toolName)) return 'network';
  // A shell tool, and any tool turnback does not know: it may run anything, so the whole tree.
  return 'shell';
}

/**
 * Reads one hook payload. `eventName` must be one of the agent's events; `folder` resolves
 * relative paths when the payload names no folder of its own.
 *
 * @throws CheckpointError `INVALID_ARGUMENT` for an unknown event, a payload that is not a JSON
 *   object, or one too large.
 */
export function parseHookEvent(spec: AgentSpec, eventName: string, payloadText: string, folder: string): HookEvent {
  const kind = Object.hasOwn(spec.events, eventName) ? spec.events[eventName] : undefined;
  if (kind === undefined) throw new CheckpointError('INVALID_ARGUMENT', `${spec.title} has no hook event ${eventName} that turnback handles (${Object.keys(spec.events).join(', ')})`);
  if (payloadText.length > MAX_PAYLOAD_BYTES) throw new CheckpointError('INVALID_ARGUMENT', `the hook payload is over ${MAX_PAYLOAD_BYTES} bytes`);
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText) as unknown;
  } catch {
    throw new CheckpointError('INVALID_ARGUMENT', 'the hook payload is not JSON');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new CheckpointError('INVALID_ARGUMENT', 'the hook payload is not a JSON object');
  const p = payload as Record<string, unknown>;
  const cwdText = text(field(p, spec.fields.cwd), 4096);
  const cwd = cwdText !== undefined && path.isAbsolute(cwdText) ? cwdText : undefined;
  const event: HookEvent = { kind, eventName, session: text(field(p, spec.fields.sessionId), 256) ?? 'default', ...(cwd !== undefined ? { cwd } : {}) };
  if (spec.http !== undefined) {
    // Claude Code's payloads name its transcript: what the turn's missed calls are read from (transcript.ts).
    const transcript = text(p.transcript_path, 4096);
    if (transcript !== undefined && path.isAbsolute(transcript)) event.transcriptPath = transcript;
  }
  if (kind === 'prompt') {
    const prompt = field(p, spec.fields.prompt);
    if (typeof prompt === 'string') event.prompt = prompt;
  }
  if (kind === 'before-tool' || kind === 'after-tool') {
    const toolCallId = text(field(p, spec.fields.toolCallId), 512);
    if (toolCallId !== undefined) event.toolCallId = toolCallId;
    // Cursor's shell events name no tool: the event is the tool.
    const toolName = text(field(p, spec.fields.toolName), 256) ?? (spec.format === 'flat' ? 'shell' : undefined);
    if (toolName === undefined) throw new CheckpointError('INVALID_ARGUMENT', `the ${eventName} payload names no tool`);
    event.toolName = toolName;
    const input = inputObject(field(p, spec.fields.toolInput));
    if (input !== undefined) event.toolInput = input;
    // Cursor's shell events carry the command at the top.
    const command = field(input ?? (spec.format === 'flat' ? p : {}), ['command', 'cmd']);
    if (typeof command === 'string' && toolName !== 'apply_patch') event.command = command;
    const named = input === undefined ? [] : namedPaths(toolName, input);
    const base = cwd ?? folder;
    if (named.length > 0) event.paths = named.map((n) => path.resolve(base, n));
    event.toolClass = classifyTool(spec, toolName, named);
  }
  return event;
}

/**
 * The call id a tool event pairs by when the agent gives none (Gemini CLI, Cursor): the tool
 * and a digest of its input. A before event opens `<key>#<n>` (n: how many of that key are open);
 * the after event ends the oldest open one with that key.
 */
export function pairingKey(event: Pick<HookEvent, 'toolName' | 'toolInput' | 'command'>): string {
  const digest = createHash('sha256').update(JSON.stringify(event.command ?? event.toolInput ?? null)).digest('hex').slice(0, 16);
  return `${event.toolName ?? 'tool'}#${digest}`;
}

/** The first line of a prompt, on one line, cut to 60 characters: a turn's label. */
export function promptLabel(prompt: string | undefined): string {
  const first = (prompt ?? '').split('\n').find((line) => line.trim().length > 0) ?? '';
  const line = first.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
  if (line.length === 0) return '(empty prompt)';
  return line.length <= 60 ? line : `${line.slice(0, 59).trimEnd()}…`;
}
