import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo, type CliResult } from './harness.js';
import { fire, installedCommands } from './hook-play.js';

// Issue #26, point 4: a project's hook file is committed, so it must run on a teammate's machine.
// It names `turnback` (when `turnback` on PATH is this install) or `npx turnback`, never this
// machine's Node and dist/ paths; `hooks status` says when an installed command would not run here.
// Claude Code's committed file is what `--command-hooks` writes (by default its hooks go in this
// machine's own settings.local.json, which names this machine's paths: test/cli/hook-http.test.ts).

/** `turnback ARGS` in the repository with `env` over its environment. */
function tbWith(repo: CliRepo, args: string[], env: NodeJS.ProcessEnv): CliResult {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: repo.proj, env: { ...repo.env, ...env }, input: '', encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The repository's PATH without the folder that holds this build as `turnback`. */
function pathWithoutTurnback(repo: CliRepo): string {
  const bin = path.join(path.dirname(repo.proj), 'bin');
  return (repo.env.PATH ?? '').split(path.delimiter).filter((folder) => folder !== bin).join(path.delimiter);
}

describe('turnback hooks install: the committed file carries no machine path', () => {
  it('with this install on PATH as `turnback`, every hook runs `turnback hook …`, and it fires', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const install = repo.tb(['hooks', 'install', 'claude', '--command-hooks']);
    expect(install.code, install.stderr).toBe(0);
    const file = path.join(repo.proj, '.claude', 'settings.json');
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(process.execPath);
    expect(text).not.toContain('turnback.cjs');
    const commands = await installedCommands(file);
    expect(commands.PreToolUse).toBe('turnback hook claude PreToolUse');
    const prompt = fire(repo, commands.UserPromptSubmit, { session_id: 's1', cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: 'hello' });
    expect([prompt.code, prompt.stdout, prompt.stderr]).toEqual([0, '', '']);
    expect(repo.tb(['hooks', 'status']).stdout).toContain('last event: UserPromptSubmit');
  });

  it('without it on PATH, the hooks run `npx turnback` and install says how to make that quick', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const install = tbWith(repo, ['hooks', 'install', 'gemini'], { PATH: pathWithoutTurnback(repo) });
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain('the hooks run `npx turnback`');
    const commands = await installedCommands(path.join(repo.proj, '.gemini', 'settings.json'));
    expect(commands.BeforeTool).toBe('npx turnback hook gemini BeforeTool');
  });

  it('--user (a file of this machine alone) keeps this Node and this turnback by absolute path', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--user']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.home, '.claude', 'settings.json'));
    expect(commands.Stop).toContain(process.execPath);
    expect(commands.Stop).toContain('turnback.cjs');
  });

  it('an earlier install of another machine’s paths is replaced by the portable command, not doubled', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const file = path.join(repo.proj, '.claude', 'settings.json');
    await mkdir(path.dirname(file));
    const events = ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'PostToolUseFailure', 'Stop', 'SessionEnd'];
    await writeFile(file, `${JSON.stringify({ hooks: Object.fromEntries(events.map((e) => [e, [{ hooks: [{ type: 'command', command: `'/usr/bin/node' '/home/someone/turnback/dist/cli/turnback.cjs' hook claude ${e}`, timeout: 30 }] }]])) }, null, 2)}\n`);
    const status = repo.tb(['hooks', 'status']);
    expect(status.stdout).toContain('project: its command would not run here: /home/someone/turnback/dist/cli/turnback.cjs does not exist here');
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('/home/someone');
    expect(Object.values(JSON.parse(text).hooks as Record<string, unknown[]>).every((list) => list.length === 1)).toBe(true);
    expect(repo.tb(['hooks', 'status']).stdout).not.toContain('would not run here');
  });

  it('hooks status says when the installed command is not found on PATH here', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const here = repo.tb(['hooks', 'status']);
    expect(here.stdout).toContain('Claude Code: project: installed');
    expect(here.stdout).not.toContain('would not run here');
    const elsewhere = tbWith(repo, ['hooks', 'status', '--json'], { PATH: pathWithoutTurnback(repo) });
    const row = (JSON.parse(elsewhere.stdout) as { agents: { agent: string; problems: string[] }[] }).agents.find((a) => a.agent === 'claude');
    expect(row?.problems).toEqual(['project: its command would not run here: `turnback` is not on PATH here']);
    expect(tbWith(repo, ['hooks', 'status'], { PATH: pathWithoutTurnback(repo) }).stdout).toContain('no event yet, because:\n  project: its command would not run here: `turnback` is not on PATH here');
  });
});
