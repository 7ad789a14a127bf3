import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { withCheckpoint } from '../../src/tools/tool-call.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';

// The framework-neutral withCheckpoint: any tool whose execute(input, options) a framework calls.

const observers: CheckpointObserver[] = [];
afterEach(async () => {
  for (const observer of observers.splice(0)) await observer.close();
});

describe('withCheckpoint (the core tool shape)', () => {
  it('captures the named paths into a snapshot keyed by the framework call id, restorable on its own', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'notes.md': 'original\n' });
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const writeNote = {
      name: 'write_note',
      execute: async (input: { file: string; text: string }, _options: { callId: string }) => {
        await fs.writeFile(path.join(project, input.file), input.text);
        return { written: input.file };
      },
    };
    const wrapped = withCheckpoint(writeNote, { observer, callIdOf: (options) => options.callId, paths: (input) => [input.file] });
    expect(wrapped.name).toBe('write_note');
    expect(await wrapped.execute({ file: 'notes.md', text: 'overwritten\n' }, { callId: 'call-7' })).toEqual({ written: 'notes.md' });
    expect((await observer.listSnapshots(observer.sessionId)).map((s) => s.scopeId)).toEqual(['call-7']);
    await observer.restoreSnapshot({ sessionId: observer.sessionId, scopeId: 'call-7' });
    expect(await fs.readFile(path.join(project, 'notes.md'), 'utf8')).toBe('original\n');
  });

  it("kind 'exec': what the call changes is attributed to it by pictures, and the turn's restore undoes it; a failing call still ends its record", async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n' });
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    observers.push(observer);
    const turn = await observer.beginTurn({ label: 'agent' });
    const shell = {
      execute: async (input: { fail: boolean }, _options: { id: string }) => {
        await fs.writeFile(path.join(project, 'a.txt'), 'changed\n');
        await fs.writeFile(path.join(project, 'made.txt'), 'new\n');
        if (input.fail) throw new Error('the command failed');
        return 0;
      },
    };
    const wrapped = withCheckpoint(shell, { observer, callIdOf: (options) => options.id, kind: 'exec' });
    await expect(wrapped.execute({ fail: true }, { id: 'call-1' })).rejects.toThrow('the command failed');
    const changes = await observer.turnChanges(turn);
    expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual(['changed a.txt', 'created made.txt']);
    expect((await observer.restore(turn)).failed).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });
});
