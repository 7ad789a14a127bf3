import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { PROTOCOL_VERSION, RequestError, agent, client } from '@agentclientprotocol/sdk';
import { CheckpointStore } from '../../src/store/store.js';
import { describe, expect, it } from 'vitest';
import { WORKSPACE_CHECKPOINT_ALIAS, WORKSPACE_CHECKPOINT_METHOD, withWorkspaceCheckpoints } from '../../src/adapters/acp.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';

// The real ACP SDK on both sides, connected in-process: an agent app with turnback's handlers
// registered, driven by the SDK's client app exactly as an editor would call the methods.

const enabled = (dir: string) => ({ capabilities: { checkpoint: { enabled: true, dir } } });

/** An ACP agent that only opens and closes sessions, with turnback's checkpoints on it. */
function agentWith(config: ReturnType<typeof enabled> | Record<string, never>) {
  let sessions = 0;
  return withWorkspaceCheckpoints(agent(), { config })
    .onRequest('initialize', () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: { loadSession: false } }))
    .onRequest('session/new', () => ({ sessionId: `s-${++sessions}` }))
    .onRequest('session/close', () => ({}))
    .onRequest('session/prompt', () => ({ stopReason: 'end_turn' as const }));
}

type Call = (params: Record<string, unknown>) => Promise<Record<string, unknown>>;

async function rejection(promise: Promise<unknown>): Promise<{ code: number; data: { code: string } }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; data: { code: string } };
  }
  throw new Error('expected the request to fail');
}

