import { execFileSync } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastTurnToolCalls, missedCalls, missedNote, MISSED_NOTE_PREFIX, type TranscriptCall } from '../../src/hooks/transcript.js';
import { readTranscriptTail } from '../../src/hooks/transcript-read.js';
import { parseHookEvent } from '../../src/hooks/events.js';
import { AGENTS } from '../../src/hooks/agents.js';
import { tempFolder } from '../helpers/temp.js';

// The comparison of a turn's tool calls in Claude Code's transcript with the calls whose events
// reached turnback (src/hooks/transcript.ts). The lines are shaped as Claude Code 2.1.197 writes
// them (test/agents/claude-missed.test.ts reads a real one), cut to the fields that matter.

const line = (value: unknown): string => JSON.stringify(value);
const prompt = (text: string): string => line({ type: 'user', isSidechain: false, message: { role: 'user', content: text }, uuid: `u-${text}` });
const toolUse = (id: string, name: string, input: Record<string, unknown>, sidechain = false): string =>
  line({ type: 'assistant', isSidechain: sidechain, message: { role: 'assistant', content: [{ type: 'tool_use', id, name, input }] } });
const result = (id: string): string => line({ type: 'user', isSidechain: false, message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: '(Bash completed with no output)', is_error: false }] } });
const hookFailed = (id: string, event: string): string =>
  line({ type: 'attachment', isSidechain: false, attachment: { type: 'hook_non_blocking_error', hookName: `${event}:Bash`, toolUseID: id, hookEvent: event, stderr: 'connect ECONNREFUSED 127.0.0.1:41195', stdout: '', exitCode: 0 } });

const TRANSCRIPT = [
  line({ type: 'queue-operation', operation: 'enqueue', content: 'first' }),
  prompt('first turn'),
  toolUse('toolu_old', 'Bash', { command: 'echo old' }),
  result('toolu_old'),
  line({ type: 'user', isMeta: true, message: { role: 'user', content: 'Caveat: a meta line is no prompt' } }),
  prompt('second turn'),
  toolUse('toolu_a', 'Bash', { command: 'echo a > a.txt' }),
  result('toolu_a'),
  toolUse('toolu_b', 'Bash', { command: 'turnback server stop' }),
  hookFailed('toolu_b', 'PostToolUse'),
  result('toolu_b'),
  hookFailed('toolu_c', 'PreToolUse'),
  toolUse('toolu_c', 'Bash', { command: 'echo c > c.txt' }),
  result('toolu_c'),
  toolUse('toolu_sub', 'Bash', { command: 'a subagent, its own transcript' }, true),
  toolUse('toolu_read', 'Read', { file_path: '/p/a.txt' }),
  result('toolu_read'),
  toolUse('toolu_d', 'Write', { file_path: '/p/d.txt', content: 'd' }),
  '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_cut"',
].join('\n');

const all = (_call: TranscriptCall): boolean => true;

