import { spawn } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_VERSION, client, ndJsonStream } from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo } from '../cli/harness.js';
import { listing } from '../session/helpers.js';
import { defaultStoreDir, openStore } from '../../src/admin.js';

/** The store folder the command uses for `repo` (the default: under its XDG data folder). */
function storeOf(repo: CliRepo): string {
  return defaultStoreDir(nodeFs.realpathSync(repo.proj), repo.env);
}

// `turnback acp -- AGENT`: the SDK's client drives a scripted SDK agent (a child process) through
// the built command, both on real stdio.

const AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'acp-agent.mjs');
const RAW_AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'acp-raw-agent.mjs');

/** An editor that allows every tool call and performs the agent's file writes, as the SDK's client. */
function editorClient() {
  return client()
    .onRequest('session/request_permission', () => ({ outcome: { outcome: 'selected' as const, optionId: 'allow' } }))
    .onRequest('fs/write_text_file', ({ params }) => {
      nodeFs.writeFileSync(params.path, params.content);
      return {};
    });
}

/** The SDK stream over the proxy child's stdio. */
function streamOf(proxy: ReturnType<typeof spawn>) {
  return ndJsonStream(Writable.toWeb(proxy.stdin as NonNullable<typeof proxy.stdin>), Readable.toWeb(proxy.stdout as NonNullable<typeof proxy.stdout>) as ReadableStream<Uint8Array>);
}

