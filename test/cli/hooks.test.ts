import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, hookLog, installedCommands, sh, type Json } from './hook-play.js';
import { listing } from '../session/helpers.js';
// Claude Code's payloads, typed by the hook input types of the real Agent SDK (a dev dependency).
import type { PostToolUseHookInput, PreToolUseHookInput, StopHookInput, UserPromptSubmitHookInput } from '@anthropic-ai/claude-agent-sdk';

// The agents' hooks, end to end: `turnback hooks install` writes into the agent's own
// configuration; the test then plays the agent — it reads the commands install wrote, runs each
// with the agent's documented payload on stdin and the agent's environment, and performs the
// tool's real effect between its before and after events — and undoes a tool call, a turn and
// everything, checking the tree byte for byte.

/** One Claude Code session, as Claude Code runs its hooks. */
function claudeSession(repo: CliRepo, commands: Record<string, string>, sessionId: string) {
  const env = { CLAUDE_PROJECT_DIR: repo.proj };
  const common = { session_id: sessionId, transcript_path: path.join(repo.home, `${sessionId}.jsonl`), cwd: repo.proj, permission_mode: 'default' };
  let tools = 0;
  return {
    prompt(prompt: string) {
      const r = fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt } satisfies UserPromptSubmitHookInput, env);
      expect([r.code, r.stdout]).toEqual([0, '']);
    },
    /** Runs one tool: the before hook, `effect`, the after hook; returns its tool_use_id. */
    tool(name: string, input: Json, effect: () => void | Promise<void>): Promise<string> {
      const id = `toolu_${sessionId.slice(0, 4)}_${++tools}`;
      return (async () => {
        const before = fire(repo, commands.PreToolUse, { ...common, hook_event_name: 'PreToolUse', tool_name: name, tool_input: input, tool_use_id: id } satisfies PreToolUseHookInput, env);
        expect([before.code, before.stdout]).toEqual([0, '']);
        await effect();
        const after = fire(repo, commands.PostToolUse, { ...common, hook_event_name: 'PostToolUse', tool_name: name, tool_input: input, tool_use_id: id, tool_response: { success: true } } satisfies PostToolUseHookInput, env);
        expect([after.code, after.stdout]).toEqual([0, '']);
        return id;
      })();
    },
    stop(): string {
      const r = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false } satisfies StopHookInput, env);
      expect(r.code).toBe(0);
      return r.stdout;
    },
  };
}

