import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile, rmdir, rm, writeFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo } from './harness.js';
import { hookLog } from './hook-play.js';
import { feedHook, fireSplit } from './hook-stdin.js';
import { JsonEnd } from '../../src/cli/hook-input.js';
import { LineSplitter } from '../../src/server/frames.js';
import { PROTOCOL_VERSION } from '../../src/server/address.js';

// How a hook process reads the agent's payload and waits on the command server (#27, #29): a
// payload in pieces, a stdin never closed, one far over the limit, a server that froze after its
// hello, a folder planted at the socket path. Whatever happens the hook ends, exits 0, and either
// records the event or logs the gap.

const started: CliRepo[] = [];
afterEach(() => {
  for (const repo of started.splice(0)) repo.tb(['server', 'stop']);
});

function serverJson(repo: CliRepo): { socket: string; running: boolean; reason?: string } {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, 'server', '--json'], { cwd: repo.proj, env: repo.env, encoding: 'utf8' });
  return JSON.parse(result.stdout) as { socket: string; running: boolean; reason?: string };
}

async function repoServed(served: boolean, files: Record<string, string>): Promise<CliRepo> {
  const repo = await cliRepo(files);
  if (served) {
    expect(repo.tb(['server', 'start']).code).toBe(0);
    started.push(repo);
  } else repo.env.TURNBACK_SERVER = 'off';
  return repo;
}

function claude(repo: CliRepo, session: string) {
  return { session_id: session, transcript_path: path.join(repo.home, `${session}.jsonl`), cwd: repo.proj, permission_mode: 'default' };
}

describe('a hook payload in pieces', () => {
  for (const served of [true, false]) {
    it(`a Write whose PreToolUse payload arrives in two writes (the second after the hook read the first) is pictured, and undo --call brings the file back (${served ? 'served' : 'in-process'})`, async () => {
      const repo = await repoServed(served, { 'notes.txt': 'committed\n' });
      // Uncommitted bytes: git holds no copy of them, only turnback's picture does.
      await writeFile(path.join(repo.proj, 'notes.txt'), 'my uncommitted notes\n');
      const common = claude(repo, 'split-1');
      const prompt = await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...common, hook_event_name: 'UserPromptSubmit', prompt: 'rewrite notes' });
      expect([prompt.code, prompt.stdout, prompt.stderr]).toEqual([0, '', '']);
      const call = { ...common, tool_name: 'Write', tool_input: { file_path: path.join(repo.proj, 'notes.txt'), content: 'overwritten\n' }, tool_use_id: 'toolu_split_1' };
      const before = await fireSplit(repo, 'claude', 'PreToolUse', { ...call, hook_event_name: 'PreToolUse' });
      expect([before.code, before.stdout, before.stderr]).toEqual([0, '', '']);
      await writeFile(path.join(repo.proj, 'notes.txt'), 'overwritten\n');
      const after = await fireSplit(repo, 'claude', 'PostToolUse', { ...call, hook_event_name: 'PostToolUse', tool_response: { success: true } });
      expect(after.code).toBe(0);
      expect((await hookLog(repo)).map((l) => [l.event, l.ok, l.error])).toEqual([
        ['UserPromptSubmit', true, undefined],
        ['PreToolUse', true, undefined],
        ['PostToolUse', true, undefined],
      ]);
      const undo = repo.tb(['undo', '--call', 'toolu_split_1', '--yes']);
      expect(undo.code).toBe(0);
      expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe('my uncommitted notes\n');
    });
  }

  it('parallel tool calls, each payload in two writes: every call is pictured and undone by its id', async () => {
    const calls = 4;
    const turns = 2;
    const files = Object.fromEntries(Array.from({ length: turns * calls }, (_, i) => [`f${i}.txt`, `committed ${i}\n`]));
    const repo = await repoServed(true, files);
    const common = claude(repo, 'parallel-1');
    const ids: { id: string; file: string; before: string }[] = [];
    for (let turn = 0; turn < turns; turn++) {
      expect((await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...common, hook_event_name: 'UserPromptSubmit', prompt: `turn ${turn}` })).code).toBe(0);
      // Each call its own file, so undoing one call never meets a later call's change.
      const batch = Array.from({ length: calls }, (_, i) => ({ id: `toolu_p${turn}_${i}`, file: `f${turn * calls + i}.txt`, before: `turn ${turn} before ${i}\n` }));
      for (const c of batch) await writeFile(path.join(repo.proj, c.file), c.before);
      const payload = (c: (typeof batch)[number], event: string) => ({ ...common, hook_event_name: event, tool_name: 'Bash', tool_input: { command: `echo x > ${c.file}` }, tool_use_id: c.id });
      const pre = await Promise.all(batch.map((c) => fireSplit(repo, 'claude', 'PreToolUse', payload(c, 'PreToolUse'))));
      expect(pre.map((r) => r.code)).toEqual(batch.map(() => 0));
      for (const c of batch) await writeFile(path.join(repo.proj, c.file), `turn ${turn} after ${c.id}\n`);
      const post = await Promise.all(batch.map((c) => fireSplit(repo, 'claude', 'PostToolUse', { ...payload(c, 'PostToolUse'), tool_response: {} })));
      expect(post.map((r) => r.code)).toEqual(batch.map(() => 0));
      expect((await fireSplit(repo, 'claude', 'Stop', { ...common, hook_event_name: 'Stop', stop_hook_active: false })).code).toBe(0);
      ids.push(...batch);
    }
    const log = await hookLog(repo);
    expect(log.filter((l) => !l.ok)).toEqual([]);
    expect(log).toHaveLength(turns * (2 * calls + 2));
    // Every call has its picture: its own dry run names its file. The calls ran at once and none
    // names its file, so each file changed while every call was open: undo --call takes it back
    // only when told to (--force), as a change it cannot attribute (issue #26).
    for (const c of ids) {
      const dry = repo.tb(['undo', '--call', c.id, '--force', c.file, '--dry-run']);
      expect([c.id, dry.code]).toEqual([c.id, 0]);
      expect(`${dry.stdout}${dry.stderr}`).toContain(c.file);
    }
  });
});

