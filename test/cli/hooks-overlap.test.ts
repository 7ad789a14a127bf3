import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, hookLog, installedCommands, sh, type Json } from './hook-play.js';

// Calls that overlap in time (issue #26 point 2, issue #31): Codex sends a long shell call's
// after event only when its process ends, so a patch made meanwhile falls inside the shell call's
// window; two agents in one project have their turns open at once. A call's or a turn's undo must
// never take back another call's change, and refuses, with the reason, what it cannot attribute.
// Played through the built CLI's hook command with each agent's payload shape.

/** Plays events of one installed agent, checking each hook exits 0. */
async function player(repo: CliRepo, agent: 'codex' | 'claude'): Promise<(event: string, payload: Json) => string> {
  const file = agent === 'codex' ? '.codex/hooks.json' : '.claude/settings.json';
  // The hooks run as processes here: this test plays each event's command.
  expect(repo.tb(['hooks', 'install', agent, '--command-hooks']).code).toBe(0);
  const commands = await installedCommands(path.join(repo.proj, file));
  return (event, payload) => {
    const r = fire(repo, commands[event], { ...payload, hook_event_name: event });
    expect(r.code).toBe(0);
    return r.stdout;
  };
}

const text = (repo: CliRepo, name: string): Promise<string> => readFile(path.join(repo.proj, name), 'utf8');

describe('Codex: a long shell call while a patch lands', () => {
  it("undo --call SHELL brings back the shell's own change, leaves the patch, refuses what changed in the overlap until --force", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const codex = await player(repo, 'codex');
    const base = { session_id: 'codex-1', turn_id: 'turn-1', cwd: repo.proj, transcript_path: null, model: 'gpt-5-codex' };
    const shell = { ...base, tool_name: 'Bash', tool_input: { command: 'sed -i s/a/A/ a.txt; sleep 20; sed -i s/c/C/ c.txt' }, tool_use_id: 'call_shell' };
    const patch = { ...base, tool_name: 'apply_patch', tool_input: { command: '*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n' }, tool_use_id: 'call_patch' };
    codex('UserPromptSubmit', { ...base, prompt: 'fix things' });
    codex('PreToolUse', shell);
    sh(repo, 'sed -i s/a/A/ a.txt');
    // Codex yields after 10 s: the model sends a patch while the shell still runs.
    codex('PreToolUse', patch);
    sh(repo, 'sed -i s/b/B/ b.txt');
    // The shell's process, still running, changes c.txt while the patch is open too.
    sh(repo, 'sed -i s/c/C/ c.txt');
    codex('PostToolUse', { ...patch, tool_response: 'Success' });
    codex('PostToolUse', { ...shell, tool_response: 'done' });
    codex('Stop', { ...base, stop_hook_active: false });
    expect((await hookLog(repo)).every((line) => line.ok)).toBe(true);

    const undo = repo.tb(['undo', '--call', 'call_shell', '--yes']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await text(repo, 'a.txt')).toBe('a\n');
    // The patch's change is the patch's: the shell's undo leaves it.
    expect(await text(repo, 'b.txt')).toBe('B\n');
    // c.txt changed while both calls were open: refused, with the reason.
    expect(await text(repo, 'c.txt')).toBe('C\n');
    expect(undo.stdout).toMatch(/refused +c\.txt +changed while apply_patch b\.txt \(codex\) ran too/);
    expect(undo.stdout).not.toMatch(/b\.txt.*restore|restore.*b\.txt/);

    const forced = repo.tb(['undo', '--call', 'call_shell', '--yes', '--force', 'c.txt']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(await text(repo, 'c.txt')).toBe('c\n');
    expect(await text(repo, 'b.txt')).toBe('B\n');

    // The patch's own undo takes back the patch alone.
    expect(repo.tb(['undo', '--call', 'call_patch', '--yes']).code).toBe(0);
    expect(await text(repo, 'b.txt')).toBe('b\n');
  });
});

