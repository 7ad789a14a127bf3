import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { fire, installedCommands } from './hook-play.js';

// A FIFO where turnback expects a file (issue #31): reading it would wait for a writer forever.
// Every read by path opens without blocking and refuses what is not a regular file, naming it.
// No test here has a timeout of its own: a command that hangs is the failure (spawnSync would
// never return).

function mkfifo(file: string): void {
  execFileSync('mkfifo', [file]);
}

describe('a FIFO named like a file turnback reads', () => {
  it('turnback.toml: status, run, hooks install refuse it by name; a hook event exits 0 at once', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const serverState = () => JSON.parse(repo.tb(['server', 'status', '--json']).stdout) as { running: boolean; pid: number | null; served: number | null };
    expect(repo.tb(['server', 'start']).code).toBe(0);
    const server = serverState();
    expect(server.running).toBe(true);
    const config = path.join(repo.proj, 'turnback.toml');
    mkfifo(config);
    for (const args of [['status'], ['run', '--', 'true'], ['hooks', 'install', 'gemini']]) {
      const result = repo.tb(args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).toContain(config);
      expect(result.stderr, args.join(' ')).toContain('fifo, not a regular file');
    }
    const common = { session_id: 'fifo-session', transcript_path: '', cwd: repo.proj };
    const prompt = fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'hi' }, { CLAUDE_PROJECT_DIR: repo.proj });
    expect([prompt.code, prompt.stdout]).toEqual([0, '']);
    const before = fire(repo, commands.PreToolUse, { ...common, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'true' }, tool_use_id: 'toolu_f' }, { CLAUDE_PROJECT_DIR: repo.proj });
    expect([before.code, before.stdout]).toEqual([0, '']);
    // The server that served all of that is not jammed by the FIFO: the same one answers on.
    const after = serverState();
    expect([after.running, after.pid]).toEqual([true, server.pid]);
    expect(after.served).toBeGreaterThan(server.served ?? 0);
  });

  it("an agent's settings file: hooks install and uninstall refuse it by name, hooks status says it cannot be read", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    await mkdir(path.join(repo.proj, '.claude'));
    const settings = path.join(repo.proj, '.claude', 'settings.json');
    mkfifo(settings);
    for (const args of [['hooks', 'install', 'claude'], ['hooks', 'uninstall', 'claude']]) {
      const result = repo.tb(args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr, args.join(' ')).toContain(settings);
      expect(result.stderr, args.join(' ')).toContain('fifo, not a regular file');
    }
    const status = repo.tb(['hooks', 'status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('cannot be read');
  });
});
