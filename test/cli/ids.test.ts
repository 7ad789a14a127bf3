import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { fire, installedCommands, sh } from './hook-play.js';

// Issue #12, "Lists a person can read": an unknown id is "no picture <id> in this project" (exit
// 2), told apart from a pruned one; any unique prefix of 4 or more characters, of the full id or
// of the short id, works in any case. Through the built binary in a real git repository.

describe('ids a person types', () => {
  it('takes any unique prefix of 4 or more characters, in any case, of the short or the full id', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const id = repo.newestId();
    const short = id.slice(-8);
    for (const typed of [short, short.slice(0, 4).toUpperCase(), id.slice(0, 15), ` ${id} `]) {
      const shown = repo.tb(['show', typed]);
      expect(shown.code, `typed ${typed}`).toBe(0);
      expect(shown.stdout).toContain(`id ${id}`);
    }
    const tooShort = repo.tb(['show', short.slice(0, 3)]);
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toContain('not a checkpoint id');
  });

  it('says "no picture <id> in this project" (exit 2) for an id that never existed, and which prefix is ambiguous', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    for (let i = 0; i < 2; i++) expect(repo.tb(['run', '--', 'sh', '-c', `echo ${i} > a.txt`]).code).toBe(0);
    const unknown = repo.tb(['show', 'ABCD1234']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no picture abcd1234 in this project');
    // Both ids start with the same milliseconds-since-1970 digits.
    const ambiguous = repo.tb(['show', repo.newestId().slice(0, 5)]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/matches \d+ pictures/);
  });

  it('tells a pruned id from one that never existed', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nretain = 1\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo 1 > a.txt']).code).toBe(0);
    const first = repo.newestId();
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo 2 > a.txt']).code).toBe(0);
    expect(repo.tb(['prune']).code).toBe(0);
    const pruned = repo.tb(['show', first.slice(-8)]);
    expect(pruned.code).toBe(1);
    expect(pruned.stderr).toContain('was pruned');
  });
});

describe('every id an agent turn prints works with show, diff, undo and revert (issue #26 point 5)', () => {
  it('the Stop line, list, list --json and show (text and --json): each id shows, diffs, undoes and reverts what it names', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['hooks', 'install', 'claude', '--command-hooks']).code).toBe(0);
    const commands = await installedCommands(path.join(repo.proj, '.claude', 'settings.json'));
    const common = { session_id: 'sess-ids', cwd: repo.proj, transcript_path: null };
    const run = (event: string, payload: Record<string, unknown>): string => {
      const r = fire(repo, commands[event], { ...common, ...payload, hook_event_name: event });
      expect(r.code).toBe(0);
      return r.stdout;
    };
    run('UserPromptSubmit', { prompt: 'shout and add' });
    const shell = { tool_name: 'Bash', tool_input: { command: "sed -i 's/a/A/' a.txt" }, tool_use_id: 'toolu_shell1' };
    run('PreToolUse', shell);
    sh(repo, "sed -i 's/a/A/' a.txt");
    run('PostToolUse', { ...shell, tool_response: {} });
    const write = { tool_name: 'Write', tool_input: { file_path: path.join(repo.proj, 'new.txt'), content: 'new\n' }, tool_use_id: 'toolu_write1' };
    run('PreToolUse', write);
    await writeFile(path.join(repo.proj, 'new.txt'), 'new\n');
    run('PostToolUse', { ...write, tool_response: {} });
    const said = (JSON.parse(run('Stop', { stop_hook_active: false })) as { systemMessage: string }).systemMessage;

    // Every id any output printed, and the files the picture it names changed.
    const ids = new Map<string, string[]>();
    const both = ['a.txt', 'new.txt'];
    const stopId = /turnback undo ([0-9a-f]{8})/.exec(said)?.[1] as string;
    ids.set(stopId, both);
    const listed = JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string; shortId: string; label: string; agent?: { role: string; boundary: string } }[] };
    const text = repo.tb(['list', '--all']).stdout;
    for (const row of listed.checkpoints) {
      const files = row.agent?.role === 'call' ? (row.label.includes('sed') ? ['a.txt'] : row.label.includes('new.txt') ? ['new.txt'] : []) : both;
      if (files.length === 0) continue;
      ids.set(row.id, files);
      ids.set(row.shortId, files);
      if (row.agent !== undefined) ids.set(row.agent.boundary, both);
    }
    for (const match of text.matchAll(/turnback undo ([0-9a-f]{8})/g)) ids.set(match[1] as string, both);
    for (const [id, files] of [...ids]) {
      const shown = repo.tb(['show', id]);
      for (const match of shown.stdout.matchAll(/\bid ([0-9]{13}-[0-9a-z]{4}-[0-9a-f]{8})/g)) if (!ids.has(match[1] as string)) ids.set(match[1] as string, files);
      for (const match of shown.stdout.matchAll(/tool calls? (.+)$/gm)) for (const call of (match[1] as string).split(', ')) ids.set(call, call === 'toolu_shell1' ? ['a.txt'] : call === 'toolu_write1' ? ['new.txt'] : files);
      const json = JSON.parse(repo.tb(['show', id, '--json']).stdout) as { calls?: string[]; turnPicture?: { id: string } };
      for (const call of json.calls ?? []) if (!ids.has(call)) ids.set(call, call === 'toolu_shell1' ? ['a.txt'] : call === 'toolu_write1' ? ['new.txt'] : files);
      if (json.turnPicture !== undefined) ids.set(json.turnPicture.id, both);
    }
    // The agent's own tool-call ids are among them (show prints them; undo --call takes them).
    expect([...ids.keys()]).toEqual(expect.arrayContaining(['toolu_shell1', 'toolu_write1', stopId]));
    expect(ids.size).toBeGreaterThanOrEqual(10);

    for (const [id, files] of ids) {
      const shown = repo.tb(['show', id]);
      expect(shown.code, `show ${id}`).toBe(0);
      for (const file of files) expect(shown.stdout, `show ${id}`).toContain(file);
      expect(shown.stdout, `show ${id}`).not.toContain('none changed');
      const diff = repo.tb(['diff', id]);
      expect(diff.code, `diff ${id}`).toBe(0);
      expect(diff.stdout, `diff ${id}`).not.toContain('changed nothing');
      for (const file of files) expect(diff.stdout, `diff ${id}`).toContain(`b/${file}`);
      expect(repo.tb(['undo', id, '--dry-run']).code, `undo ${id} --dry-run`).toBe(0);
      // What the turn created is kept unless asked (issue #26 point 7 is another change).
      const revert = repo.tb(['revert', id, '--dry-run', '--delete-created']);
      expect(revert.code, `revert ${id} --dry-run: ${revert.stdout}${revert.stderr}`).toBe(0);
      for (const file of files) expect(revert.stdout, `revert ${id}`).toContain(file);
      const call = repo.tb(['undo', '--call', id, '--dry-run', '--delete-created']);
      expect(call.code, `undo --call ${id} --dry-run: ${call.stderr}`).toBe(0);
      for (const file of files) expect(call.stdout, `undo --call ${id}`).toContain(file);
    }
    // Nothing was written by the dry runs; one real undo of the shell call by the agent's id.
    expect(readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('A\n');
    expect(repo.tb(['undo', '--call', 'toolu_shell1', '--yes']).code).toBe(0);
    expect(readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
    expect(readFileSync(path.join(repo.proj, 'new.txt'), 'utf8')).toBe('new\n');
  });
});
