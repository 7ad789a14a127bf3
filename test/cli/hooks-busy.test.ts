import { readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';
import { whenFolderSays } from '../helpers/watch.js';

// A hook whose event waits for the store past its budget (issue #29's fault campaign, "parallel
// tool calls": 24 before-tool events queue on the store lock, and on a busy machine the last of
// them get it after their hook's client has left). The agent went ahead when the client left, so
// a picture taken then may already hold the tool's change: such a call's "before" was the tree
// after the tool, and its end said "no file changed" for a file the tool removed. The event must
// give up at its budget instead, and say what it did not record. The store is held here by a lock
// file of this live process (as another event holds it); real server, real hooks, real files.

const started: CliRepo[] = [];
afterAll(() => {
  for (const repo of started) repo.tb(['server', 'stop']);
});

type LogLine = { ok: boolean; event: string; session?: string; error?: string; code?: string; action?: string };

async function logLines(log: string): Promise<LogLine[]> {
  return (await readFile(log, 'utf8'))
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LogLine);
}

describe('a hook event that cannot have the store within its budget', () => {
  it('records nothing once the agent went ahead: its call is not pictured (never a picture taken after the tool), the gap says so, and the turn still brings the file back', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nmax_picture_seconds = 2\n' });
    const notes = 'uncommitted notes\n';
    await writeFile(path.join(repo.proj, 'notes.txt'), notes);
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    expect(repo.tb(['server', 'start']).code).toBe(0);
    started.push(repo);
    const common = { session_id: 'busy', cwd: repo.proj, transcript_path: null };
    const env = { CLAUDE_PROJECT_DIR: repo.proj };
    expect(fire(repo, commands.UserPromptSubmit, { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'tidy up' }, env).code).toBe(0);
    const log = (JSON.parse(repo.tb(['hooks', 'status', '--json']).stdout) as { log: string }).log;
    const lockFile = path.join(log.replace(/\.hooks\.log$/, ''), 'store.lock');

    await writeFile(lockFile, `${JSON.stringify({ pid: process.pid, hostname: hostname(), createdAt: new Date().toISOString(), token: 'held-by-the-test' })}\n`);
    const tool = { tool_name: 'Bash', tool_input: { command: 'rm notes.txt' }, tool_use_id: 'toolu_late' };
    // Returns when the hook's client leaves, at its budget: the agent goes ahead and runs the tool.
    const before = fire(repo, commands.PreToolUse, { ...common, hook_event_name: 'PreToolUse', ...tool }, env);
    expect([before.code, before.stdout, before.stderr]).toEqual([0, '', '']);
    sh(repo, 'rm notes.txt');
    await rm(lockFile);
    // The server's own line for the event: a gap, written however the lock came free.
    const serverLine = async (): Promise<LogLine | undefined> => (await logLines(log)).find((line) => line.event === 'PreToolUse' && line.session === 'busy');
    await whenFolderSays(path.dirname(log), async () => (await serverLine()) !== undefined, "the server's line for the late PreToolUse");
    const line = (await serverLine()) as LogLine;
    expect(line.ok).toBe(false);
    expect(line.code).toBe('STORE_BUSY');
    expect(line.error).toMatch(/until this hook's 2 s budget ran out: the Bash call is not pictured/);

    expect(fire(repo, commands.PostToolUse, { ...common, hook_event_name: 'PostToolUse', ...tool, tool_response: {} }, env).code).toBe(0);
    const stop = fire(repo, commands.Stop, { ...common, hook_event_name: 'Stop', stop_hook_active: false }, env);
    expect(JSON.parse(stop.stdout)).toEqual({ systemMessage: expect.stringMatching(/^turnback: 1 deleted · turnback undo [0-9a-z]{8}$/) });
    // No picture of the call: said so, not "changed no file".
    const byCall = repo.tb(['undo', '--call', 'toolu_late', '--dry-run']);
    expect(byCall.code).toBe(2);
    expect(byCall.stderr).toContain('no picture in this project recorded tool call toolu_late');
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(notes);
  });
});
