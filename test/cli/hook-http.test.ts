import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo } from './harness.js';

// Agents' HTTP hooks (src/server/hook-listener.ts): the server listens on 127.0.0.1 and runs a
// posted hook only with the user's secret; install writes Claude Code's tool events as HTTP hooks
// into this machine's own settings file.

const started: CliRepo[] = [];
afterEach(() => {
  for (const repo of started.splice(0)) repo.tb(['server', 'stop']);
});

/** A repository whose server listens; its hook endpoint (port and secret) as the server recorded it. */
async function servedRepo(): Promise<{ repo: CliRepo; port: number; secret: string; endpointFile: string }> {
  const repo = await cliRepo({ 'a.txt': 'a\n' });
  started.push(repo);
  expect(repo.tb(['server', 'start']).code).toBe(0);
  const endpointFile = path.join(repo.home, '.local', 'state', 'turnback', 'hook-endpoint.json');
  const { port, secret } = JSON.parse(await readFile(endpointFile, 'utf8')) as { port: number; secret: string };
  return { repo, port, secret, endpointFile };
}

/** One POST to the listener: its status and body. */
function post(port: number, url: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: url, headers: { 'content-type': 'application/json', ...headers } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      // The rest of an oversized body may still be being written when the answer comes and the server closes.
      response.on('error', () => resolve({ status: response.statusCode ?? -1, body: text }));
    });
    request.on('socket', (socket) => socket.on('error', () => undefined));
    // A server that refuses an oversized body may close before all of it is sent.
    request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? resolve({ status: -1, body: '' }) : reject(error)));
    request.end(body);
  });
}

/** The hook log's lines (every event the hooks ran), for this repository. */
async function hookLog(repo: CliRepo): Promise<string[]> {
  const folder = path.join(repo.home, 'data', 'turnback');
  if (!existsSync(folder)) return [];
  const logs = (await readdir(folder)).filter((name) => name.endsWith('.hooks.log'));
  return (await Promise.all(logs.map((name) => readFile(path.join(folder, name), 'utf8')))).join('').split('\n').filter((line) => line.length > 0);
}

