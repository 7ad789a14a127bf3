import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { Agent, Usage, run, setTracingDisabled, tool, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkpointedEditor, checkpointedShell, savepointTool, withCheckpoint } from '../../src/adapters/openai-agents.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// The real OpenAI Agents runner drives the tools; the model is scripted (one tool call, then a
// final answer once it sees the tool's output), so no network is involved.

beforeAll(() => {
  setTracingDisabled(true);
});

const observers: CheckpointObserver[] = [];
afterEach(async () => {
  for (const observer of observers.splice(0)) await observer.close();
});

let calls = 0;

/** A model that calls `name` with `input` once, then answers "done". */
function modelCalling(name: string, input: unknown): Model {
  const callId = `call_${++calls}`;
  return {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      const items = Array.isArray(request.input) ? request.input : [];
      const answered = items.some((item) => (item as { type?: string }).type === 'function_call_result');
      if (answered) return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }] };
      return { usage: new Usage(), output: [{ type: 'function_call', callId, name, arguments: JSON.stringify(input), status: 'completed' }] };
    },
    async *getStreamedResponse() {
      throw new Error('not used');
    },
  };
}

/** One agent turn calling the tool; what the runner handed back to the model as its output. */
async function turn(tools: ConstructorParameters<typeof Agent>[0]['tools'], name: string, input: unknown): Promise<{ output: unknown; callId: string }> {
  const agent = new Agent({ name: 'coder', instructions: 'use the tools', tools, model: modelCalling(name, input) });
  const result = await run(agent, 'go');
  const item = result.newItems.find((entry) => entry.type === 'tool_call_output_item');
  if (item === undefined) throw new Error('no tool output');
  return { output: (item as unknown as { output: unknown }).output, callId: (item.rawItem as { callId: string }).callId };
}

function parsed(output: unknown): Record<string, unknown> {
  return (typeof output === 'string' ? JSON.parse(output) : output) as Record<string, unknown>;
}

describe('turnback/openai-agents', () => {
  it('the agent drives undo_savepoint: save → files change → diff → restore without confirm (refused, nothing touched) → with confirm (tree back)', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'src/a.ts': 'a\n', 'src/b.ts': 'b\n' });
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const tools = [savepointTool({ observer })];
    const before = await listing(project);
    const saved = parsed((await turn(tools, 'undo_savepoint', { action: 'save', reason: 'before' })).output) as { savepoint: { id: string; files: number } };
    expect(saved.savepoint.files).toBe(2);
    const id = saved.savepoint.id;
    await fs.writeFile(path.join(project, 'src/a.ts'), 'edited\n');
    await fs.rm(path.join(project, 'src/b.ts'));
    expect(parsed((await turn(tools, 'undo_savepoint', { action: 'diff', id })).output)).toMatchObject({ changed: ['src/a.ts'], missing: ['src/b.ts'] });
    const changed = await listing(project);
    const refused = (await turn(tools, 'undo_savepoint', { action: 'restore', id })).output;
    expect(String(refused)).toMatch(/confirm/);
    expect(await listing(project)).toEqual(changed);
    expect(parsed((await turn(tools, 'undo_savepoint', { action: 'restore', id, confirm: true })).output)).toMatchObject({ ok: true, restored: ['src/a.ts', 'src/b.ts'] });
    expect(await listing(project)).toEqual(before);
  });

  it('withCheckpoint: a function tool is captured as a snapshot keyed by details.toolCall.callId', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'notes.md': 'original\n' });
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const writeNote = tool({
      name: 'write_note',
      description: 'overwrite a file',
      parameters: z.object({ path: z.string(), text: z.string() }),
      execute: async ({ path: file, text }) => {
        await fs.writeFile(path.join(project, file), text);
        return `wrote ${file}`;
      },
    });
    const wrapped = withCheckpoint(writeNote, { observer, paths: (input) => [String(input.path)] });
    const { callId } = await turn([wrapped], 'write_note', { path: 'notes.md', text: 'overwritten\n' });
    expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('overwritten\n');
    expect((await observer.listSnapshots(observer.sessionId)).map((s) => s.scopeId)).toEqual([callId]);
    await observer.restoreSnapshot({ sessionId: observer.sessionId, scopeId: callId });
    expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('original\n');
  });

  it("checkpointedEditor and checkpointedShell: the apply-patch editor's and the shell's changes land in the turn, and its restore undoes them", async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n', 'gone.txt': 'bye\n' });
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const turnId = await observer.beginTurn({ label: 'agent' });
    const editor = checkpointedEditor(
      {
        createFile: async (op) => void (await fs.writeFile(path.join(project, op.path), 'created by a patch\n')),
        updateFile: async (op) => void (await fs.writeFile(path.join(project, op.path), 'updated by a patch\n')),
        deleteFile: async (op) => void (await fs.rm(path.join(project, op.path))),
      },
      observer,
    );
    await editor.createFile({ type: 'create_file', path: 'new.txt', diff: '+created' });
    await editor.updateFile({ type: 'update_file', path: 'a.txt', diff: '-a\n+updated' });
    await editor.deleteFile({ type: 'delete_file', path: 'gone.txt' });
    const shell = checkpointedShell(
      {
        run: async (action) => {
          await fs.writeFile(path.join(project, 'from-shell.txt'), action.commands.join('\n'));
          return { output: [{ stdout: '', stderr: '', outcome: { type: 'exit', exitCode: 0 } }] };
        },
      },
      observer,
    );
    await shell.run({ commands: ['echo hi > from-shell.txt'] });
    const changes = await observer.turnChanges(turnId);
    expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed a.txt', 'created from-shell.txt', 'created new.txt', 'deleted gone.txt']);
    const report = await observer.restore(turnId);
    expect(report.failed).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });
});
