import { describe, expect, it } from 'vitest';
import { decodeKey, isYes, parsePick, pickerLines, pickerStep, type PickerState } from '../../src/cli/dialogue.js';
import { describeFailure, CliExit } from '../../src/cli/io.js';
import { displayLabel, displayTime, shortId } from '../../src/cli/pictures.js';
import { projectPathOf } from '../../src/cli/undo.js';
import { CheckpointError } from '../../src/index.js';
import { EXIT } from '../../src/cli/exit-codes.js';

describe('pipe dialogue', () => {
  it('a number in range picks; anything else cancels', () => {
    expect(parsePick('2', 3)).toBe(1);
    expect(parsePick(' 1 \r', 3)).toBe(0);
    for (const line of ['0', '4', 'abc', '', '1.5', '-1', undefined]) expect(parsePick(line, 3)).toBeUndefined();
  });

  it('only y, Y, yes and Yes confirm', () => {
    for (const yes of ['y', 'Y', 'yes', 'Yes', ' y ']) expect(isYes(yes)).toBe(true);
    for (const no of ['n', 'YES', 'yep', '', 'no', undefined]) expect(isYes(no)).toBe(false);
  });
});

describe('terminal picker', () => {
  it('decodes arrows, Enter, Esc and Ctrl-C', () => {
    expect(['\u001b[A', '\u001b[B', '\r', '\u001b', '\u0003', 'x'].map(decodeKey)).toEqual(['up', 'down', 'enter', 'cancel', 'cancel', 'other']);
  });

  it('moves within bounds and ends on Enter or cancel', () => {
    let state: PickerState = { index: 0 };
    state = pickerStep(state, 'up', 3);
    expect(state.index).toBe(0);
    for (let i = 0; i < 5; i++) state = pickerStep(state, 'down', 3);
    expect(state.index).toBe(2);
    expect(pickerStep(state, 'enter', 3)).toEqual({ index: 2, done: 'chosen' });
    expect(pickerStep(state, 'cancel', 3)).toEqual({ index: 2, done: 'cancelled' });
    expect(pickerStep({ index: 1, done: 'chosen' }, 'down', 3)).toEqual({ index: 1, done: 'chosen' });
  });

  it('shows a window around the highlighted row', () => {
    const items = Array.from({ length: 20 }, (_, i) => `item ${i}`);
    const lines = pickerLines(items, 15, 5);
    expect(lines).toHaveLength(5);
    expect(lines).toContain('› item 15');
    expect(pickerLines(['a', 'b'], 0)).toEqual(['› a', '  b']);
  });
});

describe('helpers', () => {
  it('labels checkpoints the way people read them', () => {
    expect(displayLabel({ kind: 'turn', label: 'before ./tidy.sh' })).toBe('before ./tidy.sh');
    // A restore's save shows its own label (before undo of …, before redo), else `before undo`.
    expect(displayLabel({ kind: 'pre-restore', label: 'before redo' })).toBe('before redo');
    expect(displayLabel({ kind: 'pre-restore' })).toBe('before undo');
    // A call checkpoint is an interrupted run recorded later: its label is the bare command.
    expect(displayLabel({ kind: 'call', label: "sh -c 'make all'" })).toBe("before sh -c 'make all'");
    const now = new Date(2024, 4, 2, 15, 0);
    expect(displayTime(new Date(2024, 4, 2, 14, 2).toISOString(), now)).toBe('14:02');
    expect(displayTime(new Date(2024, 3, 30, 9, 5).toISOString(), now)).toBe('2024-04-30 09:05');
    expect(shortId('1700000000000-0000-abcdef01')).toBe('abcdef01');
  });

  it('turns user paths into project paths and refuses paths outside', () => {
    expect(projectPathOf('/p', 'src/a.ts', '/p')).toBe('src/a.ts');
    expect(projectPathOf('/p', 'a.ts', '/p/src')).toBe('src/a.ts');
    expect(() => projectPathOf('/p', '../x', '/p')).toThrow('undo takes a path inside the project');
    expect(() => projectPathOf('/p', '/p', '/p')).toThrow(CliExit);
  });

  it('maps failures to exit codes', () => {
    expect(describeFailure(new CheckpointError('STORE_BUSY', 'x')).exitCode).toBe(EXIT.busy);
    expect(describeFailure(new CheckpointError('INVALID_ID', 'x')).exitCode).toBe(EXIT.usage);
    // The store's own words say which (never existed, pruned, cleared, dropped): passed on as they are.
    expect(describeFailure(new CheckpointError('UNKNOWN_CHECKPOINT', 'no checkpoint x in this store (it never existed here)')).message).toBe('no checkpoint x in this store (it never existed here)');
    expect(describeFailure(new CliExit(EXIT.nothing, 'NOTHING', 'no checkpoints in this project'))).toEqual({ exitCode: 3, reason: 'NOTHING', message: 'no checkpoints in this project' });
    expect(describeFailure(new Error('boom')).exitCode).toBe(EXIT.error);
  });
});