describe('turnback acp -- AGENT (the proxy)', () => {
  it('adds the checkpoints to any agent: a boundary per prompt, tool calls bracketed, client writes pre-imaged; rollback and redo work through it', async () => {
    const repo = await cliRepo({ 'a.txt': 'original a\n', 'b.txt': 'original b\n' });
    const read = (name: string) => nodeFs.readFileSync(path.join(repo.proj, name), 'utf8');
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: repo.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proxy.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const updates: { update: { sessionUpdate: string; toolCallId?: string } }[] = [];
    // The SDK may hand a notification to its handler after the response that followed it: wait on the count, not on time.
    let arrived: (() => void) | undefined;
    const untilUpdates = (count: number) => new Promise<void>((resolve) => {
      arrived = () => {
        if (updates.length >= count) resolve();
      };
      arrived();
    });
    const editor = editorClient().onNotification('session/update', ({ params }) => {
        updates.push(params as (typeof updates)[number]);
        arrived?.();
      });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    await editor.connectWith(streamOf(proxy), async (ctx) => {
      const init = (await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } })) as unknown as {
        agentCapabilities: { loadSession: boolean; sessionCapabilities: Record<string, unknown>; _meta: { turnback: Record<string, unknown> } };
      };
      // The agent's own answer comes through, with turnback's capabilities added.
      expect(init.agentCapabilities.loadSession).toBe(false);
      expect(init.agentCapabilities.sessionCapabilities).toMatchObject({ rollback: {}, redo: {}, restoreToolCall: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] });
      expect(sessionId).toBe('agent-session-1');
      const start = await listing(repo.proj);
      expect(await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit the files\nplease' }] })).toEqual({ stopReason: 'end_turn' });
      expect(read('a.txt')).toBe('edited in turn 1\n');
      expect(read('b.txt')).toBe('written by the client in turn 1\n');
      // Every update the agent sent arrived, in order.
      await untilUpdates(6);
      expect(updates.map((u) => `${u.update.sessionUpdate} ${u.update.toolCallId}`)).toEqual(['tool_call edit-1', 'tool_call_update edit-1', 'tool_call fetch-1', 'tool_call_update fetch-1', 'tool_call shell-1', 'tool_call_update shell-1']);
      expect(read('shell.txt')).toBe('shell ran in turn 1\n');

      // The call's own changes come back with restore_tool_call; the turn's with rollback.
      const restored = (await ctx.request('_turnback/restore_tool_call', { sessionId, toolCallId: 'edit-1' })) as { restored: { path: string }[] };
      expect(restored.restored.map((e) => e.path).sort()).toEqual(['a.txt', 'made-1.txt']);
      expect(read('a.txt')).toBe('original a\n');
      const rollback = (await ctx.request('session/rollback', { sessionId })) as { files: string; boundaryId: string; receipt: { irreversible: { callId: string; sideEffect: string }[] } };
      expect(rollback).toMatchObject({ files: 'restored', boundaryId: 'edit the files (#1)' });
      // The `fetch` tool call reached the network: a file restore cannot undo it, and says so.
      expect(rollback.receipt.irreversible).toEqual([expect.objectContaining({ callId: 'fetch-1', sideEffect: 'network' })]);
      expect(read('b.txt')).toBe('original b\n');
      expect(nodeFs.existsSync(path.join(repo.proj, 'shell.txt'))).toBe(false);
      // The whole tree is as it was before the prompt, byte for byte.
      expect(await listing(repo.proj)).toEqual(start);
      const afterTurn = { ...start, 'a.txt': expect.any(String), 'b.txt': expect.any(String), 'shell.txt': expect.any(String) };
      expect(await ctx.request('session/redo', { sessionId })).toMatchObject({ files: 'restored' });
      expect(await listing(repo.proj)).toEqual(afterTurn);
      expect(read('b.txt')).toBe('written by the client in turn 1\n');
      expect(read('shell.txt')).toBe('shell ran in turn 1\n');

      // A second prompt: its shell command's own changes come back with restore_tool_call.
      await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] });
      expect(read('shell.txt')).toBe('shell ran in turn 1\nshell ran in turn 2\n');
      const shell = (await ctx.request('_turnback/restore_tool_call', { sessionId, toolCallId: 'shell-2' })) as { restored: { path: string }[] };
      expect(shell.restored.map((e) => e.path)).toEqual(['shell.txt']);
      expect(read('shell.txt')).toBe('shell ran in turn 1\n');

      // Every workspace_checkpoint action, through the proxy.
      const checkpoint = (params: Record<string, unknown>) => ctx.request('session/workspace_checkpoint', { sessionId, ...params }) as Promise<Record<string, unknown>>;
      expect(await checkpoint({ action: 'capture', boundaryId: 'by hand' })).toMatchObject({ available: true, boundaryId: 'by hand' });
      expect(await checkpoint({ action: 'call_begin', callId: 'by-hand-1' })).toMatchObject({ available: true });
      nodeFs.writeFileSync(path.join(repo.proj, 'a.txt'), 'changed by hand\n');
      const ended = await checkpoint({ action: 'call_end', callId: 'by-hand-1', sideEffect: 'filesystem' });
      expect((ended.changes as { path: string }[]).map((c) => c.path)).toEqual(['a.txt']);
      const planned = await checkpoint({ action: 'plan', boundaryId: 'by hand' });
      expect((planned.entries as { path: string }[]).map((e) => e.path)).toContain('a.txt');
      expect(await checkpoint({ action: 'restore', boundaryId: 'by hand', paths: ['a.txt'] })).toMatchObject({ boundaryId: 'by hand' });
      expect(read('a.txt')).toBe('edited in turn 2\n');
      // The proxy's turns are pictures like any other, until the session drops them.
      const listed = JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: { label?: string }[] };
      expect(listed.checkpoints.some((c) => c.label === 'edit the files (#1)')).toBe(true);
      expect(await checkpoint({ action: 'drop' })).toEqual({ available: true, dropped: true });
    });
    proxy.stdin.end();
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    const after = JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: { label?: string }[] };
    expect(after.checkpoints.some((c) => c.label === 'edit the files (#1)')).toBe(false);
  });

  it('an agent that dies mid-turn: the proxy ends the open calls, exits with its code, and the turn is undoable', async () => {
    const repo = await cliRepo({ 'a.txt': 'original a\n' });
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, ACP_AGENT_DIES: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    const editor = editorClient();
    await editor
      .connectWith(streamOf(proxy), async (ctx) => {
        await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
        const { sessionId } = await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] });
        await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'die please' }] });
      })
      .catch(() => undefined);
    expect(await exited).toBe(3);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('edited in turn 1\n');
    const undo = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('original a\n');
    expect(nodeFs.existsSync(path.join(repo.proj, 'made-1.txt'))).toBe(false);
  });

  it('keeps its calls straight when the agent does not: an end before its start, a call that never ends, one tool-call id in two sessions', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'c.txt': 'c\n' });
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, ACP_AGENT_SCRIPT: 'odd' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proxy.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    const sessions: string[] = [];
    await editorClient().connectWith(streamOf(proxy), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      for (let i = 0; i < 2; i++) sessions.push((await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] })).sessionId);
      // Both sessions' turns at once: their tool calls of one id are open together.
      await Promise.all(sessions.map((sessionId, i) => ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `session ${i + 1}` }] })));
      proxy.stdin?.end();
    });
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    const store = await openStore(storeOf(repo), { projectRoot: nodeFs.realpathSync(repo.proj) });
    try {
      const calls = [];
      for (const meta of await store.list()) {
        const manifest = await store.manifest(meta.id);
        for (const call of manifest.calls) calls.push({ sessionId: meta.sessionId, call });
      }
      // The end before the start: the late start began nothing.
      expect(calls.filter((c) => c.call.callId.startsWith('late-'))).toEqual([]);
      // The call that never ended was ended with its turn, before the turn's own picture.
      for (const sessionId of sessions) {
        const forever = calls.find((c) => c.sessionId === `acp:${sessionId}` && c.call.callId.startsWith('forever-'));
        const turn = calls.find((c) => c.sessionId === forever?.sessionId && c.call.callId.startsWith('prompt-'));
        expect(forever?.call.endedAt).toBeDefined();
        expect((forever?.call.endedAt as string) <= (turn?.call.endedAt as string)).toBe(true);
        // One tool-call id in two sessions: each session has its own call, begun and ended.
        const shared = calls.filter((c) => c.call.callId === 'shared' && c.sessionId === `acp:${sessionId}`);
        expect(shared).toHaveLength(1);
        expect(shared[0]?.call.endedAt).toBeDefined();
      }
    } finally {
      await store.close();
    }
    expect(JSON.parse(repo.tb(['status', '--json']).stdout).interrupted).toEqual([]);
    // Listed like any other agent's turns, grouped by ACP session.
    const list = repo.tb(['list']).stdout;
    expect(list).toMatch(/acp agent-se… · turn 1 "session 1 \(#\d\)" · .*files? changed/);
    expect(list).toMatch(/acp agent-se… · turn 1 "session 2 \(#\d\)" · .*files? changed/);
  });

  it("uses the project's [checkpoints] keys: a file its skip patterns leave out is not pictured, so a rollback leaves it", async () => {
    const repo = await cliRepo({ 'a.txt': 'original a\n', 'b.txt': 'original b\n', 'turnback.toml': '[checkpoints]\nskip = ["made-*.txt"]\n' });
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: repo.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    const editor = editorClient();
    await editor.connectWith(streamOf(proxy), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] });
      await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit' }] });
      expect(await ctx.request('session/rollback', { sessionId })).toMatchObject({ files: 'restored' });
    });
    proxy.stdin.end();
    expect(await exited).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('original a\n');
    // Skipped by the project's config: never pictured, so the rollback does not know it and leaves it.
    expect(nodeFs.existsSync(path.join(repo.proj, 'made-1.txt'))).toBe(true);
  });

  it('forwards every other message byte for byte, both ways, in order', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const log = path.join(repo.home, 'agent-received.log');
    const emitFile = path.join(repo.home, 'emit.json');
    // What the agent sends: odd spacing, key order, unicode and escapes, a notification for a session nobody knows, a non-JSON line.
    const fromAgent = [
      '{"method":"session/update","jsonrpc":"2.0","params":{"sessionId":"nobody","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"héllo \\u263a ☺"}}}}',
      '{ "jsonrpc" : "2.0" , "method" : "session/update" , "params" : { "sessionId" : "x" , "update" : { "sessionUpdate" : "plan" , "entries" : [ ] } } }',
      'not json at all',
    ];
    nodeFs.writeFileSync(emitFile, JSON.stringify(fromAgent));
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, RAW_AGENT], { cwd: repo.proj, env: { ...repo.env, ACP_LOG: log, ACP_EMIT: emitFile }, stdio: ['pipe', 'pipe', 'pipe'] });
    const received: string[] = [];
    let pending = '';
    let onLine: (() => void) | undefined;
    proxy.stdout.setEncoding('utf8');
    proxy.stdout.on('data', (chunk: string) => {
      pending += chunk;
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        received.push(pending.slice(0, at));
        pending = pending.slice(at + 1);
      }
      onLine?.();
    });
    const until = (count: number) => new Promise<void>((resolve) => {
      onLine = () => {
        if (received.length >= count) resolve();
      };
      onLine();
    });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    // What the client sends: the same oddities, a notification, and a request the agent answers.
    const fromClient = [
      '{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}',
      '{"params":{"sessionId":"s","modeId":"ünïcode ☺"},"method":"session/set_mode","id":7,"jsonrpc":"2.0"}',
      '{ "jsonrpc":"2.0", "method":"session/cancel", "params":{"sessionId":"s"} }',
      '{"jsonrpc":"2.0","id":8,"method":"test/emit","params":{}}',
    ];
    for (const line of fromClient) proxy.stdin.write(`${line}\n`);
    // The initialize answer, the answer to 7, the three emitted lines, the answer to 8.
    await until(6);
    proxy.stdin.end();
    expect(await exited).toBe(0);
    // The agent got every client line as sent, in order.
    expect(nodeFs.readFileSync(log, 'utf8')).toBe(fromClient.map((line) => `${line}\n`).join(''));
    // The client got every agent line as sent, in order; only the initialize answer gained turnback's capabilities.
    expect(JSON.parse(received[0] as string)).toMatchObject({ id: 'init', result: { agentCapabilities: { _meta: { turnback: {} } } } });
    expect(received.slice(1)).toEqual(['{"jsonrpc":"2.0","id":7,"result":{}}', ...fromAgent, '{"jsonrpc":"2.0","id":8,"result":{}}']);
  });

  it('a store that cannot be opened never stops the session: every message still passes, and the methods say checkpoints are not available', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const notAFolder = path.join(repo.home, 'store-is-a-file');
    nodeFs.writeFileSync(notAFolder, 'not a folder');
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, TURNBACK_DIR: notAFolder }, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    const editor = editorClient();
    await editor.connectWith(streamOf(proxy), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] });
      expect(await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit' }] })).toEqual({ stopReason: 'end_turn' });
      expect(await ctx.request('session/rollback', { sessionId })).toMatchObject({ available: false });
    });
    proxy.stdin.end();
    expect(await exited).toBe(0);
    // The agent's work went ahead unprotected.
    expect(nodeFs.readFileSync(path.join(repo.proj, 'b.txt'), 'utf8')).toBe('written by the client in turn 1\n');
  });
});

