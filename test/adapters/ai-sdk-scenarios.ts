import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { generateText as GenerateText, stepCountIs as StepCountIs, tool as Tool } from 'ai';
import type { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { savepointTool, withCheckpoint } from '../../src/adapters/ai-sdk.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// The AI SDK adapter's scenarios, run against a real `ai` package handed in: ai 6 (the dev
// dependency, every Node) by ai-sdk.test.ts, ai 7 (test/ai7, Node >= 22) by ai-sdk-v7.test.ts.
// A scripted mock model asks for one tool call per generateText, the SDK validates the input,
// runs execute, and hands the result (or the error) back to the model, which then ends the turn.

/** What the scenarios use of one major of the AI SDK (ai 7 has the same shapes as ai 6). */
export interface AiSdk {
  generateText: typeof GenerateText;
  stepCountIs: typeof StepCountIs;
  tool: typeof Tool;
  /** `MockLanguageModelV3` (ai 6) or `MockLanguageModelV4` (ai 7), from `ai/test`. */
  MockLanguageModel: typeof MockLanguageModelV3;
}

/** Declares the adapter's scenarios as tests, driven by `sdk`. */
export function aiSdkScenarios(name: string, sdk: () => AiSdk): void {
  const observers: CheckpointObserver[] = [];
  afterEach(async () => {
    for (const observer of observers.splice(0)) await observer.close();
  });

  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };
  let callNumber = 0;

  /** A model that calls `toolName` with `input` once, then ends its turn when it sees the result. */
  function modelCalling(toolName: string, input: unknown): MockLanguageModelV3 {
    const { MockLanguageModel } = sdk();
    const toolCallId = `call-${++callNumber}`;
    return new MockLanguageModel({
      doGenerate: async (options) => {
        const sawResult = options.prompt.some((message) => message.role === 'tool');
        if (sawResult) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
        return { content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] };
      },
    });
  }

  /** One model turn calling the tool; the tool's output, or its error, as the SDK reported it. */
  async function call(tools: Parameters<typeof GenerateText>[0]['tools'], toolName: string, input: unknown): Promise<{ output?: unknown; error?: unknown; toolCallId: string }> {
    const { generateText, stepCountIs } = sdk();
    const result = await generateText({ model: modelCalling(toolName, input), tools, prompt: 'go', stopWhen: stepCountIs(3) });
    const parts = result.steps.flatMap((step) => step.content);
    const done = parts.find((part) => part.type === 'tool-result');
    if (done?.type === 'tool-result') return { output: done.output, toolCallId: done.toolCallId };
    const failed = parts.find((part) => part.type === 'tool-error');
    if (failed?.type === 'tool-error') return { error: failed.error, toolCallId: failed.toolCallId };
    throw new Error('the model made no tool call');
  }

  describe(name, () => {
    it('the model drives undo_savepoint: save → files change → diff → restore without confirm (refused, nothing touched) → with confirm (tree back)', async () => {
      const { project, storeDir } = await sandbox();
      await writeTree(project, { 'src/a.ts': 'a\n', 'src/b.ts': 'b\n' });
      const observer = await openObserver(project, storeDir);
      observers.push(observer);
      const tools = { undo_savepoint: savepointTool({ observer }) };
      const before = await listing(project);

      const saved = await call(tools, 'undo_savepoint', { action: 'save', reason: 'before the edit' });
      const id = (saved.output as { savepoint: { id: string } }).savepoint.id;
      expect(saved.output).toMatchObject({ ok: true, action: 'save', savepoint: { reason: 'before the edit', files: 2, truncated: false } });

      await fs.writeFile(path.join(project, 'src/a.ts'), 'edited by the agent\n');
      await fs.rm(path.join(project, 'src/b.ts'));
      expect((await call(tools, 'undo_savepoint', { action: 'diff', id })).output).toEqual({ ok: true, action: 'diff', id, changed: ['src/a.ts'], missing: ['src/b.ts'], unchanged: 0 });

      const changed = await listing(project);
      const refused = await call(tools, 'undo_savepoint', { action: 'restore', id });
      expect(String(refused.error)).toMatch(/confirm/);
      expect(await listing(project)).toEqual(changed);

      const restored = await call(tools, 'undo_savepoint', { action: 'restore', id, confirm: true });
      expect(restored.output).toMatchObject({ ok: true, action: 'restore', restored: ['src/a.ts', 'src/b.ts'] });
      expect(await listing(project)).toEqual(before);
    });

    it('an input the schema refuses never reaches the files', async () => {
      const { project, storeDir } = await sandbox();
      await writeTree(project, { 'a.txt': 'a\n' });
      const observer = await openObserver(project, storeDir);
      observers.push(observer);
      const tools = { undo_savepoint: savepointTool({ observer }) };
      for (const input of [{ action: 'wipe' }, { action: 'save', extra: true }, { action: 'list', id: 'x' }]) {
        const outcome = await call(tools, 'undo_savepoint', input);
        expect(outcome.error, JSON.stringify(input)).toBeDefined();
      }
      expect((await observer.store.list()).length).toBe(0);
    });

    it('withCheckpoint: a write tool wrapped by it is captured as a snapshot keyed by the toolCallId, and restorable', async () => {
      const { project, storeDir } = await sandbox();
      await writeTree(project, { 'notes.md': 'original\n' });
      const observer = await openObserver(project, storeDir);
      observers.push(observer);
      const writeNote = sdk().tool({
        description: 'overwrite a file',
        inputSchema: z.object({ path: z.string(), text: z.string() }),
        execute: async ({ path: file, text }) => {
          await fs.writeFile(path.join(project, file), text);
          return { written: file };
        },
      });
      const tools = { write_note: withCheckpoint(writeNote, { observer, paths: (input: { path: string }) => [input.path] }) };
      const outcome = await call(tools, 'write_note', { path: 'notes.md', text: 'overwritten\n' });
      expect(outcome.output).toEqual({ written: 'notes.md' });
      expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('overwritten\n');
      const snapshots = await observer.listSnapshots(observer.sessionId);
      expect(snapshots.map((s) => s.scopeId)).toEqual([outcome.toolCallId]);
      await observer.restoreSnapshot({ sessionId: observer.sessionId, scopeId: outcome.toolCallId });
      expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('original\n');
    });

    it("withCheckpoint with kind 'exec': a command-running tool's changes are attributed to its call", async () => {
      const { project, storeDir } = await sandbox();
      await writeTree(project, { 'a.txt': 'a\n' });
      const observer = await openObserver(project, storeDir);
      observers.push(observer);
      await observer.beginTurn({ label: 'agent turn' });
      const runShell = sdk().tool({
        description: 'run a command',
        inputSchema: z.object({ script: z.string() }),
        execute: async () => {
          await fs.writeFile(path.join(project, 'a.txt'), 'changed by the command\n');
          await fs.writeFile(path.join(project, 'made.txt'), 'new\n');
          return { exitCode: 0 };
        },
      });
      const tools = { shell: withCheckpoint(runShell, { observer, kind: 'exec' }) };
      const turn = observer.currentTurn;
      await call(tools, 'shell', { script: 'edit things' });
      const changes = await observer.turnChanges(turn as never);
      expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed a.txt', 'created made.txt']);
    });
  });
}