describe('a stdin that never closes, or holds too much', () => {
  for (const served of [true, false]) {
    it(`a whole JSON payload on a stdin left open ends the read: the event is recorded (${served ? 'served' : 'in-process'})`, async () => {
      const repo = await repoServed(served, { 'a.txt': 'a\n' });
      const hook = await feedHook(repo, 'claude', 'UserPromptSubmit');
      await hook.write(JSON.stringify({ ...claude(repo, 'open-1'), hook_event_name: 'UserPromptSubmit', prompt: 'left open' }));
      const end = await hook.exited;
      expect([end.code, end.stdout, end.stderr]).toEqual([0, '', '']);
      expect(repo.tb(['list']).stdout).toContain('left open');
    });

    it(`half a payload on a stdin left open: the hook exits 0 on its own and logs the gap (${served ? 'served' : 'in-process'})`, async () => {
      const repo = await repoServed(served, { 'a.txt': 'a\n' });
      const hook = await feedHook(repo, 'claude', 'UserPromptSubmit');
      await hook.write('{"session_id": "open-2", "prompt": "never fini');
      const end = await hook.exited;
      expect([end.code, end.stdout, end.stderr]).toEqual([0, '', '']);
      const log = await hookLog(repo);
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ ok: false, error: expect.stringContaining('stdin was not closed') });
      expect(repo.tb(['hooks', 'status']).stdout).toContain('1 of the 1 events in the log were not recorded');
    });
  }

  it('a stdin far over the payload limit is not read past it: the hook leaves while the agent still writes, and logs the gap', async () => {
    const repo = await repoServed(true, { 'a.txt': 'a\n' });
    const hook = await feedHook(repo, 'claude', 'UserPromptSubmit');
    // 64 MiB of one unfinished string: the hook must stop reading long before the end, so this write fails (EPIPE).
    const writing = hook.write(Buffer.concat([Buffer.from('{"prompt": "'), Buffer.alloc(64 * 1024 * 1024, 0x61)]));
    const end = await hook.exited;
    await expect(writing).rejects.toMatchObject({ code: 'EPIPE' });
    expect(end.code).toBe(0);
    const log = await hookLog(repo);
    expect(log).toEqual([expect.objectContaining({ ok: false, error: 'the hook payload is over 8388608 bytes: not read' })]);
  });
});

describe('a frozen command server', () => {
  it('says hello and then never answers: the hook runs in-process and records the event', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const { socket } = serverJson(repo);
    const frozen = net.createServer((connection) => {
      connection.on('error', () => undefined);
      connection.write(`${JSON.stringify({ t: 'hello', protocol: PROTOCOL_VERSION, pid: process.pid })}\n`);
    });
    await new Promise<void>((resolve) => frozen.listen(socket, resolve));
    try {
      const end = await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...claude(repo, 'frozen-1'), hook_event_name: 'UserPromptSubmit', prompt: 'despite a frozen server' });
      expect([end.code, end.stdout, end.stderr]).toEqual([0, '', '']);
    } finally {
      frozen.close();
    }
    expect(repo.tb(['list']).stdout).toContain('despite a frozen server');
  });

  it('takes the hook and then never finishes: the hook leaves at the deadline the server gave and logs the gap', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const { socket } = serverJson(repo);
    const log = path.join(repo.home, 'frozen.hooks.log');
    let deadline = 0;
    const frozen = net.createServer((connection) => {
      connection.on('error', () => undefined);
      connection.write(`${JSON.stringify({ t: 'hello', protocol: PROTOCOL_VERSION, pid: process.pid })}\n`);
      connection.once('data', () => {
        deadline = Date.now() + 500;
        connection.write(`${JSON.stringify({ t: 'taken' })}\n${JSON.stringify({ t: 'accepted', deadline, log })}\n`);
      });
    });
    await new Promise<void>((resolve) => frozen.listen(socket, resolve));
    try {
      const end = await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...claude(repo, 'frozen-2'), hook_event_name: 'UserPromptSubmit', prompt: 'taken and dropped' });
      expect([end.code, end.stdout, end.stderr]).toEqual([0, '', '']);
      expect(deadline).toBeGreaterThan(0);
    } finally {
      frozen.close();
    }
    const lines = (await readFile(log, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ agent: 'claude', event: 'UserPromptSubmit', ok: false, error: expect.stringContaining('did not finish this hook within its budget') })]);
  });
});

