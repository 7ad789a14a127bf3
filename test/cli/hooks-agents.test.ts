import { writeFile } from 'node:fs/promises';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { fire, hookLog, installedCommands, sh, type Json } from './hook-play.js';
import { listing } from '../session/helpers.js';

// The agents besides Claude Code, end to end, each with its own documented payload shape: install,
// a prompt with a shell call and a write, the stop, undo, uninstall (see hooks.test.ts for the
// harder cases, played with Claude Code).

/** How one agent's payloads look, for the same short session: a prompt, a shell call, a write, the stop. */
interface AgentPlay {
  agent: string;
  file: string;
  events: { prompt: string; before: string; after: string; stop: string };
  prompt(text: string): Json;
  shell(command: string, id: string): Json;
  write(file: string, id: string): Json;
  stop(): Json;
  /** Whether the stop event prints the turn's end as a JSON systemMessage. */
  says: boolean;
}

const SESSION = 'sess-42';

function claudeShaped(agent: string, file: string, shellTool: string, writeTool: string, extra: Json = {}): AgentPlay {
  const common = { session_id: SESSION, cwd: '', transcript_path: null, ...extra };
  return {
    agent,
    file,
    events: { prompt: 'UserPromptSubmit', before: 'PreToolUse', after: 'PostToolUse', stop: 'Stop' },
    prompt: (text) => ({ ...common, hook_event_name: 'UserPromptSubmit', prompt: text }),
    shell: (command, id) => ({ ...common, hook_event_name: 'PreToolUse', tool_name: shellTool, tool_input: { command }, tool_use_id: id }),
    write: (target, id) => ({ ...common, hook_event_name: 'PreToolUse', tool_name: writeTool, tool_input: { file_path: target, content: 'new\n' }, tool_use_id: id }),
    stop: () => ({ ...common, hook_event_name: 'Stop', stop_hook_active: false }),
    says: true,
  };
}

const PLAYS: AgentPlay[] = [
  {
    // Codex: Claude Code's wire format; apply_patch carries the patch body in tool_input.command.
    ...claudeShaped('codex', '.codex/hooks.json', 'Bash', 'apply_patch', { turn_id: 'turn-1', model: 'gpt-5-codex' }),
    write: (target, id) => ({ session_id: SESSION, turn_id: 'turn-1', cwd: '', hook_event_name: 'PreToolUse', tool_name: 'apply_patch', tool_input: { command: `*** Begin Patch\n*** Add File: ${path.basename(target)}\n+new\n*** End Patch\n` }, tool_use_id: id }),
  },
  claudeShaped('qwen', '.qwen/settings.json', 'run_shell_command', 'write_file'),
  {
    // Gemini CLI: its own event names, and no tool-call id (before and after pair by order).
    agent: 'gemini',
    file: '.gemini/settings.json',
    events: { prompt: 'BeforeAgent', before: 'BeforeTool', after: 'AfterTool', stop: 'AfterAgent' },
    prompt: (text) => ({ session_id: SESSION, cwd: '', hook_event_name: 'BeforeAgent', timestamp: '2026-12-02T10:00:00Z', prompt: text }),
    shell: (command) => ({ session_id: SESSION, cwd: '', hook_event_name: 'BeforeTool', tool_name: 'run_shell_command', tool_input: { command } }),
    write: (target) => ({ session_id: SESSION, cwd: '', hook_event_name: 'BeforeTool', tool_name: 'write_file', tool_input: { file_path: target, content: 'new\n' } }),
    stop: () => ({ session_id: SESSION, cwd: '', hook_event_name: 'AfterAgent', prompt_response: 'done' }),
    says: true,
  },
  {
    // Cursor: conversation and generation ids, shell events that are the tool; file edits have no before event.
    agent: 'cursor',
    file: '.cursor/hooks.json',
    events: { prompt: 'beforeSubmitPrompt', before: 'beforeShellExecution', after: 'afterShellExecution', stop: 'stop' },
    prompt: (text) => ({ conversation_id: SESSION, generation_id: 'gen-1', hook_event_name: 'beforeSubmitPrompt', prompt: text, workspace_roots: [] }),
    shell: (command) => ({ conversation_id: SESSION, generation_id: 'gen-1', hook_event_name: 'beforeShellExecution', command, cwd: '' }),
    write: () => ({}),
    stop: () => ({ conversation_id: SESSION, generation_id: 'gen-1', hook_event_name: 'stop', status: 'completed' }),
    says: false,
  },
  {
    // GitHub Copilot CLI: camelCase, toolArgs as a JSON string.
    agent: 'copilot',
    file: '.github/hooks/turnback.json',
    events: { prompt: 'userPromptSubmitted', before: 'preToolUse', after: 'postToolUse', stop: 'agentStop' },
    prompt: (text) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd: '', prompt: text }),
    shell: (command) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd: '', toolName: 'bash', toolArgs: JSON.stringify({ command }) }),
    write: (target) => ({ sessionId: SESSION, timestamp: 1764669600000, cwd: '', toolName: 'create', toolArgs: JSON.stringify({ path: target, file_text: 'new\n' }) }),
    stop: () => ({ sessionId: SESSION, timestamp: 1764669600000, cwd: '' }),
    says: false,
  },
];