describe('turnback hooks: Claude Code', () => {
  it('--command-hooks: install keeps the hooks already there, twice changes nothing, uninstall gives the file back byte for byte', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const settingsFile = path.join(repo.proj, '.claude', 'settings.json');
    const mine = { permissions: { allow: ['Bash(ls)'] }, hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo done' }] }], PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'true' }] }] } };
    await mkdir(path.dirname(settingsFile));
    const original = `${JSON.stringify(mine, null, 2)}\n`;
    await writeFile(settingsFile, original);

    const install = repo.tb(['hooks', 'install', 'claude', '--command-hooks']);
    expect(install.code).toBe(0);
    expect(install.stdout).toContain('UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, Stop, SessionEnd');
    const installed = await readFile(settingsFile, 'utf8');
    const settings = JSON.parse(installed) as { permissions: unknown; hooks: Record<string, Json[]> };
    expect(settings.permissions).toEqual(mine.permissions);
    expect(settings.hooks.Stop?.[0]).toEqual(mine.hooks.Stop[0]);
    expect(settings.hooks.PreToolUse?.[0]).toEqual(mine.hooks.PreToolUse[0]);
    expect(Object.keys(await installedCommands(settingsFile)).sort()).toEqual(['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd', 'Stop', 'UserPromptSubmit']);
    expect(fs.existsSync(path.join(repo.proj, '.claude', 'settings.local.json'))).toBe(false);

    const again = repo.tb(['hooks', 'install', 'claude', '--command-hooks']);
    expect(again.stdout).toContain('nothing changed');
    expect(await readFile(settingsFile, 'utf8')).toBe(installed);

    const status = repo.tb(['hooks', 'status']);
    expect(status.stdout).toContain('Claude Code: project: installed');

    const uninstall = repo.tb(['hooks', 'uninstall', 'claude']);
    expect(uninstall.code).toBe(0);
    expect(await readFile(settingsFile, 'utf8')).toBe(original);
    expect(repo.tb(['hooks', 'uninstall', 'claude']).stdout).toContain('no turnback hooks');
  });

  it('the default: the committed file and this machine\'s own keep what they hold; the hooks go in the local file; twice changes nothing; uninstall gives both back byte for byte', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const settingsFile = path.join(repo.proj, '.claude', 'settings.json');
    const localFile = path.join(repo.proj, '.claude', 'settings.local.json');
    const mine = { permissions: { allow: ['Bash(ls)'] }, hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo done' }] }] } };
    const mineLocal = { permissions: { allow: ['Bash(cat *)'] }, hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'true' }] }] } };
    await mkdir(path.dirname(settingsFile));
    const original = `${JSON.stringify(mine, null, 2)}\n`;
    const originalLocal = `${JSON.stringify(mineLocal, null, 4)}\n`;
    await writeFile(settingsFile, original);
    await writeFile(localFile, originalLocal, { mode: 0o600 });

    const install = repo.tb(['hooks', 'install', 'claude']);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, Stop, SessionEnd');
    expect(install.stdout).toContain('PreToolUse, PostToolUse, PostToolUseFailure: HTTP hooks to the command server');
    // The committed file is not touched: it holds no turnback hook, and no secret.
    expect(await readFile(settingsFile, 'utf8')).toBe(original);
    const installed = await readFile(localFile, 'utf8');
    const settings = JSON.parse(installed) as { permissions: unknown; hooks: Record<string, Json[]> };
    expect(settings.permissions).toEqual(mineLocal.permissions);
    expect(settings.hooks.PreToolUse?.[0]).toEqual(mineLocal.hooks.PreToolUse[0]);
    // The turn's own events stay commands (only a process can start a server); the tool events are HTTP hooks.
    expect(Object.keys(await installedCommands(localFile)).sort()).toEqual(['SessionEnd', 'Stop', 'UserPromptSubmit']);
    for (const event of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']) expect(settings.hooks[event]?.at(-1)).toMatchObject({ matcher: expect.any(String), hooks: [{ type: 'http', url: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:[0-9]+/hook/claude/${event}$`)) }] });
    expect((await stat(localFile)).mode & 0o077).toBe(0);

    const again = repo.tb(['hooks', 'install', 'claude']);
    expect(again.stdout).toContain('nothing changed');
    expect(await readFile(localFile, 'utf8')).toBe(installed);

    const status = repo.tb(['hooks', 'status']);
    expect(status.stdout).toContain(`Claude Code: local: installed (${localFile})`);

    const uninstall = repo.tb(['hooks', 'uninstall', 'claude']);
    expect(uninstall.code).toBe(0);
    expect(await readFile(localFile, 'utf8')).toBe(originalLocal);
    expect(await readFile(settingsFile, 'utf8')).toBe(original);
    // The line install added to keep the local file out of git went with it.
    expect(fs.existsSync(path.join(repo.proj, '.claude', '.gitignore'))).toBe(false);
    expect(repo.tb(['hooks', 'uninstall', 'claude']).stdout).toContain('no turnback hooks');
    repo.tb(['server', 'stop']);
  });

  it('the default install takes an earlier install\'s commands out of the committed file, so no event runs twice', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const settingsFile = path.join(repo.proj, '.claude', 'settings.json');
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const install = repo.tb(['hooks', 'install', 'claude']);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('taken out of');
    expect(install.stdout).toContain('(they would run twice)');
    // install had made the committed file: it is gone again, not left holding an empty "hooks".
    expect(fs.existsSync(settingsFile)).toBe(false);
    expect(Object.keys(await installedCommands(path.join(repo.proj, '.claude', 'settings.local.json'))).sort()).toEqual(['SessionEnd', 'Stop', 'UserPromptSubmit']);
    // And back: --command-hooks takes the local file's hooks out the same way.
    const back = repo.tb(['hooks', 'install', 'claude', '--command-hooks']);
    expect(back.code, back.stderr).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, '.claude', 'settings.local.json'))).toBe(false);
    expect(Object.keys(await installedCommands(settingsFile)).sort()).toEqual(['PostToolUse', 'PostToolUseFailure', 'PreToolUse', 'SessionEnd', 'Stop', 'UserPromptSubmit']);
    repo.tb(['server', 'stop']);
  });

  it('--user installs into your own settings (every project), HTTP hooks for the tool events, status says so, and uninstall --user takes it out', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const userFile = path.join(repo.home, '.claude', 'settings.json');
    expect(repo.tb(['hooks', 'install', 'claude', '--user']).code).toBe(0);
    expect(Object.keys(await installedCommands(userFile)).sort()).toEqual(['SessionEnd', 'Stop', 'UserPromptSubmit']);
    expect(await readFile(userFile, 'utf8')).toContain('/hook/claude/PreToolUse');
    // The user's own file made by install holds the secret: owner-only.
    expect((await stat(userFile)).mode & 0o077).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, '.claude'))).toBe(false);
    expect(repo.tb(['hooks', 'status']).stdout).toContain('Claude Code: user: installed');
    expect(repo.tb(['hooks', 'uninstall', 'claude', '--user']).code).toBe(0);
    expect(fs.existsSync(userFile)).toBe(false);
    repo.tb(['server', 'stop']);
  });

  it('--user --command-hooks installs every event as a command into your own settings, and uninstall --user takes it out', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const userFile = path.join(repo.home, '.claude', 'settings.json');
    expect(repo.tb(['hooks', 'install', 'claude', '--user', '--command-hooks']).code).toBe(0);
    expect(Object.keys(await installedCommands(userFile))).toContain('PreToolUse');
    expect(fs.existsSync(path.join(repo.proj, '.claude'))).toBe(false);
    expect(repo.tb(['hooks', 'status']).stdout).toContain('Claude Code: user: installed');
    expect(repo.tb(['hooks', 'uninstall', 'claude', '--user']).code).toBe(0);
    expect(fs.existsSync(userFile)).toBe(false);
  });

  it.each([
    ['the default', [], 'settings.local.json'],
    ['--command-hooks', ['--command-hooks'], 'settings.json'],
  ] as const)('a file install made is removed by uninstall, folder and all (%s); a file turnback cannot read is never rewritten', async (_case, flags, name) => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', ...flags]).code).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, '.claude', name))).toBe(true);
    expect(repo.tb(['hooks', 'uninstall', 'claude']).code).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, '.claude'))).toBe(false);

    await mkdir(path.join(repo.proj, '.gemini'));
    const commented = '{\n  // mine\n  "theme": "dark"\n}\n';
    await writeFile(path.join(repo.proj, '.gemini', 'settings.json'), commented);
    const refused = repo.tb(['hooks', 'install', 'gemini']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('nothing was changed');
    expect(await readFile(path.join(repo.proj, '.gemini', 'settings.json'), 'utf8')).toBe(commented);
    expect(repo.tb(['hooks', 'install', 'nosuchagent']).code).toBe(2);
    if (flags.length === 0) repo.tb(['server', 'stop']);
  });

  it('plays three prompts with real tool effects; undoes one tool call, redoes it, undoes a turn, then everything, byte for byte', async () => {
    const repo = await cliRepo({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n', 'c.txt': 'gamma\n', 'src/keep.ts': 'export {};\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const claude = claudeSession(repo, commands, '6f2a1b3c-9d8e-4f00-a1b2-c3d4e5f60718');
    const start = await listing(repo.proj);

    claude.prompt('add a greeting\nand say why');
    await claude.tool('Write', { file_path: path.join(repo.proj, 'hello.txt'), content: 'hello\n' }, () => writeFile(path.join(repo.proj, 'hello.txt'), 'hello\n'));
    await claude.tool('Bash', { command: "sed -i 's/alpha/ALPHA/' a.txt", description: 'shout' }, () => sh(repo, "sed -i 's/alpha/ALPHA/' a.txt"));
    const first = claude.stop();
    expect(JSON.parse(first)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 changed, 1 new · turnback undo [0-9a-z]{8}$/) });

    const turn2 = await listing(repo.proj);
    claude.prompt('tidy up');
    await claude.tool('Edit', { file_path: path.join(repo.proj, 'b.txt'), old_string: 'beta', new_string: 'BETA' }, () => writeFile(path.join(repo.proj, 'b.txt'), 'BETA\n'));
    const removal = await claude.tool('Bash', { command: 'rm c.txt' }, () => sh(repo, 'rm c.txt'));
    // A change no tool event bracketed (an MCP server's write, say) is still the turn's.
    await writeFile(path.join(repo.proj, 'src', 'unbracketed.ts'), 'export const x = 1;\n');
    expect(JSON.parse(claude.stop())).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 changed, 1 new, 1 deleted · turnback undo /) });

    const turn3 = await listing(repo.proj);
    claude.prompt('one more thing');
    await claude.tool('MultiEdit', { file_path: path.join(repo.proj, 'a.txt'), edits: [{ old_string: 'ALPHA', new_string: 'omega' }] }, () => writeFile(path.join(repo.proj, 'a.txt'), 'omega\n'));
    await claude.tool('Read', { file_path: path.join(repo.proj, 'b.txt') }, () => undefined);
    const fetched = await claude.tool('WebFetch', { url: 'https://example.com/docs', prompt: 'read it' }, () => undefined);
    claude.stop();
    const end = await listing(repo.proj);

    const list = repo.tb(['list']);
    expect(list.stdout).toMatch(/claude 6f2a1b3c… · turn 3 "one more thing" ·/);
    expect(list.stdout).toMatch(/claude 6f2a1b3c… · turn 2 "tidy up" ·.*3 files changed/);
    expect(list.stdout).toMatch(/claude 6f2a1b3c… · turn 1 "add a greeting" ·.*2 files changed/);
    expect(list.stdout).toContain('before Bash: rm c.txt');
    const json = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { agent?: { name: string; turn: number; role: string } }[] };
    expect(json.checkpoints.filter((c) => c.agent?.role === 'boundary').map((c) => c.agent?.turn)).toEqual([3, 2, 1]);

    // One tool call: only what `rm c.txt` did comes back; every later change stays.
    const undoCall = repo.tb(['undo', '--call', removal, '--yes']);
    expect(undoCall.code).toBe(0);
    expect(await listing(repo.proj)).toEqual({ ...end, 'c.txt': start['c.txt'] });
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await listing(repo.proj)).toEqual(end);

    // A bare undo takes back the last turn.
    const undoTurn = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undoTurn.code).toBe(0);
    expect(undoTurn.stdout).toContain('claude turn 3: one more thing');
    // The web call reached the network: the receipt says a file restore cannot take it back.
    expect(undoTurn.stdout).toContain(`not undone  call ${fetched}`);
    expect(await listing(repo.proj)).toEqual(turn3);

    // And everything, to before the first prompt.
    const boundaries = (JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { id: string; agent?: { turn: number; role: string } }[] }).checkpoints.filter((c) => c.agent?.role === 'boundary');
    const firstTurn = boundaries.find((c) => c.agent?.turn === 1)?.id as string;
    expect(repo.tb(['undo', firstTurn, '--yes', '--delete-created']).code).toBe(0);
    expect(await listing(repo.proj)).toEqual(start);
    expect(turn2).not.toEqual(start);
    expect((await hookLog(repo)).every((line) => line.ok)).toBe(true);
  });

  it('a tool call retried under the same id (Pre, Pre, Post): undo --call and the turn undo reach the original, not what the first attempt left', async () => {
    const repo = await cliRepo({ 'a.txt': 'original\n', 'b.txt': 'b\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const common = { session_id: 'retry-session', transcript_path: path.join(repo.home, 'retry.jsonl'), cwd: repo.proj, permission_mode: 'default' };
    const env = { CLAUDE_PROJECT_DIR: repo.proj };
    const start = await listing(repo.proj);
    const bash = { ...common, tool_name: 'Bash', tool_input: { command: 'echo v > a.txt' }, tool_use_id: 'toolu_retried' };
    expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'retry it' }, env).code).toBe(0);
    expect(fire(repo, commands.PreToolUse, { ...bash, hook_event_name: 'PreToolUse' }, env).code).toBe(0);
    sh(repo, 'echo v1 > a.txt');
    expect(fire(repo, commands.PreToolUse, { ...bash, hook_event_name: 'PreToolUse' }, env).code).toBe(0);
    sh(repo, 'echo v2 > a.txt');
    expect(fire(repo, commands.PostToolUse, { ...bash, hook_event_name: 'PostToolUse', tool_response: {} }, env).code).toBe(0);
    expect(fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }, env).code).toBe(0);
    const end = await listing(repo.proj);

    const undoCall = repo.tb(['undo', '--call', 'toolu_retried', '--yes']);
    expect(undoCall.code).toBe(0);
    expect(await listing(repo.proj)).toEqual(start);
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await listing(repo.proj)).toEqual(end);
    const undoTurn = repo.tb(['undo', '--yes']);
    expect(undoTurn.code).toBe(0);
    expect(await listing(repo.proj)).toEqual(start);
    expect((await hookLog(repo)).every((line) => line.ok)).toBe(true);
  });

  it('two sessions at once in one project: each turn lists and says only its own tool calls', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const one = claudeSession(repo, commands, 'aaaa1111-session-one');
    const two = claudeSession(repo, commands, 'bbbb2222-session-two');
    one.prompt('write x');
    two.prompt('write y');
    await one.tool('Write', { file_path: path.join(repo.proj, 'x.txt'), content: 'x' }, () => writeFile(path.join(repo.proj, 'x.txt'), 'x\n'));
    const yCall = await two.tool('Write', { file_path: path.join(repo.proj, 'y.txt'), content: 'y' }, () => writeFile(path.join(repo.proj, 'y.txt'), 'y\n'));
    expect(JSON.parse(one.stop())).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 new · /) });
    expect(JSON.parse(two.stop())).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 new · /) });
    const list = repo.tb(['list']).stdout;
    expect(list).toMatch(/claude aaaa1111… · turn 1 "write x"/);
    expect(list).toMatch(/claude bbbb2222… · turn 1 "write y"/);
    expect(repo.tb(['undo', '--call', yCall, '--yes', '--delete-created']).code).toBe(0);
    expect(fs.existsSync(path.join(repo.proj, 'y.txt'))).toBe(false);
    expect(await readFile(path.join(repo.proj, 'x.txt'), 'utf8')).toBe('x\n');
  });

  it("an agent working in a subfolder pictures the whole project: the payload's folder finds its git toplevel", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const common = { session_id: 'sub-session', transcript_path: '', cwd: path.join(repo.proj, 'sub') };
    const bash = { ...common, tool_name: 'Bash', tool_input: { command: 'echo A > ../a.txt' }, tool_use_id: 'toolu_sub' };
    expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'from a subfolder' }).code).toBe(0);
    expect(fire(repo, commands.PreToolUse, { ...bash, hook_event_name: 'PreToolUse' }).code).toBe(0);
    sh(repo, 'echo A > a.txt');
    expect(fire(repo, commands.PostToolUse, { ...bash, hook_event_name: 'PostToolUse', tool_response: {} }).code).toBe(0);
    const said = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false });
    expect(JSON.parse(said.stdout)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 changed · /) });
    expect(repo.tb(['list']).stdout).toMatch(/claude sub-sess… · turn 1 "from a subfolder"/);
  });

  it('never blocks the agent: a malformed payload and a broken store exit 0, print nothing but one line for the broken store, and are logged', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    for (const payload of ['not json', '[1,2]', '{"session_id": "s", "cwd": 7}']) {
      const r = fire(repo, commands.PreToolUse, payload);
      expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    }
    const log = await hookLog(repo);
    expect(log.map((l) => l.ok)).toEqual([false, false, false]);
    expect(log[0]?.error).toContain('not JSON');
    expect(repo.tb(['hooks', 'status']).stdout).toMatch(/last event: PreToolUse .*failed/);

    // A store that cannot be opened (its folder is a file).
    const blocker = path.join(repo.home, 'not-a-folder');
    await writeFile(blocker, 'x');
    const broken = { TURNBACK_DIR: blocker };
    const r = fire(repo, commands.UserPromptSubmit, { session_id: 's1', cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: 'hi' }, broken);
    // Issue #27: a store that fails every event is said once on the agent's stderr, not only in the log.
    expect([r.code, r.stdout]).toEqual([0, '']);
    expect(r.stderr).toMatch(/^turnback: no checkpoints for this project: .+ \(the folder TURNBACK_DIR names\); every hook event fails until it is fixed \(turnback hooks status\)\n$/);
    const brokenLog = (await readFile(`${blocker}.hooks.log`, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { ok: boolean; error: string });
    expect(brokenLog).toHaveLength(1);
    expect(brokenLog[0]?.ok).toBe(false);
    expect(brokenLog[0]?.error.length).toBeGreaterThan(0);
  });

  it('checkpoints off: a hook touches nothing at all, not even its log', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    expect(repo.tb(['off']).code).toBe(0);
    const before = fs.existsSync(path.join(repo.home, 'data')) ? fs.readdirSync(path.join(repo.home, 'data'), { recursive: true }) : [];
    const r = fire(repo, commands.UserPromptSubmit, { session_id: 's', cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: 'x' });
    expect([r.code, r.stdout]).toEqual([0, '']);
    const after = fs.existsSync(path.join(repo.home, 'data')) ? fs.readdirSync(path.join(repo.home, 'data'), { recursive: true }) : [];
    expect(after).toEqual(before);
  });

  it('a hook killed while it works leaves the next events working', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 800; i++) files[`d${i % 20}/f${i}.txt`] = `file ${i}\n`;
    const repo = await cliRepo(files);
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    // In its own process (no server), so the kill stops the work itself.
    const env = { ...repo.env, TURNBACK_SERVER: 'off' };
    const dataDir = path.join(repo.home, 'data', 'turnback');
    await mkdir(dataDir, { recursive: true });
    const storeAppeared = new Promise<void>((resolve) => {
      const watcher = fs.watch(dataDir, () => {
        watcher.close();
        resolve();
      });
    });
    const hook = spawn('sh', ['-c', `exec ${commands.UserPromptSubmit}`], { cwd: repo.proj, env, stdio: ['pipe', 'ignore', 'ignore'] });
    hook.stdin.end(JSON.stringify({ session_id: 'k1', cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: 'first' }));
    await storeAppeared;
    hook.kill('SIGKILL');
    await once(hook, 'exit');

    const session = claudeSession({ ...repo, env }, commands, 'k1-after-kill');
    session.prompt('second');
    await session.tool('Bash', { command: 'echo new > d0/f0.txt' }, () => sh(repo, 'echo new > d0/f0.txt'));
    expect(JSON.parse(session.stop())).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 changed · /) });
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(await readFile(path.join(repo.proj, 'd0', 'f0.txt'), 'utf8')).toBe('file 0\n');
    await rm(path.join(repo.proj, '.claude'), { recursive: true });
  });
});
