import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { FakeToolCallingModel, createAgent, tool } from 'langchain';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkpointMiddleware } from '../../src/adapters/langchain.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// A real LangChain agent (createAgent) with a fake tool-calling model: the middleware sees every
// tool call the agent runs.

const observers: CheckpointObserver[] = [];
afterEach(async () => {
  for (const observer of observers.splice(0)) await observer.close();
});

describe('turnback/langchain', () => {
  it('covers every tool of an agent: a tool with known paths gets a snapshot keyed by its call id, any other one pictures around it, read-only ones nothing', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'notes.md': 'original\n', 'a.txt': 'a\n' });
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const turn = await observer.beginTurn({ label: 'agent turn' });
    const writeNote = tool(async ({ file, text }: { file: string; text: string }) => {
      await fs.writeFile(path.join(project, file), text);
      return `wrote ${file}`;
    }, { name: 'write_note', description: 'overwrite a file', schema: z.object({ file: z.string(), text: z.string() }) });
    const runScript = tool(async () => {
      await fs.writeFile(path.join(project, 'a.txt'), 'changed by a script\n');
      await fs.writeFile(path.join(project, 'made.txt'), 'new\n');
      return 'ran';
    }, { name: 'run_script', description: 'run a script', schema: z.object({ script: z.string() }) });
    let reads = 0;
    const readFile = tool(async () => {
      reads += 1;
      return 'contents';
    }, { name: 'read_file', description: 'read a file', schema: z.object({ file: z.string() }) });

    const model = new FakeToolCallingModel({
      toolCalls: [
        [
          { name: 'write_note', args: { file: 'notes.md', text: 'overwritten\n' }, id: 'call_write' },
          { name: 'run_script', args: { script: 'edit' }, id: 'call_script' },
          { name: 'read_file', args: { file: 'a.txt' }, id: 'call_read' },
        ],
        [],
      ],
    });
    const agent = createAgent({
      model,
      tools: [writeNote, runScript, readFile],
      middleware: [
        checkpointMiddleware({
          observer,
          paths: (name, args) => (name === 'write_note' ? [String(args.file)] : undefined),
          readOnly: (name) => name === 'read_file',
        }),
      ],
    });
    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    expect(reads).toBe(1);
    expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('overwritten\n');
    expect((await observer.listSnapshots(observer.sessionId)).map((s) => s.scopeId)).toEqual(['call_write']);
    const changes = await observer.turnChanges(turn);
    expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed a.txt', 'changed notes.md', 'created made.txt']);
    const report = await observer.restore(turn);
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });
});