describe.each(PLAYS)('turnback hooks: $agent', (play) => {
  it('install, a prompt with a shell call and a write, the stop, then undo gives the tree back; uninstall gives the file back', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const start = await listing(repo.proj);
    const install = repo.tb(['hooks', 'install', play.agent]);
    expect(install.code).toBe(0);
    const file = path.join(repo.proj, play.file);
    const commands = await installedCommands(file);
    expect(Object.keys(commands).sort()).toEqual(expect.arrayContaining(Object.values(play.events).sort()));
    const withCwd = (payload: Json): Json => ('cwd' in payload ? { ...payload, cwd: repo.proj } : payload);
    const run = (event: string, payload: Json): string => {
      const r = fire(repo, commands[event], withCwd(payload));
      expect(r.code).toBe(0);
      return r.stdout;
    };
    expect(run(play.events.prompt, play.prompt('shout and add a file\nplease'))).toBe('');
    const shell = play.shell("sed -i 's/a/A/' a.txt", 'call-1');
    expect(run(play.events.before, shell)).toBe('');
    sh(repo, "sed -i 's/a/A/' a.txt");
    expect(run(play.events.after, { ...shell, hook_event_name: play.events.after })).toBe('');
    const target = path.join(repo.proj, 'new.txt');
    const write = play.write(target, 'call-2');
    if (Object.keys(write).length > 0) expect(run(play.events.before, write)).toBe('');
    await writeFile(target, 'new\n');
    if (Object.keys(write).length > 0) expect(run(play.events.after, { ...write, hook_event_name: play.events.after })).toBe('');
    const said = run(play.events.stop, play.stop());
    if (play.says) expect(JSON.parse(said)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 changed, 1 new · turnback undo [0-9a-z]{8}$/) });
    else expect(said).toBe('');

    const list = repo.tb(['list']).stdout;
    expect(list).toContain(`${play.agent} ${SESSION} · turn 1 "shout and add a file"`);
    expect(list).toMatch(/sed -i/);
    const log = await hookLog(repo);
    expect(log.every((line) => line.ok)).toBe(true);
    // Each after event ended the call its before event began (by id, or paired by order).
    expect(log.filter((line) => line.event === play.events.after).map((line) => /^call .* ended: 1 (changed|new)$/.test(line.action ?? ''))).toEqual(Object.keys(play.write('', '')).length > 0 ? [true, true] : [true]);
    expect(repo.tb(['undo', '--yes', '--delete-created']).code).toBe(0);
    const after = await listing(repo.proj);
    for (const [name, value] of Object.entries(start)) expect(after[name]).toBe(value);
    expect(after['new.txt']).toBeUndefined();

    expect(repo.tb(['hooks', 'uninstall', play.agent]).code).toBe(0);
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe('several agents in one project at once', () => {
  it('Claude Code and Codex interleaved: each turn is its own, listed under its agent, its line says only its own files', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    expect(repo.tb(['hooks', 'install', 'codex']).code).toBe(0);
    const claude = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const codex = await installedCommands(path.join(repo.proj, '.codex', 'hooks.json'));
    const c = { session_id: 'claude-one', cwd: repo.proj, transcript_path: null };
    const x = { session_id: 'codex-two', turn_id: 't1', cwd: repo.proj, transcript_path: null };
    const ok = (r: { code: number | null }): void => expect(r.code).toBe(0);
    ok(fire(repo, claude.UserPromptSubmit, { ...c, hook_event_name: 'UserPromptSubmit', prompt: 'write x' }));
    ok(fire(repo, codex.UserPromptSubmit, { ...x, hook_event_name: 'UserPromptSubmit', prompt: 'write y' }));
    const writeX = { ...c, tool_name: 'Write', tool_input: { file_path: path.join(repo.proj, 'x.txt'), content: 'x\n' }, tool_use_id: 'toolu_x' };
    const patchY = { ...x, tool_name: 'apply_patch', tool_input: { command: '*** Begin Patch\n*** Add File: y.txt\n+y\n*** End Patch\n' }, tool_use_id: 'call_y' };
    ok(fire(repo, claude.PreToolUse, { ...writeX, hook_event_name: 'PreToolUse' }));
    ok(fire(repo, codex.PreToolUse, { ...patchY, hook_event_name: 'PreToolUse' }));
    await writeFile(path.join(repo.proj, 'y.txt'), 'y\n');
    await writeFile(path.join(repo.proj, 'x.txt'), 'x\n');
    ok(fire(repo, codex.PostToolUse, { ...patchY, hook_event_name: 'PostToolUse', tool_response: 'ok' }));
    ok(fire(repo, claude.PostToolUse, { ...writeX, hook_event_name: 'PostToolUse', tool_response: {} }));
    const codexSaid = fire(repo, codex.Stop, { ...x, hook_event_name: 'Stop' });
    const claudeSaid = fire(repo, claude.Stop, { ...c, hook_event_name: 'Stop', stop_hook_active: false });
    expect(JSON.parse(codexSaid.stdout)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 new · /) });
    expect(JSON.parse(claudeSaid.stdout)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 new · /) });
    const list = repo.tb(['list']).stdout;
    expect(list).toMatch(/claude claude-o… · turn 1 "write x"/);
    expect(list).toMatch(/codex codex-tw… · turn 1 "write y"/);
    expect(list).toContain('before Write x.txt');
    expect(list).toContain('before apply_patch y.txt');
    expect((await hookLog(repo)).every((line) => line.ok)).toBe(true);
    expect(repo.tb(['undo', '--call', 'call_y', '--yes', '--delete-created']).code).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, 'y.txt'))).toBe(false);
    expect(fs.existsSync(path.join(repo.proj, 'x.txt'))).toBe(true);
    expect(await listing(repo.proj)).toMatchObject({ 'a.txt': expect.any(String), 'x.txt': expect.any(String) });
  });
});

