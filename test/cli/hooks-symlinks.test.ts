import { readFile, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, hookLog, installedCommands, type Json } from './hook-play.js';

// An agent that reaches the project through a symlink — a symlinked workspace folder, macOS's
// /tmp → /private/tmp, a home folder reached through a link — must be pictured as if it used the
// real path (issue #29): every agent's payload format, the built `hook` command fed real payload
// JSON, then an undo of the write's own picture brings an uncommitted file back byte for byte.

const NOTES = 'my notes, never committed\n';
const SESSION = 'sess-link';

/** One agent's payloads for a prompt, a write of `file` (as the agent names it), and the stop. */
interface WritePlay {
  agent: string;
  file: string;
  events: { prompt: string; before: string; after: string; stop: string };
  prompt(cwd: string): Json;
  write(cwd: string, file: string, id: string): Json;
  stop(cwd: string): Json;
}

function claudeShaped(agent: string, file: string, writeTool: string): WritePlay {
  return {
    agent,
    file,
    events: { prompt: 'UserPromptSubmit', before: 'PreToolUse', after: 'PostToolUse', stop: 'Stop' },
    prompt: (cwd) => ({ session_id: SESSION, cwd, hook_event_name: 'UserPromptSubmit', prompt: 'rewrite the notes' }),
    write: (cwd, target, id) => ({ session_id: SESSION, cwd, hook_event_name: 'PreToolUse', tool_name: writeTool, tool_input: { file_path: target, content: 'overwritten\n' }, tool_use_id: id }),
    stop: (cwd) => ({ session_id: SESSION, cwd, hook_event_name: 'Stop', stop_hook_active: false }),
  };
}

const PLAYS: WritePlay[] = [
  claudeShaped('claude', '.claude/settings.json', 'Write'),
  claudeShaped('qwen', '.qwen/settings.json', 'write_file'),
  {
    ...claudeShaped('codex', '.codex/hooks.json', 'apply_patch'),
    write: (cwd, target, id) => ({ session_id: SESSION, turn_id: 't1', cwd, hook_event_name: 'PreToolUse', tool_name: 'apply_patch', tool_input: { command: `*** Begin Patch\n*** Update File: ${target}\n-x\n+overwritten\n*** End Patch\n` }, tool_use_id: id }),
  },
  {
    agent: 'gemini',
    file: '.gemini/settings.json',
    events: { prompt: 'BeforeAgent', before: 'BeforeTool', after: 'AfterTool', stop: 'AfterAgent' },
    prompt: (cwd) => ({ session_id: SESSION, cwd, hook_event_name: 'BeforeAgent', prompt: 'rewrite the notes' }),
    write: (cwd, target) => ({ session_id: SESSION, cwd, hook_event_name: 'BeforeTool', tool_name: 'write_file', tool_input: { file_path: target, content: 'overwritten\n' } }),
    stop: (cwd) => ({ session_id: SESSION, cwd, hook_event_name: 'AfterAgent', prompt_response: 'done' }),
  },
  {
    agent: 'copilot',
    file: '.github/hooks/turnback.json',
    events: { prompt: 'userPromptSubmitted', before: 'preToolUse', after: 'postToolUse', stop: 'agentStop' },
    prompt: (cwd) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd, prompt: 'rewrite the notes' }),
    write: (cwd, target, id) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd, toolCallId: id, toolName: 'edit', toolArgs: JSON.stringify({ path: target, old_str: 'x', new_str: 'overwritten' }) }),
    stop: (cwd) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd }),
  },
  {
    // Cursor's tool events are its shell's: the folder is all a payload names.
    agent: 'cursor',
    file: '.cursor/hooks.json',
    events: { prompt: 'beforeSubmitPrompt', before: 'beforeShellExecution', after: 'afterShellExecution', stop: 'stop' },
    prompt: () => ({ conversation_id: SESSION, generation_id: 'g1', hook_event_name: 'beforeSubmitPrompt', prompt: 'rewrite the notes', workspace_roots: [] }),
    write: (cwd) => ({ conversation_id: SESSION, generation_id: 'g1', hook_event_name: 'beforeShellExecution', command: 'echo overwritten > notes.txt', cwd }),
    stop: () => ({ conversation_id: SESSION, generation_id: 'g1', hook_event_name: 'stop', status: 'completed' }),
  },
];

