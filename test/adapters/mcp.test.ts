import { spawn, type ChildProcess } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { checkpointingClient } from '../../src/adapters/mcp.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { CLI, cliRepo } from '../cli/harness.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// Both sides for real: `turnback mcp` spawned as a child and driven by the MCP SDK's Client over
// stdio, and checkpointingClient in front of the official filesystem server's child process.

const clients: Client[] = [];
const observers: CheckpointObserver[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const observer of observers.splice(0)) await observer.close();
});

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content: { type: string; text?: string }[] };

async function connect(command: string, args: string[], cwd: string, env?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'turnback-test', version: '0.0.0' });
  await client.connect(new StdioClientTransport({ command, args, cwd, ...(env !== undefined ? { env } : {}), stderr: 'pipe' }));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}

/** A `turnback mcp` driven line by line, for what the SDK's client would never send. */
export interface RawMcp {
  child: ChildProcess;
  stderr(): string;
  /** Writes one line (a message, or anything else). */
  write(line: string): void;
  /** The answer to request `id`, when it comes (the process ending first fails the wait). */
  answer(id: string | number): Promise<Record<string, unknown>>;
  /** Every answer that came with no id. */
  idless(): Record<string, unknown>[];
  /** Sends the handshake and waits for its answer. */
  initialize(): Promise<void>;
}

export function rawMcp(cli: string, cwd: string, env: NodeJS.ProcessEnv): RawMcp {
  const child = spawn(process.execPath, ['--no-warnings', cli, 'mcp'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let pending = '';
  const answers = new Map<string, Record<string, unknown>>();
  const idless: Record<string, unknown>[] = [];
  const waiting = new Map<string, (answer: Record<string, unknown>) => void>();
  let ended: string | undefined;
  const failures = new Set<(reason: Error) => void>();
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      const message = JSON.parse(line) as Record<string, unknown>;
      if (message.id === undefined) {
        idless.push(message);
        continue;
      }
      const key = JSON.stringify(message.id);
      answers.set(key, message);
      waiting.get(key)?.(message);
    }
  });
  child.once('exit', (code, signal) => {
    ended = `turnback mcp ended (code ${String(code)}, signal ${String(signal)}); stderr: ${stderr}`;
    for (const fail of failures) fail(new Error(ended));
  });
  child.stdin.on('error', () => undefined);
  const raw: RawMcp = {
    child,
    stderr: () => stderr,
    write: (line) => void child.stdin.write(`${line}\n`),
    idless: () => idless,
    answer(id) {
      const key = JSON.stringify(id);
      const have = answers.get(key);
      if (have !== undefined) return Promise.resolve(have);
      if (ended !== undefined) return Promise.reject(new Error(ended));
      return new Promise((resolve, reject) => {
        failures.add(reject);
        waiting.set(key, (answer) => {
          failures.delete(reject);
          resolve(answer);
        });
      });
    },
    async initialize() {
      raw.write(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
      await raw.answer('init');
      raw.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    },
  };
  raws.push(raw);
  return raw;
}

const raws: RawMcp[] = [];
afterEach(async () => {
  for (const raw of raws.splice(0)) {
    if (raw.child.exitCode !== null || raw.child.signalCode !== null) continue;
    const gone = new Promise((resolve) => raw.child.once('exit', resolve));
    raw.child.kill();
    await gone;
  }
});

function report(result: Result): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result.content)).not.toBe(true);
  return JSON.parse(result.content[0]?.text ?? '{}') as Record<string, unknown>;
}