describe('turnback/acp: session/workspace_checkpoint on an SDK agent', () => {
  it('advertises the method; capture, call_begin, call_end, plan and restore bring the turn back; drop releases it', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'src/a.ts': 'a\n', 'keep.txt': 'k\n' });
    const before = await listing(project);
    await client().connectWith(agentWith(enabled(path.join(base, 'store'))), async (ctx) => {
      const init = (await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} })) as unknown as { agentCapabilities: { _meta: { turnback: { workspaceCheckpoint: { methods: string[] } } } } };
      expect(init.agentCapabilities._meta.turnback.workspaceCheckpoint.methods).toEqual([WORKSPACE_CHECKPOINT_METHOD, WORKSPACE_CHECKPOINT_ALIAS]);
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      const call: Call = (params) => ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, ...params });

      expect(await call({ action: 'capture', boundaryId: 'prompt-1' })).toMatchObject({ available: true, boundaryId: 'prompt-1' });
      expect(await call({ action: 'call_begin', callId: 'tc-1' })).toMatchObject({ available: true });
      await fs.writeFile(path.join(project, 'src/a.ts'), 'changed by the tool\n');
      await fs.writeFile(path.join(project, 'made.txt'), 'new\n');
      const ended = (await call({ action: 'call_end', callId: 'tc-1', sideEffect: 'filesystem' })) as { changes: { path: string; kind: string }[] };
      expect(ended.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed src/a.ts', 'created made.txt']);

      // The alias answers the same method.
      const plan = (await ctx.request(WORKSPACE_CHECKPOINT_ALIAS, { sessionId, action: 'plan', boundaryId: 'prompt-1' })) as { entries: { path: string; action: string }[] };
      expect(plan.entries.map((e) => `${e.action} ${e.path}`).sort()).toEqual(['delete made.txt', 'restore src/a.ts']);
      expect(await listing(project)).not.toEqual(before);
      const restored = (await call({ action: 'restore', boundaryId: 'prompt-1' })) as { available: boolean; restored: unknown[]; failed: unknown[] };
      expect(restored.available).toBe(true);
      expect(restored.failed).toEqual([]);
      expect(await listing(project)).toEqual(before);

      expect(await call({ action: 'drop' })).toEqual({ available: true, dropped: true });
      expect((await rejection(call({ action: 'plan', boundaryId: 'prompt-1' }))).data.code).toBe('UNKNOWN_SESSION');
    });
  });

  it('bad params get a JSON-RPC error with a typed code and touch nothing', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    await client().connectWith(agentWith(enabled(path.join(base, 'store'))), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      const other = (await ctx.request('session/new', { cwd: project, mcpServers: [] })).sessionId;
      await ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId: other, action: 'capture', boundaryId: 'theirs' });
      await ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, action: 'capture', boundaryId: 'mine' });
      const tree = await listing(project);
      const cases: [Record<string, unknown>, string][] = [
        [{ sessionId, action: 'wipe' }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'capture' }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'call_begin' }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'plan', boundaryId: 'mine', callId: 'x' }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'restore', boundaryId: 'mine', paths: [] }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'call_end', callId: 'x', sideEffect: 'everything' }, 'INVALID_ARGUMENT'],
        [{ sessionId, action: 'plan', boundaryId: 'theirs' }, 'UNKNOWN_CHECKPOINT'],
        [{ sessionId, action: 'restore', boundaryId: 'mine', paths: ['../outside.txt'] }, 'OUTSIDE_ROOT'],
        [{ sessionId: 'nobody', action: 'drop' }, 'UNKNOWN_SESSION'],
      ];
      for (const [params, code] of cases) {
        const error = await rejection(ctx.request(WORKSPACE_CHECKPOINT_METHOD, params));
        expect(error, JSON.stringify(params)).toBeInstanceOf(RequestError);
        expect(error.code, JSON.stringify(params)).toBe(-32602);
        expect(error.data.code, JSON.stringify(params)).toBe(code);
      }
      expect(await listing(project)).toEqual(tree);
    });
  });

  it('a 100,000-character boundary id is refused with a typed code, and no turn is labelled with it', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    const storeDir = path.join(base, 'store');
    await client().connectWith(agentWith(enabled(storeDir)), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      const long = 'b'.repeat(100_000);
      for (const params of [{ sessionId, action: 'capture', boundaryId: long }, { sessionId, action: 'call_begin', callId: long }]) {
        const error = await rejection(ctx.request(WORKSPACE_CHECKPOINT_METHOD, params));
        expect(error.code).toBe(-32602);
        expect(error.data.code).toBe('INVALID_ARGUMENT');
        expect((error as unknown as Error).message).toContain('at most 512 characters');
      }
      // At the bound it is still a boundary.
      const edge = 'e'.repeat(512);
      expect(await ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, action: 'capture', boundaryId: edge })).toMatchObject({ boundaryId: edge });
    });
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    expect((await store.list()).every((m) => (m.label ?? '').length <= 512)).toBe(true);
  });

  it('where checkpoints are not available every action answers { available: false, reason, detail }, and nothing is created', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    await client().connectWith(agentWith({}), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      for (const params of [{ action: 'capture', boundaryId: 'b' }, { action: 'call_begin', callId: 'c' }, { action: 'call_end', callId: 'c' }, { action: 'plan', boundaryId: 'b' }, { action: 'restore', boundaryId: 'b' }, { action: 'drop' }]) {
        const answer = (await ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, ...params })) as { available: boolean; reason: string; detail: string };
        expect(answer, JSON.stringify(params)).toMatchObject({ available: false, reason: 'disabled' });
        expect(answer.detail.length).toBeGreaterThan(5);
      }
    });
    expect((await fs.readdir(base)).sort()).toEqual(['project']);
  });

  it('session/rollback undoes the last prompt turn (again: the one before), session/redo re-applies it; the transcript half is the agent\'s callback', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'start\n' });
    const moves: string[] = [];
    const app = withWorkspaceCheckpoints(agent(), {
      config: enabled(path.join(base, 'store')),
      onTranscript: ({ direction, boundaryId }) => {
        moves.push(`${direction} ${boundaryId}`);
      },
    })
      .onRequest('initialize', () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: {} }))
      .onRequest('session/new', () => ({ sessionId: 'only' }));
    const read = () => fs.readFile(path.join(project, 'a.txt'), 'utf8');
    await client().connectWith(app, async (ctx) => {
      const init = (await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} })) as unknown as { agentCapabilities: { sessionCapabilities?: Record<string, unknown>; _meta: { turnback: Record<string, unknown> } } };
      expect(Object.keys(init.agentCapabilities._meta.turnback).sort()).toEqual(['redo', 'restoreToolCall', 'rollback', 'workspaceCheckpoint']);
      expect(init.agentCapabilities.sessionCapabilities).toMatchObject({ rollback: {}, redo: {}, restoreToolCall: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      const checkpoint = (params: Record<string, unknown>) => ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, ...params });
      for (const [turn, text] of [['p1', 'after one\n'], ['p2', 'after two\n']] as const) {
        await checkpoint({ action: 'capture', boundaryId: turn });
        await checkpoint({ action: 'call_begin', callId: `${turn}-edit` });
        await fs.writeFile(path.join(project, 'a.txt'), text);
        await checkpoint({ action: 'call_end', callId: `${turn}-edit` });
      }
      expect(await read()).toBe('after two\n');
      expect(await ctx.request('session/rollback', { sessionId })).toMatchObject({ boundaryId: 'p2', files: 'restored', transcript: 'moved' });
      expect(await read()).toBe('after one\n');
      expect(await ctx.request('_turnback/rollback', { sessionId })).toMatchObject({ boundaryId: 'p1', files: 'restored' });
      expect(await read()).toBe('start\n');
      expect(await ctx.request('session/redo', { sessionId })).toMatchObject({ boundaryId: 'p1', files: 'restored' });
      expect(await read()).toBe('after one\n');
      expect(await ctx.request('session/redo', { sessionId })).toMatchObject({ boundaryId: 'p2', files: 'restored' });
      expect(await read()).toBe('after two\n');
      expect((await rejection(ctx.request('session/redo', { sessionId }))).data.code).toBe('NOTHING_TO_REDO');
      expect((await rejection(ctx.request('session/rollback', { sessionId, extra: 1 }))).data.code).toBe('INVALID_ARGUMENT');
      expect(moves).toEqual(['rollback p2', 'rollback p1', 'redo p1', 'redo p2']);
    });
  });

  it("session/restore_tool_call puts back one call's own pre-images (not the turn's), refuses a path changed again since, and tells the client", async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'start\n', 'b.txt': 'b\n' });
    const updates: unknown[] = [];
    const editor = client().onNotification('session/update', ({ params }) => {
      updates.push(params);
    });
    await editor.connectWith(agentWith(enabled(path.join(base, 'store'))), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      const checkpoint = (params: Record<string, unknown>) => ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, ...params });
      await checkpoint({ action: 'capture', boundaryId: 'p1' });
      const call = async (callId: string, edit: () => Promise<void>) => {
        await checkpoint({ action: 'call_begin', callId });
        await edit();
        await checkpoint({ action: 'call_end', callId });
      };
      await call('tc-1', () => fs.writeFile(path.join(project, 'a.txt'), 'one\n'));
      await call('tc-2', async () => {
        await fs.writeFile(path.join(project, 'a.txt'), 'two\n');
        await fs.writeFile(path.join(project, 'made.txt'), 'new\n');
      });
      await call('tc-3', () => fs.writeFile(path.join(project, 'b.txt'), 'b changed\n'));
      await fs.writeFile(path.join(project, 'b.txt'), 'b changed again by the person\n');

      // tc-2 only: a.txt goes back to what tc-1 left (not to the turn's start); made.txt goes.
      const restored = (await ctx.request('session/restore_tool_call', { sessionId, toolCallId: 'tc-2' })) as { restored: { path: string }[]; failed: unknown[] };
      expect(restored.failed).toEqual([]);
      expect(restored.restored.map((e) => e.path).sort()).toEqual(['a.txt', 'made.txt']);
      expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('one\n');
      await expect(fs.access(path.join(project, 'made.txt'))).rejects.toThrow();
      // tc-3's file changed again since: refused, left as the person made it.
      const refused = (await ctx.request('_turnback/restore_tool_call', { sessionId, toolCallId: 'tc-3' })) as { refused: { path: string; reason: string }[]; restored: unknown[] };
      expect(refused.restored).toEqual([]);
      expect(refused.refused.map((e) => `${e.path} ${e.reason}`)).toEqual(['b.txt changed-outside']);
      expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('b changed again by the person\n');
      expect((await rejection(ctx.request('session/restore_tool_call', { sessionId, toolCallId: 'never' }))).data.code).toBe('UNKNOWN_CALL');
    });
    // One update, for tc-2 only. `status: 'restored'` (seed 003's word) is sent, but the SDK's
    // client drops a status its schema does not know, so the discriminator a client can rely on
    // is `_meta.turnback.kind`.
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ sessionId: 's-1', update: { sessionUpdate: 'tool_call_update', toolCallId: 'tc-2', _meta: { turnback: { kind: 'tool_call_restored', restoredPaths: ['a.txt', 'made.txt'] } } } });
    expect((updates[0] as { update: { status?: string } }).update.status).not.toBe('completed');
  });

  it('session/close drops the session: its checkpoint methods answer UNKNOWN_SESSION afterwards', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    await client().connectWith(agentWith(enabled(path.join(base, 'store'))), async (ctx) => {
      await ctx.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await ctx.request('session/new', { cwd: project, mcpServers: [] });
      await ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, action: 'capture', boundaryId: 'b' });
      await ctx.request('session/close', { sessionId });
      expect((await rejection(ctx.request(WORKSPACE_CHECKPOINT_METHOD, { sessionId, action: 'plan', boundaryId: 'b' }))).data.code).toBe('UNKNOWN_SESSION');
    });
  });
});
