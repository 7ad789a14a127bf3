import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { createSavepointTool, parseSavepointInput } from '../../src/tools/savepoint-tool.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';
import { expectError, save, setup, useSavepointTools } from './savepoint-harness.js';

// The model's savepoint tool: its input, its schema, its options. Its savepoints saved, listed,
// diffed and restored: savepoint-restore.test.ts. Every refused input is checked to leave the
// project (and the store's checkpoints) exactly as they were.

useSavepointTools();

describe('undo_savepoint: input', () => {
  it('refuses every malformed input before any file is read, with a typed error', async () => {
    const { project, observer, tool } = await setup({ 'a.txt': 'a\n' });
    const id = await save(tool);
    const tree = await listing(project);
    const checkpoints = (await observer.store.list()).length;
    const getter = { action: 'list' };
    Object.defineProperty(getter, 'reason', { enumerable: true, get: () => 'x' });
    class Input {
      action = 'list';
    }
    const bad: unknown[] = [
      undefined,
      null,
      'save',
      ['save'],
      {},
      { action: 'wipe' },
      { action: 'save', extra: 1 },
      { action: 'save', id },
      { action: 'list', reason: 'no' },
      { action: 'diff' },
      { action: 'diff', id, confirm: true },
      { action: 'restore', id },
      { action: 'restore', id, confirm: false },
      { action: 'restore', id, confirm: 'true' },
      { action: 'restore', confirm: true },
      { action: 'save', reason: 'x'.repeat(4097) },
      { action: 'save', reason: 42 },
      { action: 'save', reason: { text: 'nested' } },
      getter,
      new Input(),
      { action: 'list', [Symbol('s')]: 1 },
    ];
    for (const input of bad) {
      await expectError(tool.execute(input), 'INVALID_ARGUMENT');
      expect(() => parseSavepointInput(input)).toThrow();
    }
    expect(await listing(project)).toEqual(tree);
    expect((await observer.store.list()).length).toBe(checkpoints);
  });

  it('refuses a Proxy input without running one of its traps', async () => {
    const { project, observer, tool } = await setup({ 'a.txt': 'a\n' });
    const tree = await listing(project);
    const trapped: string[] = [];
    const handler: ProxyHandler<object> = new Proxy({}, { get: (_target, trap) => (trapped.push(String(trap)), undefined) });
    for (const target of [{ action: 'list' }, ['save'], () => undefined]) {
      await expectError(tool.execute(new Proxy(target, handler)), 'INVALID_ARGUMENT');
    }
    // A revoked Proxy throws a TypeError on almost any look at it: still a typed refusal.
    const revocable = Proxy.revocable({ action: 'list' }, {});
    revocable.revoke();
    await expectError(tool.execute(revocable.proxy), 'INVALID_ARGUMENT');
    // A Proxy one level down (a value) is refused the same way.
    await expectError(tool.execute({ action: 'save', reason: new Proxy({}, handler) }), 'INVALID_ARGUMENT');
    expect(trapped).toEqual([]);
    expect(await listing(project)).toEqual(tree);
    expect(await observer.store.list()).toEqual([]);
  });

  it('shows the model one flat object schema derived from the same definition', async () => {
    const { tool } = await setup({});
    expect(tool.name).toBe('undo_savepoint');
    expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false, required: ['action'] });
    expect(Object.keys(tool.inputSchema.properties as object).sort()).toEqual(['action', 'confirm', 'id', 'reason']);
    expect((tool.inputSchema.properties as Record<string, { enum?: string[] }>).action?.enum).toEqual(['save', 'list', 'diff', 'restore']);
  });
});

describe('undo_savepoint: the options', () => {
  it('trackedPaths must be an array of strings inside the project and outside .git: anything else is a typed refusal when the tool is made, naming the path', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'd0/a.txt': 'a\n', '.git/config': '[core]\n' });
    const observer = await openObserver(project, storeDir);
    try {
      const refused: [unknown, string, RegExp][] = [
        ['d0', 'INVALID_ARGUMENT', /the string "d0"/],
        [[], 'INVALID_ARGUMENT', /empty/],
        [[42], 'INVALID_ARGUMENT', /strings only/],
        [new Proxy(['d0'], {}), 'INVALID_ARGUMENT', /array/],
        [['.git'], 'INVALID_PATH', /"\.git"/],
        [['.git/hooks'], 'INVALID_PATH', /"\.git\/hooks"/],
        [['d0/../.git'], 'INVALID_PATH', /\.git/],
        [['../elsewhere'], 'OUTSIDE_ROOT', /"\.\.\/elsewhere"/],
        [[path.dirname(project)], 'OUTSIDE_ROOT', /outside the project/],
        [['d0', 'a\0b'], 'INVALID_PATH', /NUL/],
      ];
      for (const [trackedPaths, code, names] of refused) {
        let thrown: unknown;
        try {
          createSavepointTool({ observer, trackedPaths: trackedPaths as string[] });
        } catch (error) {
          thrown = error;
        }
        expect(isCheckpointError(thrown), `${String(trackedPaths)}: ${String(thrown)}`).toBe(true);
        expect((thrown as { code: string }).code, String(trackedPaths)).toBe(code);
        expect((thrown as Error).message).toMatch(names);
      }
      expect(await observer.store.list()).toEqual([]);
      // The project itself, by any spelling, and a path inside it are fine.
      for (const trackedPaths of [['.'], [project], ['d0'], [path.join(project, 'd0')], ['./d0/']]) {
        const tool = createSavepointTool({ observer, trackedPaths });
        const report = await tool.execute({ action: 'save' });
        tool.dispose();
        expect(report, JSON.stringify(trackedPaths)).toMatchObject({ ok: true, savepoint: { files: 1 } });
        expect(report).not.toHaveProperty('warning');
      }
    } finally {
      await observer.close();
    }
  });

  it('a save that holds no file says so in its report', async () => {
    const { project, tool } = await setup({ 'd0/a.txt': 'a\n' }, { trackedPaths: ['missing', 'link'] });
    await fs.symlink(path.join(project, 'd0', 'a.txt'), path.join(project, 'link'));
    const report = await tool.execute({ action: 'save' });
    expect(report).toMatchObject({ ok: true, action: 'save', savepoint: { files: 0 } });
    expect((report as { warning?: string }).warning).toMatch(/holds no file: missing, link/);
  });

  it('without an observer the tool (and every adapter that wraps it) is a typed refusal, never a TypeError', async () => {
    const { savepointTool: aiSdk } = await import('../../src/adapters/ai-sdk.js');
    const { savepointTool: openaiAgents } = await import('../../src/adapters/openai-agents.js');
    const { createMcpServer } = await import('../../src/adapters/mcp.js');
    const makers: [string, (options: never) => unknown][] = [
      ['createSavepointTool', createSavepointTool as (options: never) => unknown],
      ['ai-sdk', aiSdk as (options: never) => unknown],
      ['openai-agents', openaiAgents as (options: never) => unknown],
      ['mcp', createMcpServer as (options: never) => unknown],
    ];
    for (const [name, make] of makers) {
      for (const options of [undefined, null, {}, { observer: undefined }, { observer: {} }, { observer: 'x' }]) {
        let thrown: unknown;
        try {
          make(options as never);
        } catch (error) {
          thrown = error;
        }
        expect(isCheckpointError(thrown, 'INVALID_ARGUMENT'), `${name} ${JSON.stringify(options)}: ${String(thrown)}`).toBe(true);
      }
    }
  });
});