describe('the socket path', () => {
  it('a folder planted at the socket path: said once on stderr and in server status and hooks status; every command still runs', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const { socket } = serverJson(repo);
    await rm(socket, { force: true });
    await mkdir(socket);
    try {
      const first = repo.tb(['list']);
      expect(first.code).toBe(0);
      expect(first.stderr).toContain('is a folder, not the command server\'s socket');
      const second = repo.tb(['list']);
      expect([second.code, second.stderr]).toEqual([0, '']);
      expect(serverJson(repo).reason).toContain('is a folder');
      expect(repo.tb(['server']).stdout).toContain('is a folder');
      expect(repo.tb(['hooks', 'status']).stdout).toContain('is a folder');
      const hook = await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...claude(repo, 'blocked-1'), hook_event_name: 'UserPromptSubmit', prompt: 'beside a folder' });
      expect(hook.code).toBe(0);
      expect(repo.tb(['list']).stdout).toContain('beside a folder');
    } finally {
      await rmdir(socket);
      await rm(`${socket}.blocked`, { force: true });
    }
  });
});

describe('the readers look at each byte once', () => {
  it('the payload reader finds the end of a JSON document in pieces, strings and escapes included', () => {
    const text = '  {"a": "}{\\"]", "b": [1, {"c": "\\\\"}], "d": "é"}  trailing';
    const bytes = Buffer.from(text);
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const end = new JsonEnd();
      let found = -1;
      for (let at = 0; at < bytes.length && found < 0; at += size) {
        const piece = bytes.subarray(at, at + size);
        const inPiece = end.push(piece);
        if (inPiece >= 0) found = at + inPiece;
      }
      expect(bytes.subarray(0, found).toString()).toBe(text.slice(0, text.indexOf('  trailing')));
      expect(end.scanned).toBe(found);
    }
    expect(new JsonEnd().push(Buffer.from('42 '))).toBe(-1);
  });

  it("the server's frame reader searches each character once, and refuses a line as soon as it passes the limit", () => {
    const splitter = new LineSplitter(1000);
    let fed = 0;
    for (let i = 0; i < 9; i++) {
      expect(splitter.push('x'.repeat(100))).toEqual([]);
      fed += 100;
    }
    expect(splitter.push('y'.repeat(50) + '\n{"t":"ping"}\nrest')).toEqual([`${'x'.repeat(900)}${'y'.repeat(50)}`, '{"t":"ping"}']);
    fed += 50 + 14 + 4;
    expect(splitter.scanned).toBe(fed);
    // 4 characters pending: 997 more pass the limit at once, with no newline in sight.
    expect(splitter.push('z'.repeat(996))).toEqual([]);
    expect(splitter.push('z')).toBeUndefined();
  });

  it('a big frame being received does not hold up a small hook beside it', async () => {
    const repo = await repoServed(true, { 'a.txt': 'a\n' });
    const { socket } = serverJson(repo);
    const big = net.connect(socket);
    big.on('error', () => undefined);
    await once(big, 'connect');
    // A request frame of 12 MiB, never finished: it stays in the server's reader while the small hook is served.
    const request = `{"t":"request","argv":["node","x","hook","claude","UserPromptSubmit"],"input":"${'a'.repeat(12 * 1024 * 1024)}`;
    await new Promise<void>((resolve) => big.write(request, () => resolve()));
    const small = await fireSplit(repo, 'claude', 'UserPromptSubmit', { ...claude(repo, 'small-1'), hook_event_name: 'UserPromptSubmit', prompt: 'the small one' });
    expect(small.code).toBe(0);
    expect(big.destroyed).toBe(false);
    big.destroy();
    expect(repo.tb(['list']).stdout).toContain('the small one');
    expect((await hookLog(repo)).map((l) => l.ok)).toEqual([true]);
  });
});