/** How the agent names the project: its folder and the written file, through a link. */
const WAYS = [
  { way: 'the cwd is a symlink to the project root', cwd: (link: string) => link, file: (link: string) => path.join(link, 'notes.txt') },
  { way: 'the cwd is the project, the file_path goes through a symlink', cwd: (_link: string, proj: string) => proj, file: (link: string) => path.join(link, 'notes.txt') },
  { way: 'the cwd is a symlink and the path is relative', cwd: (link: string) => link, file: () => 'notes.txt' },
];

async function linkedRepo(): Promise<{ repo: CliRepo; link: string }> {
  const repo = await cliRepo({ 'a.txt': 'a\n' });
  await writeFile(path.join(repo.proj, 'notes.txt'), NOTES);
  // The workspace folder the agent was opened in: a link to the project, outside it.
  const link = path.join(repo.home, 'workspace');
  await symlink(repo.proj, link);
  return { repo, link };
}

describe.each(PLAYS)('a write through a symlink to the project: $agent', (play) => {
  // Cursor's payloads name no file: the folder is the only way it can name the project.
  it.each(play.agent === 'cursor' ? WAYS.slice(0, 1) : WAYS)('$way: the write is pictured, and undoing its picture gives notes.txt back byte for byte', async ({ cwd: cwdOf, file: fileOf }) => {
    const { repo, link } = await linkedRepo();
    // Claude Code's events as command hooks: this test plays each event's command.
    expect(repo.tb(['hooks', 'install', play.agent, '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, play.file));
    const cwd = cwdOf(link, repo.proj);
    const run = (event: string, payload: Json): void => {
      const r = fire(repo, commands[event], payload);
      expect(r.code).toBe(0);
    };
    run(play.events.prompt, play.prompt(cwd));
    const write = play.write(cwd, fileOf(link), 'call-link-1');
    run(play.events.before, write);
    // The tool's effect, through the link as the agent wrote it.
    await writeFile(path.join(link, 'notes.txt'), 'overwritten\n');
    run(play.events.after, { ...write, hook_event_name: play.events.after });
    run(play.events.stop, play.stop(cwd));

    const log = await hookLog(repo);
    expect(log.every((line) => line.ok), JSON.stringify(log)).toBe(true);
    expect(log.map((line) => line.action ?? '').join('\n')).not.toContain('outside the project');
    // The write's own picture: a call checkpoint that holds notes.txt.
    const listed = JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string; kind: string; files: number; agent?: { role: string } }[] };
    const calls = listed.checkpoints.filter((c) => c.agent?.role === 'call' && c.files > 0);
    expect(calls, JSON.stringify(listed.checkpoints)).toHaveLength(1);
    const undo = repo.tb(['undo', (calls[0] as { id: string }).id, '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(NOTES);
  });
});

describe('undo --call through a symlinked workspace', () => {
  it('Claude Code: the Write call named through the link is found by its tool_use_id and undone alone', async () => {
    const { repo, link } = await linkedRepo();
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const common = { session_id: SESSION, cwd: link, transcript_path: null };
    const ok = (r: { code: number | null }): void => expect(r.code).toBe(0);
    ok(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'rewrite' }));
    const write = { ...common, tool_name: 'Write', tool_input: { file_path: path.join(link, 'notes.txt'), content: 'overwritten\n' }, tool_use_id: 'toolu_link' };
    ok(fire(repo, commands.PreToolUse, { ...write, hook_event_name: 'PreToolUse' }));
    await writeFile(path.join(link, 'notes.txt'), 'overwritten\n');
    ok(fire(repo, commands.PostToolUse, { ...write, hook_event_name: 'PostToolUse', tool_response: {} }));
    ok(fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }));
    expect((await hookLog(repo)).find((line) => line.event === 'PreToolUse')?.action).toBe('call toolu_link began: 1 named file(s)');
    const undo = repo.tb(['undo', '--call', 'toolu_link', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(NOTES);
  });
});
