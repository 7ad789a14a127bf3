import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { bareUndoTarget, redoStack, type StackMeta } from '../../src/cli/undo-stack.js';

// Undo and redo are a stack, like an editor's: a bare undo steps back one picture at a time and
// never targets a save an undo made; redo walks forward; a new change ends the redo walk.

describe('turnback undo and redo as a stack', () => {
  it('undo, undo steps back past both turns; redo, redo walks forward again; a third redo has nothing', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    const log = (): Promise<string> => readFile(path.join(repo.proj, 'log.txt'), 'utf8');
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo A >> log.txt']).code).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo B >> log.txt']).code).toBe(0);
    expect(await log()).toBe('base\nA\nB\n');

    const first = repo.tb(['undo', '--yes']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("echo B");
    expect(await log()).toBe('base\nA\n');
    const second = repo.tb(['undo', '--yes']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("echo A");
    expect(await log()).toBe('base\n');
    // Nothing is left in effect: a third bare undo says so and changes nothing.
    const third = repo.tb(['undo', '--yes']);
    expect(third.code).toBe(3);
    expect(third.stderr).toContain('nothing to undo');
    expect(await log()).toBe('base\n');

    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await log()).toBe('base\nA\n');
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await log()).toBe('base\nA\nB\n');
    const more = repo.tb(['redo', '--yes']);
    expect(more.code).toBe(3);
    expect(more.stderr).toContain('nothing to redo: every undo was already redone');
    expect(await log()).toBe('base\nA\nB\n');

    // After the redos, undo again steps back from the newest turn.
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(await log()).toBe('base\nA\n');
  });

  it('a change made after an undo ends the redo walk, and says which picture did', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    repo.tb(['run', '--', 'sh', '-c', 'echo A >> log.txt']);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    repo.tb(['run', '--label', 'new work', '--', 'sh', '-c', 'echo C >> log.txt']);
    const redo = repo.tb(['redo', '--yes']);
    expect(redo.code).toBe(3);
    expect(redo.stderr).toContain('nothing to redo: files changed since the last undo (new work)');
    expect(await readFile(path.join(repo.proj, 'log.txt'), 'utf8')).toBe('base\nC\n');
  });

  it('the list marks each undone picture and the preview of a bare undo never targets a save', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    repo.tb(['run', '--label', 'add A', '--', 'sh', '-c', 'echo A >> log.txt']);
    repo.tb(['run', '--label', 'add B', '--', 'sh', '-c', 'echo B >> log.txt']);
    repo.tb(['undo', '--yes']);
    const list = repo.tb(['list']).stdout.split('\n');
    const row = (label: string): string | undefined => list.find((l) => l.includes(`  ${label} · `));
    expect(row('add B')).toContain('undone');
    expect(row('add A')).not.toContain('undone');
    expect(row('before undo of add B')).not.toContain('undone');
    const dry = repo.tb(['undo', '--dry-run']);
    expect(dry.stdout).toContain('undo to add A');
    expect(dry.stdout).not.toContain('before undo of');
  });
});

describe("the list after undo and redo (issue #26 point 8)", () => {
  it("folds each undo's and redo's save under the row it belongs to, never a row of its own", async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    repo.tb(['run', '--label', 'add A', '--', 'sh', '-c', 'echo A >> log.txt']);
    repo.tb(['run', '--label', 'add B', '--', 'sh', '-c', 'echo B >> log.txt']);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    const lines = repo.tb(['list']).stdout.split('\n').filter((l) => l.length > 0);
    // Rows of their own: the two runs alone; every save is a `↳` line under add B, newest first.
    expect(lines.filter((l) => !l.startsWith('  ')).map((l) => /  (add [AB]|before [^·]*) · /.exec(l)?.[1])).toEqual(['add B', 'add A']);
    const b = lines.findIndex((l) => l.includes('  add B · '));
    expect(lines.slice(b + 1, b + 4).map((l) => /^  ↳ [0-9a-f]{8}  (before[^·]*) · /.exec(l)?.[1])).toEqual(['before undo of add B', 'before redo', 'before undo of add B']);
    // The saves stay in --json as they are, each with its own id that undo takes.
    const listed = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { kind: string }[] };
    expect(listed.checkpoints.filter((c) => c.kind === 'pre-restore')).toHaveLength(3);
  });
});

describe('redoStack and bareUndoTarget (pure)', () => {
  const m = (id: string, kind: StackMeta['kind'], restoreOf?: string, entryCount = 1): StackMeta => ({ id: id as StackMeta['id'], kind, entryCount, ...(restoreOf !== undefined ? { restoreOf: restoreOf as StackMeta['id'] } : {}) });
  it('pushes undo saves, pops on redo, clears on a new change', () => {
    const turns = [m('1', 'turn'), m('2', 'turn'), m('3', 'pre-restore', '2'), m('4', 'pre-restore', '1')];
    expect(redoStack(turns).saves.map((s) => s.id)).toEqual(['3', '4']);
    expect(redoStack([...turns, m('5', 'pre-restore', '4')]).saves.map((s) => s.id)).toEqual(['3']);
    expect(redoStack([...turns, m('5', 'pre-restore', '4'), m('6', 'pre-restore', '3')]).saves).toEqual([]);
    const cleared = redoStack([...turns, m('5', 'turn')]);
    expect(cleared.saves).toEqual([]);
    expect(cleared.clearedBy?.id).toBe('5');
    // An empty turn changes nothing, so it does not end the walk; an empty save is no undo.
    expect(redoStack([...turns, m('5', 'turn', undefined, 0), m('6', 'pre-restore', '1', 0)]).saves.map((s) => s.id)).toEqual(['3', '4']);
  });
  it('a bare undo skips saves, undone and empty pictures', () => {
    const newestFirst = [
      { ...m('5', 'pre-restore', '2'), state: 'complete' },
      { ...m('4', 'turn', undefined, 0), state: 'complete' },
      { ...m('3', 'turn'), state: 'undone' },
      { ...m('2', 'call'), state: 'interrupted' },
      { ...m('1', 'turn'), state: 'complete' },
    ];
    expect(bareUndoTarget(newestFirst)?.id).toBe('2');
    expect(bareUndoTarget(newestFirst.slice(0, 3))).toBeUndefined();
  });
});

describe('bare undo --yes over turns that only created files or changed nothing (issues #26, #27)', () => {
  it('undo --yes, undo --yes steps back past a turn that only created files: its files go, then the turn before', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo A >> log.txt']).code).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'mkdir -p gen && echo x > gen/new.txt && echo y > made.txt']).code).toBe(0);
    const first = repo.tb(['undo', '--yes']);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    await expect(readFile(path.join(repo.proj, 'made.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    await expect(readFile(path.join(repo.proj, 'gen', 'new.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    const second = repo.tb(['undo', '--yes']);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toContain('echo A');
    expect(await readFile(path.join(repo.proj, 'log.txt'), 'utf8')).toBe('base\n');
    // redo, redo walks forward again, the created files included.
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await readFile(path.join(repo.proj, 'gen', 'new.txt'), 'utf8')).toBe('x\n');
    expect(await readFile(path.join(repo.proj, 'log.txt'), 'utf8')).toBe('base\nA\n');
  });

  it('undo --yes after a turn that changed nothing says so and takes nothing back', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo A >> log.txt']).code).toBe(0);
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code).toBe(3);
    expect(undo.stderr).toMatch(/nothing to undo: the last picture \(.*true.*\) changed no file; turnback undo [0-9a-f]{8} takes back the one before it/);
    expect(await readFile(path.join(repo.proj, 'log.txt'), 'utf8')).toBe('base\nA\n');
  });
});