describe('two agents in one project at once', () => {
  it("undoing Claude's turn leaves Codex's concurrent edit; each end-of-turn line lists its own changes", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const claude = await player(repo, 'claude');
    const codex = await player(repo, 'codex');
    const c = { session_id: 'claude-one', cwd: repo.proj, transcript_path: null };
    const x = { session_id: 'codex-two', turn_id: 't1', cwd: repo.proj, transcript_path: null };
    claude('UserPromptSubmit', { ...c, prompt: 'shout a' });
    codex('UserPromptSubmit', { ...x, prompt: 'shout b' });
    // Claude's shell call runs while Codex patches b.txt.
    const bash = { ...c, tool_name: 'Bash', tool_input: { command: 'sed -i s/a/A/ a.txt' }, tool_use_id: 'toolu_sh' };
    claude('PreToolUse', bash);
    const patch = { ...x, tool_name: 'apply_patch', tool_input: { command: '*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n' }, tool_use_id: 'call_b' };
    codex('PreToolUse', patch);
    await writeFile(path.join(repo.proj, 'b.txt'), 'B\n');
    codex('PostToolUse', { ...patch, tool_response: 'Success' });
    sh(repo, 'sed -i s/a/A/ a.txt');
    claude('PostToolUse', { ...bash, tool_response: {} });
    // Codex's shell call, while Claude writes x.txt with its Write tool.
    const codexShell = { ...x, tool_name: 'Bash', tool_input: { command: 'touch y.txt' }, tool_use_id: 'call_y' };
    codex('PreToolUse', codexShell);
    const write = { ...c, tool_name: 'Write', tool_input: { file_path: path.join(repo.proj, 'x.txt'), content: 'x\n' }, tool_use_id: 'toolu_x' };
    claude('PreToolUse', write);
    await writeFile(path.join(repo.proj, 'x.txt'), 'x\n');
    claude('PostToolUse', { ...write, tool_response: {} });
    sh(repo, 'touch y.txt');
    codex('PostToolUse', { ...codexShell, tool_response: 'ok' });
    const claudeSaid = JSON.parse(claude('Stop', { ...c, stop_hook_active: false })) as { systemMessage: string };
    const codexSaid = JSON.parse(codex('Stop', { ...x })) as { systemMessage: string };
    expect(claudeSaid.systemMessage).toMatch(/^turnback: 1 changed, 1 new · turnback undo [0-9a-f]{8}$/);
    expect(codexSaid.systemMessage).toMatch(/^turnback: 1 changed, 1 new · turnback undo [0-9a-f]{8}$/);
    expect((await hookLog(repo)).every((line) => line.ok)).toBe(true);

    const claudeTurn = /turnback undo ([0-9a-f]{8})/.exec(claudeSaid.systemMessage)?.[1] as string;
    const undo = repo.tb(['undo', claudeTurn, '--yes', '--delete-created']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await text(repo, 'a.txt')).toBe('a\n');
    expect(await text(repo, 'b.txt')).toBe('B\n');
    await expect(text(repo, 'x.txt')).rejects.toThrow();
    expect(await text(repo, 'y.txt')).toBe('');
  });

  it('refuses, with the reason, a change made while only the two turns were open, until --force', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const claude = await player(repo, 'claude');
    const codex = await player(repo, 'codex');
    const c = { session_id: 'claude-one', cwd: repo.proj, transcript_path: null };
    const x = { session_id: 'codex-two', turn_id: 't1', cwd: repo.proj, transcript_path: null };
    claude('UserPromptSubmit', { ...c, prompt: 'one' });
    codex('UserPromptSubmit', { ...x, prompt: 'two' });
    // No tool call of either is open: which agent changed it cannot be told.
    await writeFile(path.join(repo.proj, 'a.txt'), 'who?\n');
    const bash = { ...c, tool_name: 'Bash', tool_input: { command: 'true' }, tool_use_id: 'toolu_1' };
    claude('PreToolUse', bash);
    claude('PostToolUse', { ...bash, tool_response: {} });
    const said = JSON.parse(claude('Stop', { ...c, stop_hook_active: false })) as { systemMessage: string };
    expect(said.systemMessage).toMatch(/1 more changed while another agent's call ran too/);
    codex('Stop', { ...x });
    const turn = /turnback undo ([0-9a-f]{8})/.exec(said.systemMessage)?.[1] as string;
    const refused = repo.tb(['undo', turn, '--yes']);
    expect(await text(repo, 'a.txt')).toBe('who?\n');
    expect(refused.stdout + refused.stderr).toMatch(/a\.txt.*changed while codex's turn "two" ran too/);
    expect(repo.tb(['undo', turn, '--yes', '--force', 'a.txt']).code).toBe(0);
    expect(await text(repo, 'a.txt')).toBe('a\n');
  });
});
