// Which tool calls of a turn turnback never heard of, from the agent's own record (issue #28). An
// HTTP hook that cannot reach the server is a non-blocking error to Claude Code: the tool runs,
// and turnback gets no event. Claude's transcript (the JSONL file its payloads name as
// `transcript_path`) still has the call: an `assistant` line with a `tool_use` block (`id`,
// `name`, `input`), a `user` line with its `tool_result` (`tool_use_id`) once it finished, and an
// `attachment` line `{type: "hook_non_blocking_error", toolUseID, hookEvent}` for each hook that
// failed (Claude Code 2.1.197, seen in test/agents/claude-missed.test.ts). Compared with the
// calls that did arrive, that names each missed call. Pure: text and sets in, calls out.

/** One tool call of the turn, as the transcript has it. */
export interface TranscriptCall {
  /** The model's tool-use id (what Claude's hooks carry as `tool_use_id`). */
  id: string;
  name: string;
  input: Record<string, unknown>;
  /** True once its result is in the transcript (the tool ran to its end). */
  finished: boolean;
  /** The hook events Claude said failed for it (`PreToolUse`, `PostToolUse`, …). */
  failedHooks: string[];
}

/** A call of the turn whose events did not all reach turnback. */
export interface MissedCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
  /** Which of its events turnback has no record of. */
  missing: ('PreToolUse' | 'PostToolUse')[];
  /** True when Claude said each of those hooks failed (else one arrived and was not recorded, or Claude did not say). */
  reported: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One transcript line as an object, or `undefined` (not JSON: cut by the read's start, or being written). */
function parsedLine(raw: string): Record<string, unknown> | undefined {
  if (raw.length < 2 || raw.charCodeAt(0) !== 123 /* { */) return undefined;
  try {
    const line = JSON.parse(raw) as unknown;
    return isRecord(line) ? line : undefined;
  } catch {
    return undefined;
  }
}

/** True for a line that starts a turn: a person's prompt (a user line with text, no tool result, not Claude's own meta line). */
function isPrompt(line: Record<string, unknown>): boolean {
  if (line.type !== 'user' || line.isMeta === true || line.isSidechain === true || !isRecord(line.message)) return false;
  const content = line.message.content;
  if (typeof content === 'string') return content.length > 0;
  return Array.isArray(content) && content.length > 0 && content.every((block) => isRecord(block) && block.type === 'text');
}

/**
 * The tool calls of the transcript's last turn (after its last prompt), in the order the model
 * made them. Lines that are not JSON (a line cut by the read's start, a line being written) and
 * a subagent's lines (`isSidechain`) are passed over.
 */
export function lastTurnToolCalls(text: string): TranscriptCall[] {
  const lines = text.split('\n');
  // Only the last turn's lines are parsed: its prompt is found from the end, so a hook event of a
  // long session does not read every earlier turn again.
  let start = 0;
  for (let at = lines.length - 1; at >= 0; at--) {
    const raw = lines[at] as string;
    if (!raw.includes('"user"') || raw.includes('"tool_result"')) continue;
    const line = parsedLine(raw);
    if (line !== undefined && isPrompt(line)) {
      start = at + 1;
      break;
    }
  }
  const calls = new Map<string, TranscriptCall>();
  const results = new Set<string>();
  const failed = new Map<string, string[]>();
  for (const raw of lines.slice(start)) {
    const line = parsedLine(raw);
    if (line === undefined || line.isSidechain === true) continue;
    if (line.type === 'attachment' && isRecord(line.attachment) && line.attachment.type === 'hook_non_blocking_error') {
      const { toolUseID, hookEvent } = line.attachment;
      if (typeof toolUseID === 'string' && typeof hookEvent === 'string') failed.set(toolUseID, [...(failed.get(toolUseID) ?? []), hookEvent]);
      continue;
    }
    const content = isRecord(line.message) ? line.message.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (!isRecord(block)) continue;
      if (line.type === 'assistant' && block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string' && !calls.has(block.id)) {
        calls.set(block.id, { id: block.id, name: block.name, input: isRecord(block.input) ? block.input : {}, finished: false, failedHooks: [] });
      } else if (line.type === 'user' && block.type === 'tool_result' && typeof block.tool_use_id === 'string') results.add(block.tool_use_id);
    }
  }
  return [...calls.values()].map((call) => ({ ...call, finished: results.has(call.id), failedHooks: failed.get(call.id) ?? [] }));
}

/** What turnback recorded of the turn's calls. */
export interface ArrivedCalls {
  /** Calls whose before event was recorded (a picture was taken for them). */
  began: ReadonlySet<string>;
  /** Of those, the calls still open: no after event ended them. */
  open: ReadonlySet<string>;
}

/**
 * The calls of `calls` whose events did not all reach turnback: a call turnback pictures
 * (`pictured`: not a read-only tool, not a write outside the project) with no recorded before
 * event, once it finished or Claude said its before hook failed; or one begun and still open
 * after it finished, or whose after hook Claude said failed. `current` (the call whose event is
 * being applied) is never missed.
 */
export function missedCalls(calls: readonly TranscriptCall[], arrived: ArrivedCalls, pictured: (call: TranscriptCall) => boolean, current?: string): MissedCall[] {
  const missed: MissedCall[] = [];
  for (const call of calls) {
    if (call.id === current || !pictured(call)) continue;
    const missing: MissedCall['missing'] = [];
    const began = arrived.began.has(call.id);
    if (!began && (call.finished || call.failedHooks.includes('PreToolUse'))) missing.push('PreToolUse');
    const afterFailed = call.failedHooks.includes('PostToolUse') || call.failedHooks.includes('PostToolUseFailure');
    if (afterFailed || (began && call.finished && arrived.open.has(call.id))) missing.push('PostToolUse');
    const reported = missing.every((event) => call.failedHooks.includes(event) || (event === 'PostToolUse' && call.failedHooks.includes('PostToolUseFailure')));
    if (missing.length > 0) missed.push({ id: call.id, name: call.name, input: call.input, missing, reported });
  }
  return missed;
}

/** The words that begin a note naming a missed call: `turnback list` shows these notes under the turn. */
export const MISSED_NOTE_PREFIX = 'not pictured: ';

/** The note a turn keeps for one missed call: the tool, its id, what it ran, which events did not arrive. */
export function missedNote(call: MissedCall, label: string): string {
  const events = call.missing.join(' and ');
  const what = call.missing.includes('PreToolUse') ? 'nothing was pictured before it, so its changes are the turn\'s, not its own' : 'its picture runs on past its end, so it may hold what later calls changed';
  // Claude's own word that the hook failed, or only turnback's lack of a record (an event that came and could not be recorded).
  const why = call.reported ? `its ${events} ${call.missing.length === 1 ? 'hook' : 'hooks'} did not reach turnback` : `turnback has no record of its ${events} ${call.missing.length === 1 ? 'event' : 'events'}`;
  const note = `${MISSED_NOTE_PREFIX}${label} (${call.id}): ${why}; ${what}`;
  return note.length <= 500 ? note : `${note.slice(0, 499)}…`;
}