describe("a turn's tool calls in Claude Code's transcript", () => {
  it('are those after the last prompt, in order, with their results and the hooks Claude said failed; a subagent\'s and a cut line are passed over', () => {
    expect(lastTurnToolCalls(TRANSCRIPT)).toEqual([
      { id: 'toolu_a', name: 'Bash', input: { command: 'echo a > a.txt' }, finished: true, failedHooks: [] },
      { id: 'toolu_b', name: 'Bash', input: { command: 'turnback server stop' }, finished: true, failedHooks: ['PostToolUse'] },
      { id: 'toolu_c', name: 'Bash', input: { command: 'echo c > c.txt' }, finished: true, failedHooks: ['PreToolUse'] },
      { id: 'toolu_read', name: 'Read', input: { file_path: '/p/a.txt' }, finished: true, failedHooks: [] },
      { id: 'toolu_d', name: 'Write', input: { file_path: '/p/d.txt', content: 'd' }, finished: false, failedHooks: [] },
    ]);
    expect(lastTurnToolCalls('')).toEqual([]);
    expect(lastTurnToolCalls(`${TRANSCRIPT}\n${prompt('third')}`)).toEqual([]);
  });

  it('missed: no before event for a finished call; still open after it finished; an after hook Claude said failed; never the call being applied, one not finished and not said failed, or one turnback does not picture', () => {
    const calls = lastTurnToolCalls(TRANSCRIPT);
    const pictured = (call: TranscriptCall): boolean => call.name !== 'Read';
    // a arrived whole; b began and stayed open; c never began; d is the call being applied.
    const arrived = { began: new Set(['toolu_a', 'toolu_b']), open: new Set(['toolu_b']) };
    expect(missedCalls(calls, arrived, pictured, 'toolu_d').map(({ id, missing }) => ({ id, missing }))).toEqual([
      { id: 'toolu_b', missing: ['PostToolUse'] },
      { id: 'toolu_c', missing: ['PreToolUse'] },
    ]);
    // Every call begun and none open: only b, whose after hook Claude said failed (the turn's end
    // ended it). d, not yet finished and its before event not in, is not missed either.
    expect(missedCalls(calls, { began: new Set(['toolu_a', 'toolu_b', 'toolu_c']), open: new Set() }, pictured).map(({ id, missing }) => ({ id, missing }))).toEqual([{ id: 'toolu_b', missing: ['PostToolUse'] }]);
    expect(missedCalls(calls.filter((call) => call.id !== 'toolu_b'), { began: new Set(['toolu_a', 'toolu_c']), open: new Set() }, pictured)).toEqual([]);
    // Nothing arrived: each finished call misses its before event; b's after hook failed too; Read is not pictured.
    expect(missedCalls(calls, { began: new Set(), open: new Set() }, pictured).map(({ id, missing }) => ({ id, missing }))).toEqual([
      { id: 'toolu_a', missing: ['PreToolUse'] },
      { id: 'toolu_b', missing: ['PreToolUse', 'PostToolUse'] },
      { id: 'toolu_c', missing: ['PreToolUse'] },
    ]);
    // A Read counted as pictured would be missed too: the filter is the caller's, not a rule of the comparison.
    expect(missedCalls(calls, { began: new Set(['toolu_a', 'toolu_b', 'toolu_c']), open: new Set() }, all, 'toolu_d').map((m) => m.id)).toEqual(['toolu_b', 'toolu_read']);
  });

  it('a missed call\'s note names its label, its id and the hooks that did not arrive, and says what its picture is worth', () => {
    const [b, c] = missedCalls(lastTurnToolCalls(TRANSCRIPT), { began: new Set(['toolu_a', 'toolu_b']), open: new Set(['toolu_b']) }, (call) => call.name === 'Bash');
    expect(missedNote(b as never, 'Bash: turnback server stop')).toBe(`${MISSED_NOTE_PREFIX}Bash: turnback server stop (toolu_b): its PostToolUse hook did not reach turnback; its picture runs on past its end, so it may hold what later calls changed`);
    expect(missedNote(c as never, 'Bash: echo c > c.txt')).toBe(`${MISSED_NOTE_PREFIX}Bash: echo c > c.txt (toolu_c): its PreToolUse hook did not reach turnback; nothing was pictured before it, so its changes are the turn's, not its own`);
    // Where Claude did not say the hook failed (it arrived and could not be recorded), the note says only what turnback lacks.
    const [a] = missedCalls(lastTurnToolCalls(TRANSCRIPT), { began: new Set(['toolu_b', 'toolu_c']), open: new Set() }, (call) => call.id === 'toolu_a');
    expect(a?.reported).toBe(false);
    expect(missedNote(a as never, 'Bash: echo a > a.txt')).toBe(`${MISSED_NOTE_PREFIX}Bash: echo a > a.txt (toolu_a): turnback has no record of its PreToolUse event; nothing was pictured before it, so its changes are the turn's, not its own`);
    expect(missedNote({ id: 'x', name: 'Bash', input: {}, missing: ['PreToolUse', 'PostToolUse'], reported: true }, 'Bash: ' + 'y'.repeat(600)).length).toBe(500);
  });

  it('Claude Code\'s payloads carry the transcript path (an absolute one only); other agents\' are not read for it', () => {
    const payload = (extra: Record<string, unknown>): string => JSON.stringify({ session_id: 's', cwd: '/p', tool_name: 'Bash', tool_input: { command: 'true' }, ...extra });
    expect(parseHookEvent(AGENTS.claude, 'PreToolUse', payload({ transcript_path: '/home/u/.claude/projects/p/s.jsonl' }), '/x').transcriptPath).toBe('/home/u/.claude/projects/p/s.jsonl');
    expect(parseHookEvent(AGENTS.claude, 'PreToolUse', payload({ transcript_path: 'relative.jsonl' }), '/x').transcriptPath).toBeUndefined();
    expect(parseHookEvent(AGENTS.qwen, 'PreToolUse', payload({ transcript_path: '/t.jsonl' }), '/x').transcriptPath).toBeUndefined();
  });
});

describe("reading a transcript's end", () => {
  it('reads a regular file; never through a link, nor a FIFO; a missing one is no transcript', async () => {
    const dir = await tempFolder();
    const file = path.join(dir, 's.jsonl');
    await writeFile(file, TRANSCRIPT);
    expect(readTranscriptTail(file)).toBe(TRANSCRIPT);
    await symlink(file, path.join(dir, 'link.jsonl'));
    expect(readTranscriptTail(path.join(dir, 'link.jsonl'))).toBeUndefined();
    execFileSync('mkfifo', [path.join(dir, 'fifo.jsonl')]);
    expect(readTranscriptTail(path.join(dir, 'fifo.jsonl'))).toBeUndefined();
    expect(readTranscriptTail(path.join(dir, 'none.jsonl'))).toBeUndefined();
  });

  it('of a transcript past its read limit, keeps the end from a line\'s start, and the last turn is still found', async () => {
    const dir = await tempFolder();
    const file = path.join(dir, 'big.jsonl');
    const filler = line({ type: 'assistant', message: { content: [{ type: 'text', text: 'x'.repeat(1000) }] } });
    await writeFile(file, `${Array.from({ length: 9000 }, () => filler).join('\n')}\n${TRANSCRIPT}`);
    const tail = readTranscriptTail(file) as string;
    expect(tail.length).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(tail.startsWith('{"type":"assistant"')).toBe(true);
    expect(lastTurnToolCalls(tail).map((call) => call.id)).toEqual(['toolu_a', 'toolu_b', 'toolu_c', 'toolu_read', 'toolu_d']);
  });
});
