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
import { rawMcp, stopRawMcps } from '../helpers/raw-mcp.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// Both sides for real: `turnback mcp` spawned as a child and driven by the MCP SDK's Client over
// stdio, and checkpointingClient in front of the official filesystem server's child process.

const clients: Client[] = [];
const observers: CheckpointObserver[] = [];
afterEach(async () => {
  await stopRawMcps();
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