describe('turnback acp: what a call and a write are pictured against', () => {
  it('a session opened through a symlink to the project: the client write named through the link is pre-imaged, and undo gives notes.txt back byte for byte', async () => {
    // Whole-tree pictures with a 10-byte copy budget, as in a big project past its budget: the
    // write's own pre-image must not rest on them.
    const repo = await cliRepo({ 'a.txt': 'original a\n', 'b.txt': 'original b\n', 'turnback.toml': '[checkpoints]\nmax_picture_mib = 0.00001\n' });
    const notes = 'my notes, never committed\n';
    nodeFs.writeFileSync(path.join(repo.proj, 'notes.txt'), notes);
    const link = path.join(repo.home, 'workspace');
    nodeFs.symlinkSync(repo.proj, link);
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, ACP_AGENT_CLIENT_WRITE: 'notes.txt' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proxy.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    await editorClient().connectWith(streamOf(proxy), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } });
      const { sessionId } = await ctx.request('session/new', { cwd: link, mcpServers: [] });
      await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'rewrite the notes' }] });
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}; the proxy said: ${stderr}`);
    });
    proxy.stdin.end();
    expect(await exited).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe('written by the client in turn 1\n');
    expect(stderr).toBe('');
    const undo = repo.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(notes);
  });

  it("a call whose tool ran before the proxy read its tool_call: its baseline is the turn's start, so restore_tool_call brings the removed file back", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const notes = 'my notes, never committed\n';
    nodeFs.writeFileSync(path.join(repo.proj, 'notes.txt'), notes);
    const proxy = spawn(process.execPath, [CLI, 'acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, ACP_AGENT_SCRIPT: 'eager' }, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => proxy.on('exit', resolve));
    await editorClient().connectWith(streamOf(proxy), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: repo.proj, mcpServers: [] });
      await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'remove the notes' }] });
      expect(nodeFs.existsSync(path.join(repo.proj, 'notes.txt'))).toBe(false);
      const restored = (await ctx.request('_turnback/restore_tool_call', { sessionId, toolCallId: 'rm-1' })) as { available?: boolean; restored: { path: string }[] };
      expect(restored.restored.map((e) => e.path)).toEqual(['notes.txt']);
    });
    proxy.stdin.end();
    expect(await exited).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe(notes);
  });
});