describe('turnback mcp (a child process, driven by the MCP SDK client)', () => {
  it('lists its tools with honest annotations, and the savepoint tool works through it; bad inputs change nothing', async () => {
    const repo = await cliRepo({ 'src/a.ts': 'a\n', 'src/b.ts': 'b\n' });
    const client = await connect(process.execPath, [CLI, 'mcp'], repo.proj, repo.env as Record<string, string>);
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(['diff_checkpoint', 'list_checkpoints', 'restore_checkpoint', 'undo_savepoint']);
    const hints = Object.fromEntries(tools.map((t) => [t.name, { readOnly: t.annotations?.readOnlyHint ?? false, destructive: t.annotations?.destructiveHint ?? true }]));
    expect(hints).toEqual({
      undo_savepoint: { readOnly: false, destructive: true },
      list_checkpoints: { readOnly: true, destructive: true },
      diff_checkpoint: { readOnly: true, destructive: true },
      restore_checkpoint: { readOnly: false, destructive: true },
    });

    const before = await listing(repo.proj);
    const saved = report(await call(client, 'undo_savepoint', { action: 'save', reason: 'before' })) as { savepoint: { id: string; files: number } };
    expect(saved.savepoint.files).toBe(2);
    const id = saved.savepoint.id;
    await fs.writeFile(path.join(repo.proj, 'src/a.ts'), 'changed\n');
    expect(report(await call(client, 'undo_savepoint', { action: 'list' }))).toMatchObject({ count: 1 });
    expect(report(await call(client, 'undo_savepoint', { action: 'diff', id }))).toMatchObject({ changed: ['src/a.ts'], missing: [] });
    const changed = await listing(repo.proj);
    for (const bad of [{ action: 'restore', id }, { action: 'wipe' }, { action: 'save', extra: 1 }, { action: 'list', id }]) {
      const result = await call(client, 'undo_savepoint', bad);
      expect(result.isError, JSON.stringify(bad)).toBe(true);
      expect(await listing(repo.proj)).toEqual(changed);
    }
    expect(report(await call(client, 'undo_savepoint', { action: 'restore', id, confirm: true }))).toMatchObject({ ok: true, restored: ['src/a.ts'] });
    expect(await listing(repo.proj)).toEqual(before);
  });

  it("lists turnback's turns, diffs one, and restores it only with confirm: true", async () => {
    const repo = await cliRepo({ 'a.txt': 'one\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo two > a.txt; echo new > b.txt']).code).toBe(0);
    const client = await connect(process.execPath, [CLI, 'mcp'], repo.proj, repo.env as Record<string, string>);
    const listed = report(await call(client, 'list_checkpoints', {})) as { checkpoints: { id: string; kind: string }[] };
    const turn = listed.checkpoints.find((c) => c.kind === 'turn');
    expect(turn).toBeDefined();
    const id = (turn as { id: string }).id;
    const diff = report(await call(client, 'diff_checkpoint', { id })) as { changes: { path: string; kind: string }[] };
    expect(diff.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed a.txt', 'created b.txt']);

    expect((await call(client, 'restore_checkpoint', { id })).isError).toBe(true);
    expect((await call(client, 'restore_checkpoint', { id, confirm: false })).isError).toBe(true);
    expect((await call(client, 'diff_checkpoint', { id: 'nope' })).isError).toBe(true);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('two\n');
    const restored = report(await call(client, 'restore_checkpoint', { id, confirm: true })) as { ok: boolean; preRestoreId: string | null };
    expect(restored.ok).toBe(true);
    expect(restored.preRestoreId).not.toBeNull();
    expect(nodeFs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('one\n');
    expect(nodeFs.existsSync(path.join(repo.proj, 'b.txt'))).toBe(false);
  });

  it('a message over 10 MiB is answered with an error and said on stderr; the server serves on', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const raw = rawMcp(CLI, repo.proj, repo.env);
    await raw.initialize();
    // 12 MiB in one line, written in pieces as a pipe delivers it.
    raw.write(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"pad":"${'x'.repeat(12 * 1024 * 1024)}"}}`);
    const refused = await raw.answer(7);
    expect(refused).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
    expect(String((refused.error as { message: string }).message)).toMatch(/over the limit/);
    raw.write(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: {} }));
    expect(((await raw.answer(8)).result as { tools: unknown[] }).tools).toHaveLength(4);
    expect(raw.stderr()).toMatch(/refused a message of \d+ bytes, over the limit/);
    expect(raw.child.exitCode).toBeNull();
  });

  it('a request whose params are not an object is answered with -32602 (invalid params), and the server serves on', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const raw = rawMcp(CLI, repo.proj, repo.env);
    await raw.initialize();
    for (const [id, params] of [[2, 'x'], [3, 42], [4, ['a']], [5, null], [6, true]] as const) {
      raw.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params }));
      expect(await raw.answer(id), JSON.stringify(params)).toMatchObject({ id, error: { code: -32602 } });
    }
    raw.write(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'list_checkpoints', arguments: {} } }));
    expect(await raw.answer(9)).toHaveProperty('result');
  });

  it('a CheckpointError reaches the host with its typed code (an unknown id is UNKNOWN_CHECKPOINT, a malformed one INVALID_ID)', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const client = await connect(process.execPath, [CLI, 'mcp'], repo.proj, repo.env as Record<string, string>);
    const codeOf = (result: Result): unknown => {
      expect(result.isError).toBe(true);
      return (JSON.parse(result.content[0]?.text ?? '{}') as { error?: { code?: unknown } }).error?.code;
    };
    const unknown = '1700000000000-abcd-0123abcd';
    expect(codeOf(await call(client, 'diff_checkpoint', { id: unknown }))).toBe('UNKNOWN_CHECKPOINT');
    expect(codeOf(await call(client, 'restore_checkpoint', { id: unknown, confirm: true }))).toBe('UNKNOWN_CHECKPOINT');
    expect(codeOf(await call(client, 'undo_savepoint', { action: 'diff', id: unknown }))).toBe('UNKNOWN_CHECKPOINT');
    expect(codeOf(await call(client, 'diff_checkpoint', { id: 'nope' }))).toBe('INVALID_ID');
  });

  it('refuses to start where checkpoints are off, touching nothing', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nenabled = false\n' });
    const result = repo.tb(['mcp']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/checkpoints are off/);
    expect(nodeFs.existsSync(path.join(repo.home, 'data', 'turnback'))).toBe(false);
  });
});

describe('checkpointingClient (in front of the official filesystem server)', () => {
  it("captures what write_file, edit_file and move_file change, by their path arguments; the turn's restore brings it all back", async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'notes.md': 'original notes\n', 'src/app.ts': 'const a = 1;\n', 'old-name.txt': 'moved\n' });
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const turn = await observer.beginTurn({ label: 'the agent edits through MCP' });
    const serverEntry = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
    const client = checkpointingClient(await connect(process.execPath, [serverEntry, project], project), { observer });

    await client.callTool({ name: 'write_file', arguments: { path: path.join(project, 'notes.md'), content: 'overwritten\n' } });
    await client.callTool({ name: 'edit_file', arguments: { path: path.join(project, 'src/app.ts'), edits: [{ oldText: 'const a = 1;', newText: 'const a = 2;' }] } });
    await client.callTool({ name: 'move_file', arguments: { source: path.join(project, 'old-name.txt'), destination: path.join(project, 'new-name.txt') } });
    await client.callTool({ name: 'write_file', arguments: { path: path.join(project, 'made.txt'), content: 'new\n' } });
    // A read-only tool passes straight through.
    await client.callTool({ name: 'list_directory', arguments: { path: project } });
    expect(nodeFs.readFileSync(path.join(project, 'notes.md'), 'utf8')).toBe('overwritten\n');

    const changes = await observer.turnChanges(turn);
    expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed notes.md', 'changed src/app.ts', 'created made.txt', 'created new-name.txt', 'deleted old-name.txt']);
    const restored = await observer.restore(turn);
    expect(restored.failed).toEqual([]);
    expect(restored.refused).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });
});