describe('HTTP hooks', () => {
  it('the endpoint is owner-only and outside the project; a request without the secret, with another, or with a body over the limit runs nothing', async () => {
    const { repo, port, secret, endpointFile } = await servedRepo();
    expect(port).toBeGreaterThan(0);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(endpointFile)).mode & 0o077).toBe(0);
    expect((await stat(path.dirname(endpointFile))).mode & 0o077).toBe(0);
    expect(endpointFile.startsWith(repo.proj)).toBe(false);
    const prompt = JSON.stringify({ session_id: 'web', cwd: repo.proj, hook_event_name: 'UserPromptSubmit', prompt: 'from outside' });
    const before = repo.tb(['list', '--json']).stdout;

    expect((await post(port, '/hook/claude/UserPromptSubmit', prompt)).status).toBe(401);
    expect((await post(port, '/hook/claude/UserPromptSubmit', prompt, { 'X-Turnback-Secret': 'f'.repeat(64) })).status).toBe(401);
    expect((await post(port, '/hook/claude/UserPromptSubmit', prompt, { 'X-Turnback-Secret': secret.slice(0, 63) })).status).toBe(401);
    // Over the payload limit (8 MiB), with the right secret: refused before any of it is run.
    const huge = Buffer.alloc(8 * 1024 * 1024 + 1, 0x20);
    const oversize = await post(port, '/hook/claude/UserPromptSubmit', huge, { 'X-Turnback-Secret': secret });
    expect([413, -1]).toContain(oversize.status);
    expect((await post(port, '/hook/nobody/UserPromptSubmit', prompt, { 'X-Turnback-Secret': secret })).status).toBe(404);

    // Nothing ran: no hook event logged, no turn begun, the store's list unchanged.
    expect(await hookLog(repo)).toEqual([]);
    expect(repo.tb(['list', '--json']).stdout).toBe(before);

    // The same request with the secret runs the hook, as a command hook would.
    const ok = await post(port, '/hook/claude/UserPromptSubmit', prompt, { 'X-Turnback-Secret': secret });
    expect(ok).toEqual({ status: 200, body: '{}' });
    expect((await hookLog(repo)).map((line) => (JSON.parse(line) as { event: string; session: string }).session)).toEqual(['web']);

    // A new secret (an install made it again: a new file renamed over the old) holds from the next request on.
    const renewed = 'e'.repeat(64);
    await writeFile(`${endpointFile}.new`, `${JSON.stringify({ port, secret: renewed })}\n`, { mode: 0o600 });
    await rename(`${endpointFile}.new`, endpointFile);
    expect((await post(port, '/hook/claude/UserPromptSubmit', prompt, { 'X-Turnback-Secret': secret })).status).toBe(401);
    expect((await post(port, '/hook/claude/UserPromptSubmit', prompt, { 'X-Turnback-Secret': renewed })).status).toBe(200);
  });

  it('a shell call through HTTP hooks is pictured and named, and the stop answers with the turn\'s line', async () => {
    const { repo, port, secret } = await servedRepo();
    const send = (event: string, extra: Record<string, unknown>): Promise<{ status: number; body: string }> =>
      post(port, `/hook/claude/${event}`, JSON.stringify({ session_id: 'h', cwd: repo.proj, hook_event_name: event, ...extra }), { 'X-Turnback-Secret': secret });
    expect((await send('UserPromptSubmit', { prompt: 'edit through http' })).status).toBe(200);
    const call = { tool_name: 'Bash', tool_input: { command: 'echo b > a.txt' }, tool_use_id: 'toolu_http_1' };
    expect((await send('PreToolUse', call)).status).toBe(200);
    await writeFile(path.join(repo.proj, 'a.txt'), 'b\n');
    expect((await send('PostToolUse', call)).status).toBe(200);
    const stop = await send('Stop', {});
    expect(stop.status).toBe(200);
    expect((JSON.parse(stop.body) as { systemMessage: string }).systemMessage).toMatch(/^turnback: 1 changed · turnback undo [0-9a-f]{8}$/);
    const listed = repo.tb(['list']).stdout;
    expect(listed).toContain('turn 1 "edit through http"');
    expect(listed).toContain('Bash: echo b > a.txt');
    expect(repo.tb(['undo', '--call', 'toolu_http_1', '--yes']).code).toBe(0);
    expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
  });

  it('a command of another process (TURNBACK_SERVER=off) writing to the store between a served pair\'s events: the after event records its call whole beside the other process\'s sealed run, and verify passes', async () => {
    const { repo, port, secret } = await servedRepo();
    const send = (event: string, extra: Record<string, unknown>): Promise<{ status: number; body: string }> =>
      post(port, `/hook/claude/${event}`, JSON.stringify({ session_id: 'h', cwd: repo.proj, hook_event_name: event, ...extra }), { 'X-Turnback-Secret': secret });
    expect((await send('UserPromptSubmit', { prompt: 'two writers' })).status).toBe(200);
    const call = { tool_name: 'Bash', tool_input: { command: 'echo b > a.txt' }, tool_use_id: 'toolu_two_1' };
    expect((await send('PreToolUse', call)).status).toBe(200);
    // A real child in its own process, not served: its run takes the lock, packs and seals a checkpoint of its own.
    const own = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo o > other.txt'], { cwd: repo.proj, env: { ...repo.env, TURNBACK_SERVER: 'off' }, encoding: 'utf8' });
    expect(own.status).toBe(0);
    await writeFile(path.join(repo.proj, 'a.txt'), 'b\n');
    expect((await send('PostToolUse', call)).status).toBe(200);
    const log = await hookLog(repo);
    // The call's window holds what changed in the tree meanwhile: the other process's file too.
    expect((JSON.parse(log.at(-1) as string) as { action?: string }).action).toBe('call toolu_two_1 ended: 1 changed, 1 new');
    expect((await send('Stop', {})).status).toBe(200);
    const listed = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { id: string; label?: string }[] };
    const shown = (label: string): { changes: { path: string }[] } => {
      const found = listed.checkpoints.find((c) => c.label === label);
      expect(found, label).toBeDefined();
      return JSON.parse(repo.tb(['show', (found as { id: string }).id, '--json']).stdout) as { changes: { path: string }[] };
    };
    // The other process's sealed run is in the list the served events read, and the call's checkpoint is whole beside it.
    expect(shown('before Bash: echo b > a.txt').changes.map((c) => c.path)).toEqual(['a.txt', 'other.txt']);
    expect(listed.checkpoints.some((c) => c.label?.includes('echo o > other.txt'))).toBe(true);
    expect(repo.tb(['verify']).code).toBe(0);
  });

  it('a served pair whose server is stopped between its before and after events records the call as one that is not: the changed file listed in both', async () => {
    const recorded: unknown[] = [];
    for (const restart of [false, true]) {
      const { repo, port, secret } = await servedRepo();
      const send = (to: number, event: string, extra: Record<string, unknown>): Promise<{ status: number; body: string }> =>
        post(to, `/hook/claude/${event}`, JSON.stringify({ session_id: 'h', cwd: repo.proj, hook_event_name: event, ...extra }), { 'X-Turnback-Secret': secret });
      expect((await send(port, 'UserPromptSubmit', { prompt: 'edit through http' })).status).toBe(200);
      const call = { tool_name: 'Bash', tool_input: { command: 'echo b > a.txt' }, tool_use_id: 'toolu_http_1' };
      expect((await send(port, 'PreToolUse', call)).status).toBe(200);
      await writeFile(path.join(repo.proj, 'a.txt'), 'b\n');
      await writeFile(path.join(repo.proj, 'new.txt'), 'n\n');
      let after = port;
      if (restart) {
        // A new server: nothing of the before event is in its memory, only in the store.
        expect(repo.tb(['server', 'stop']).code).toBe(0);
        expect(repo.tb(['server', 'start']).code).toBe(0);
        after = (JSON.parse(await readFile(path.join(repo.home, '.local', 'state', 'turnback', 'hook-endpoint.json'), 'utf8')) as { port: number }).port;
      }
      expect((await send(after, 'PostToolUse', call)).status).toBe(200);
      const log = await hookLog(repo);
      expect(log.map((line) => (JSON.parse(line) as { action?: string }).action).at(-1)).toBe('call toolu_http_1 ended: 1 changed, 1 new');
      expect((await send(after, 'Stop', {})).status).toBe(200);
      const listed = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { id: string; kind: string; label?: string; files: number; complete: boolean }[] };
      recorded.push(
        listed.checkpoints.map(({ id, kind, label, files, complete }) => {
          const shown = JSON.parse(repo.tb(['show', id, '--json']).stdout) as { calls: string[]; changes: unknown[]; gaps: unknown[]; partial: boolean };
          // The turn's call is named by its boundary's id, which differs between the runs.
          return { kind, label, files, complete, calls: shown.calls.map((c) => c.replace(/^turn:.*/, 'turn:ID')), changes: shown.changes, gaps: shown.gaps, partial: shown.partial };
        }),
      );
    }
    // The call's own checkpoint (its after event ran in an observer of its own, as every hook event does).
    expect((recorded[0] as { label?: string }[]).find((c) => c.label === 'before Bash: echo b > a.txt')).toMatchObject({
      files: 2,
      complete: true,
      changes: [
        { path: 'a.txt', kind: 'changed' },
        { path: 'new.txt', kind: 'created' },
      ],
      partial: false,
    });
    expect(recorded[1]).toEqual(recorded[0]);
  });

  it('install puts the tool events as HTTP hooks in this machine\'s settings.local.json (owner-only, ignored by git), the rest as commands; uninstall gives the tree back', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    const installed = repo.tb(['hooks', 'install', 'claude', '--json']);
    expect(installed.code, installed.stderr).toBe(0);
    const local = path.join(repo.proj, '.claude', 'settings.local.json');
    expect((await stat(local)).mode & 0o077).toBe(0);
    expect(existsSync(path.join(repo.proj, '.claude', 'settings.json'))).toBe(false);
    const { hooks } = JSON.parse(await readFile(local, 'utf8')) as { hooks: Record<string, { hooks: { type: string; url?: string; command?: string; headers?: Record<string, string> }[] }[]> };
    const { port, secret } = JSON.parse(await readFile(path.join(repo.home, '.local', 'state', 'turnback', 'hook-endpoint.json'), 'utf8')) as { port: number; secret: string };
    for (const event of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']) {
      expect(hooks[event]?.[0]?.hooks[0]).toMatchObject({ type: 'http', url: `http://127.0.0.1:${port}/hook/claude/${event}`, headers: { 'X-Turnback-Secret': secret } });
    }
    for (const event of ['UserPromptSubmit', 'Stop', 'SessionEnd']) expect(hooks[event]?.[0]?.hooks[0]?.command).toMatch(new RegExp(` hook claude ${event}$`));
    // Git does not take the secret into a commit.
    // check-ignore exits 1 (and git() throws) when the file is not ignored.
    repo.git('check-ignore', '-q', '.claude/settings.local.json');
    expect(repo.git('status', '--porcelain', '--untracked-files=all')).not.toContain('settings.local.json');
    // Twice changes nothing.
    expect(repo.tb(['hooks', 'install', 'claude']).stdout).toContain('nothing changed');
    const removed = repo.tb(['hooks', 'uninstall', 'claude']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(existsSync(path.join(repo.proj, '.claude'))).toBe(false);
  });

  it('the file that holds the secret is never copied: git-ignored by install, a turn leaves it out; where git does not ignore it, a run records it without a copy and show, diff and undo say so', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    const installed = repo.tb(['hooks', 'install', 'claude']);
    expect(installed.code, installed.stderr).toBe(0);
    const local = path.join(repo.proj, '.claude', 'settings.local.json');
    const { port, secret } = JSON.parse(await readFile(path.join(repo.home, '.local', 'state', 'turnback', 'hook-endpoint.json'), 'utf8')) as { port: number; secret: string };
    expect(await readFile(local, 'utf8')).toContain(secret);
    // A turn through the listener in which the local file changes: git ignores it (install said
    // so in .claude/.gitignore), so the turn's pictures leave it out and the list counts nothing.
    const send = (event: string, extra: Record<string, unknown>): Promise<{ status: number; body: string }> =>
      post(port, `/hook/claude/${event}`, JSON.stringify({ session_id: 'cred', cwd: repo.proj, hook_event_name: event, ...extra }), { 'X-Turnback-Secret': secret });
    expect((await send('UserPromptSubmit', { prompt: 'allow cat' })).status).toBe(200);
    const call = { tool_name: 'Bash', tool_input: { command: 'allow cat' }, tool_use_id: 'toolu_cred_1' };
    expect((await send('PreToolUse', call)).status).toBe(200);
    await writeFile(local, (await readFile(local, 'utf8')).replace('{', '{\n  "permissions": { "allow": ["Bash(cat *)"] },'));
    expect((await send('PostToolUse', call)).status).toBe(200);
    expect((await send('Stop', {})).status).toBe(200);
    expect(repo.tb(['list']).stdout).toMatch(/turn 1 "allow cat" .* 0 files changed/);

    // Where git does not ignore it (the line taken out of .claude/.gitignore), it is a credential
    // file: recorded by its size and mode, never copied.
    await writeFile(path.join(repo.proj, '.claude', '.gitignore'), '');
    const report = path.join(repo.home, 'run.json');
    const run = repo.tb(['run', '--report', report, '--', 'sh', '-c', 'sed -i s/cat/head/ .claude/settings.local.json']);
    expect(run.code, run.stderr).toBe(0);
    const { checkpoint } = JSON.parse(await readFile(report, 'utf8')) as { checkpoint: string };
    expect(repo.tb(['status']).stdout).toContain('1 credential file recorded without a copy');
    expect(repo.tb(['show', checkpoint]).stdout).toMatch(/changed +\.claude\/settings\.local\.json/);
    expect(repo.tb(['diff', checkpoint]).stdout).toMatch(/^\.claude\/settings\.local\.json: [0-9.]+ (?:B|KiB), no copy \(credential file\) → /m);
    // Nothing else changed, so nothing is written (exit 3) and the undo says why this file is not.
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stderr).toBe(3);
    expect(undo.stdout).toMatch(/\.claude\/settings\.local\.json +no copy \(credential file\)/);
    // Nothing to bring it back from: it keeps what the run left.
    expect(await readFile(local, 'utf8')).toContain('Bash(head *)');
  });

  it('calls whose hooks did not get through, as Claude\'s transcript has them: the next before event sweeps, the stop, list and show name each', async () => {
    const { repo, port, secret } = await servedRepo();
    const transcript = path.join(repo.home, 'session.jsonl');
    const lines: string[] = [];
    const record = async (...values: unknown[]): Promise<void> => {
      lines.push(...values.map((value) => JSON.stringify(value)));
      await writeFile(transcript, `${lines.join('\n')}\n`);
    };
    const toolUse = (id: string, name: string, input: Record<string, unknown>): unknown => ({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'tool_use', id, name, input }] } });
    const result = (id: string): unknown => ({ type: 'user', message: { role: 'user', content: [{ tool_use_id: id, type: 'tool_result', content: 'ok' }] } });
    const failed = (id: string, event: string): unknown => ({ type: 'attachment', attachment: { type: 'hook_non_blocking_error', hookName: `${event}:Bash`, toolUseID: id, hookEvent: event, stderr: `connect ECONNREFUSED 127.0.0.1:${port}`, exitCode: 0 } });
    const send = async (event: string, extra: Record<string, unknown>): Promise<{ status: number; body: string }> => {
      const answer = await post(port, `/hook/claude/${event}`, JSON.stringify({ session_id: 'gone', cwd: repo.proj, transcript_path: transcript, hook_event_name: event, ...extra }), { 'X-Turnback-Secret': secret });
      expect(answer.status).toBe(200);
      return answer;
    };
    const bash = (id: string, command: string): Record<string, unknown> => ({ tool_name: 'Bash', tool_input: { command }, tool_use_id: id });
    await record({ type: 'user', message: { role: 'user', content: 'four files' } });
    await send('UserPromptSubmit', { prompt: 'four files' });
    // 1: both events arrive.
    await record(toolUse('toolu_one', 'Bash', { command: 'echo one > one.txt' }));
    await send('PreToolUse', bash('toolu_one', 'echo one > one.txt'));
    await writeFile(path.join(repo.proj, 'one.txt'), 'one\n');
    await send('PostToolUse', bash('toolu_one', 'echo one > one.txt'));
    await record(result('toolu_one'));
    // 2: its PostToolUse never arrives; Claude says so.
    await record(toolUse('toolu_two', 'Bash', { command: 'echo two > two.txt' }));
    await send('PreToolUse', bash('toolu_two', 'echo two > two.txt'));
    await writeFile(path.join(repo.proj, 'two.txt'), 'two\n');
    await record(failed('toolu_two', 'PostToolUse'), result('toolu_two'));
    // 3: neither arrives.
    await record(toolUse('toolu_three', 'Bash', { command: 'echo three > three.txt' }), failed('toolu_three', 'PreToolUse'));
    await writeFile(path.join(repo.proj, 'three.txt'), 'three\n');
    await record(failed('toolu_three', 'PostToolUse'), result('toolu_three'));
    // 4: a Write, whose picture would be its file alone: it sweeps the whole tree and ends call 2.
    const write = { tool_name: 'Write', tool_input: { file_path: path.join(repo.proj, 'four.txt'), content: 'four\n' }, tool_use_id: 'toolu_four' };
    await record(toolUse('toolu_four', 'Write', write.tool_input));
    await send('PreToolUse', write);
    await writeFile(path.join(repo.proj, 'four.txt'), 'four\n');
    await send('PostToolUse', write);
    await record(result('toolu_four'));
    const stop = JSON.parse((await send('Stop', {})).body) as { systemMessage: string };
    expect(stop.systemMessage).toMatch(/^turnback: 4 new · turnback undo ([0-9a-z]{8}) · 2 calls not pictured, their hooks did not reach turnback \(turnback show \1\)$/);

    const log = await hookLog(repo);
    const actions = log.map((line) => (JSON.parse(line) as { action?: string }).action ?? '');
    expect(actions).toContain('call toolu_four began: whole tree; swept the whole tree: 2 call(s) of this turn not pictured (toolu_two, toolu_three), 1 ended here');
    const list = repo.tb(['list']).stdout;
    expect(list.split('\n').filter((line) => line.includes('⚠'))).toEqual([
      '  ⚠ not pictured: Bash: echo two > two.txt (toolu_two): its PostToolUse hook did not reach turnback; its picture runs on past its end, so it may hold what later calls changed',
      "  ⚠ not pictured: Bash: echo three > three.txt (toolu_three): its PreToolUse and PostToolUse hooks did not reach turnback; nothing was pictured before it, so its changes are the turn's, not its own",
    ]);
    const id = /turnback undo ([0-9a-z]{8})/.exec(stop.systemMessage)?.[1] as string;
    const show = repo.tb(['show', id]).stdout;
    expect(show).toContain('note: not pictured: Bash: echo two > two.txt (toolu_two)');
    expect(show).toContain('note: not pictured: Bash: echo three > three.txt (toolu_three)');
    // Call 2 ended at the sweep: it holds the third call's file, not the fourth's.
    const secondRow = (JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { id: string; label?: string }[] }).checkpoints.find((row) => row.label?.includes('echo two') === true);
    const secondChanges = (JSON.parse(repo.tb(['show', secondRow?.id ?? 'none', '--json']).stdout) as { changes: { path: string }[] }).changes.map((c) => c.path).sort();
    expect(secondChanges).toEqual(['three.txt', 'two.txt']);
  });

  it('a settings file others can read gets no secret: install says so and writes command hooks', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    const local = path.join(repo.proj, '.claude', 'settings.local.json');
    await mkdir(path.dirname(local), { recursive: true });
    await writeFile(local, '{}\n', { mode: 0o644 });
    const installed = repo.tb(['hooks', 'install', 'claude']);
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toContain('command hooks, not HTTP hooks');
    expect(installed.stdout).toContain('can be read by other users');
    expect(await readFile(local, 'utf8')).toBe('{}\n');
    const committed = await readFile(path.join(repo.proj, '.claude', 'settings.json'), 'utf8');
    expect(committed).not.toContain('"http"');
    expect(committed).toContain('turnback hook claude PreToolUse');
  });

  // Qwen Code 0.15.10 runs HTTP hooks too, but has no settings file of this machine alone in a
  // project, and rewrites its user file with a default-mode temp file (0644 under umask 022):
  // the secret would not stay owner-only (CHECKPOINT-DESIGN.md, "Qwen Code's HTTP hooks: why not").
  it('Qwen Code gets command hooks in both scopes, and neither of its files holds the secret', async () => {
    const { repo, secret } = await servedRepo();
    for (const scope of [[], ['--user']]) {
      const installed = repo.tb(['hooks', 'install', 'qwen', ...scope, '--json']);
      expect(installed.code, installed.stderr).toBe(0);
      expect((JSON.parse(installed.stdout) as { http: string[] }).http).toEqual([]);
    }
    for (const file of [path.join(repo.proj, '.qwen', 'settings.json'), path.join(repo.home, '.qwen', 'settings.json')]) {
      const text = await readFile(file, 'utf8');
      expect(text, file).not.toContain(secret);
      const settings = JSON.parse(text) as { hooks: Record<string, { hooks: { type: string; command?: string }[] }[]> };
      for (const event of ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'SessionEnd']) {
        expect(settings.hooks[event]?.flatMap((group) => group.hooks.map((hook) => hook.type)), `${file} ${event}`).toEqual(['command']);
      }
    }
    expect(existsSync(path.join(repo.proj, '.qwen', 'settings.local.json'))).toBe(false);
  });
});