describe("Codex's hooks feature", () => {
  it('install says when Codex has hooks turned off, and --codex-feature turns them on, keeping the rest of config.toml', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const config = path.join(repo.home, '.codex', 'config.toml');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    const mine = 'model = "gpt-5-codex" # mine\n\n[features]\nhooks = false # off for now\n\n[tui]\nnotifications = true\n';
    await writeFile(config, mine);
    const plain = repo.tb(['hooks', 'install', 'codex']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("Codex's hooks feature is off");
    expect(plain.stdout).toContain('--codex-feature');
    // `codex exec` drops a hook's message (test/agents/codex.test.ts proves it with the binary).
    expect(plain.stdout).toContain('note: `codex exec` shows that a hook ran, never what it said: after `codex exec`, `turnback list` shows the turn');
    expect(fs.readFileSync(config, 'utf8')).toBe(mine);
    const on = repo.tb(['hooks', 'install', 'codex', '--codex-feature']);
    expect(on.code).toBe(0);
    expect(on.stdout).toContain("turned Codex's hooks feature on");
    expect(fs.readFileSync(config, 'utf8')).toBe(mine.replace('hooks = false # off for now', 'hooks = true # off for now'));
    expect(repo.tb(['hooks', 'install', 'codex', '--codex-feature']).stdout).toContain('is on already');
  });
});

describe('Qwen Code: UserPromptSubmit before every model request of a turn', () => {
  // Qwen Code 0.15.10 fires UserPromptSubmit for each request of a turn, the ones carrying tool
  // results too, with the request's text as the prompt: empty (GeminiClient.sendMessageStream).
  it('an empty prompt inside an open turn does not start a turn; one after the turn ended does', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'qwen']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.qwen', 'settings.json'));
    const base = { session_id: 'qwen-1', cwd: repo.proj, transcript_path: '', timestamp: '2026-12-03T10:00:00Z' };
    const ok = (event: string, payload: Json): void => expect(fire(repo, commands[event], { ...base, hook_event_name: event, ...payload }).code).toBe(0);
    ok('UserPromptSubmit', { prompt: 'shout a' });
    const shell = { tool_name: 'run_shell_command', tool_input: { command: "sed -i 's/a/A/' a.txt" }, tool_use_id: 'toolu_1_x' };
    ok('PreToolUse', shell);
    sh(repo, "sed -i 's/a/A/' a.txt");
    ok('PostToolUse', shell);
    ok('UserPromptSubmit', { prompt: '' });
    ok('Stop', { stop_hook_active: false, last_assistant_message: 'done' });
    const turns = (JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { agent?: { role: string; turn: number } }[] }).checkpoints.filter((c) => c.agent?.role === 'boundary');
    expect(turns.map((c) => c.agent?.turn)).toEqual([1]);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(fs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
    // Outside a turn nothing is going on: an empty prompt is a turn of its own.
    ok('UserPromptSubmit', { prompt: '' });
    const after = (JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { agent?: { role: string } }[] }).checkpoints.filter((c) => c.agent?.role === 'boundary');
    expect(after).toHaveLength(2);
  });
});
