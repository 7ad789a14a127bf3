import { readFile, writeFile } from 'node:fs/promises';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';

// Bare `turnback undo` and `turnback list` read the same pictures (issue #29): a turn the agent
// left open — the person interrupted it, so its after and stop events never came — is listed
// with "turnback undo ID undoes it", and undo must find it and take it back.

describe('a turn an agent left open', () => {
  it('list offers it, and a bare undo takes it back: the file its shell call removed comes back byte for byte', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const notes = 'my notes, never committed\n';
    await writeFile(path.join(repo.proj, 'notes.txt'), notes);
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const common = { session_id: 'interrupted', cwd: repo.proj, transcript_path: null };
    expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'clean up' }).code).toBe(0);
    expect(fire(repo, commands.PreToolUse, { ...common, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'rm notes.txt' }, tool_use_id: 'toolu_rm' }).code).toBe(0);
    sh(repo, 'rm notes.txt');
    // Interrupted here: no PostToolUse, no Stop.
    const list = repo.tb(['list']).stdout;
    expect(list).toMatch(/claude interrup… · turn 1 "clean up" .*turnback undo [0-9a-z]{8} undoes it/);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(undo.stderr).toContain('recorded the 2 calls its hooks left open');
    expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(notes);
    // The agent's late events change nothing and fail nothing.
    expect(fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }).code).toBe(0);
    expect(fs.readFileSync(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(notes);
  });
});
