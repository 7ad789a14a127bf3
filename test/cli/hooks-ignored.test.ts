import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';

// Ignored files an agent's tool deleted (issue #27, "ignored files deleted by a command are not
// mentioned"): `turnback run` names them, and so must an agent's turn, whose pictures are taken
// by different processes (the prompt's hook, the stop's hook). The Stop hook's line says them
// once, and `turnback show` lists them as rows, as `run` does. The installed hooks, played with
// Claude Code's payloads; real files, real git, the built command.

async function claudeTurn(repo: CliRepo, prompt: string, command: string): Promise<string> {
  expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
  const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
  const common = { session_id: 'ignored-files', cwd: repo.proj, transcript_path: null };
  const env = { CLAUDE_PROJECT_DIR: repo.proj };
  const tool = { tool_name: 'Bash', tool_input: { command }, tool_use_id: 'toolu_rm' };
  expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt }, env).code).toBe(0);
  expect(fire(repo, commands.PreToolUse, { ...common, hook_event_name: 'PreToolUse', ...tool }, env).code).toBe(0);
  sh(repo, command);
  expect(fire(repo, commands.PostToolUse, { ...common, hook_event_name: 'PostToolUse', ...tool, tool_response: { success: true } }, env).code).toBe(0);
  const stop = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }, env);
  expect([stop.code, stop.stderr]).toEqual([0, '']);
  return stop.stdout;
}

async function ignoredFiles(): Promise<CliRepo> {
  const repo = await cliRepo({ '.gitignore': 'debug.log\n.cache/\n', 'kept.txt': 'k\n' });
  await writeFile(path.join(repo.proj, 'debug.log'), 'log\n');
  await mkdir(path.join(repo.proj, '.cache'));
  await writeFile(path.join(repo.proj, '.cache', 'blob'), 'cached\n');
  return repo;
}

describe('ignored files an agent deleted are named, as run names them', () => {
  it('the Stop line says them once, and show lists each as a row with why it has no copy', async () => {
    const repo = await ignoredFiles();
    const stdout = await claudeTurn(repo, 'clean up', 'rm -rf debug.log .cache kept.txt');
    const message = (JSON.parse(stdout) as { systemMessage: string }).systemMessage;
    expect(message).toMatch(/^turnback: 1 deleted · turnback undo [0-9a-z]{8} · deleted \.cache\/, debug\.log \(ignored: no copy was kept\)$/);
    const shortId = /turnback undo ([0-9a-z]{8})/.exec(message)?.[1] as string;

    const shown = repo.tb(['show', shortId]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines.filter((line) => /deleted +kept\.txt/.test(line))).toHaveLength(1);
    expect(lines.filter((line) => /deleted +debug\.log +ignored: no copy was kept/.test(line))).toHaveLength(1);
    expect(lines.filter((line) => /deleted +\.cache\/ +ignored: no copy was kept/.test(line))).toHaveLength(1);
    // A path given to show narrows these rows too.
    const narrowed = repo.tb(['show', shortId, 'debug.log']);
    expect(narrowed.stdout).toMatch(/deleted +debug\.log +ignored: no copy was kept/);
    expect(narrowed.stdout).not.toContain('.cache/');
    const json = JSON.parse(repo.tb(['show', shortId, '--json']).stdout) as { list: { ignoredDeleted?: string[] } };
    expect(json.list.ignoredDeleted).toEqual(['.cache/', 'debug.log']);
  });

  it('a turn that deleted only ignored files says that, with no undo to offer (the hooks in their own processes)', async () => {
    const repo = await ignoredFiles();
    repo.env.TURNBACK_SERVER = 'off';
    const stdout = await claudeTurn(repo, 'drop the log', 'rm -f debug.log');
    expect(JSON.parse(stdout)).toEqual({ systemMessage: 'turnback: deleted debug.log (ignored: no copy was kept)' });
  });

  it('show names them for a turnback run too, as its own list did', async () => {
    const repo = await ignoredFiles();
    const run = repo.tb(['run', '--', 'rm', '-f', 'debug.log', 'kept.txt']);
    expect(run.stderr).toMatch(/deleted +debug\.log +ignored: no copy was kept/);
    const shown = repo.tb(['show', repo.newestId()]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n').filter((line) => /deleted +debug\.log +ignored: no copy was kept/.test(line))).toHaveLength(1);
  });
});
