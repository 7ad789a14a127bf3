import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EDIT, json, proj, tb, useE2eProject } from './e2e-harness.js';

// The built command end to end: undo and redo, their dialogue on a pipe, --path, --dry-run and
// --delete-created, a file changed since, and the messages when there is nothing to do.

useE2eProject();

describe('turnback undo and redo', () => {
  it('marks pictures a full undo went back past as undone, does not offer them, and redo brings them back', async () => {
    tb(['run', '--label', 'first', '--', 'sh', '-c', 'echo first >> Cargo.toml']);
    tb(['run', '--label', 'second', '--', 'sh', '-c', 'echo second >> src/parser.rs']);
    const listed = json<{ checkpoints: { id: string; label?: string }[] }>(tb(['list', '--json'])).checkpoints;
    const first = listed.find((p) => p.label?.includes('first') === true);
    expect(first).toBeDefined();
    const undo = tb(['undo', (first as { id: string }).id, '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).not.toContain('second');

    const list = tb(['list']);
    const secondRow = list.stdout.split('\n').find((line) => line.includes('second'));
    expect(secondRow).toContain('undone: `turnback redo` brings it back');
    const picker = tb(['undo'], { input: 'garbage\n' });
    expect(picker.stdout).not.toContain('second');
    expect(picker.stdout).toContain('before undo');

    expect(tb(['redo', '--yes']).code).toBe(0);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('second');
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toContain('first');
    expect(tb(['list']).stdout).not.toContain('undone');
  });

  it('walks the pipe dialogue: garbage and "n" cancel, "y" restores, redo returns', async () => {
    tb(['run', '--', ...EDIT]);
    const garbage = tb(['undo'], { input: 'garbage\n' });
    expect(garbage.code).toBe(3);
    // Each line starts with the picture's short id.
    expect(garbage.stdout).toMatch(/ {2}1 {2}[0-9a-f]{8} {2}before sh -c/);
    expect(garbage.stdout).toContain('undo cancelled');

    const no = tb(['undo'], { input: '1\nn\n' });
    expect(no.code).toBe(3);
    // Issue #26 point 7: the file the turn itself created goes with its undo (saved first).
    expect(no.stdout).toContain('1 to write back, 4 to recreate, 1 to delete');
    expect(no.stdout).toContain('restore? type y to confirm');
    expect(no.stdout).toContain('undo cancelled');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);

    const yes = tb(['undo'], { input: '1\nYes\n' });
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain('restored 6 files to before sh -c');
    expect(yes.stdout).toContain('  deleted     tidy.sh');
    expect(yes.stdout).toContain('  saved first: turnback undo can undo this');
    expect(await readFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'utf8')).toBe('not committed\n');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('two();');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(false);

    const list = tb(['list']);
    // The undo's save goes under the row it undid (issue #26 point 8), not in a row of its own.
    expect(list.stdout.split('\n')[0]).toContain('before sh -c');
    expect(list.stdout.split('\n')[1]).toMatch(/^  ↳ [0-9a-f]{8}  before undo/);

    const redo = tb(['redo', '--yes']);
    expect(redo.code).toBe(0);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'draft.md'))).toBe(false);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('TWO();');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(true);
    const again = tb(['redo', '--yes']);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('nothing to redo');
  });

  it('undo --path restores one file; --dry-run and --delete-created', async () => {
    tb(['run', '--', ...EDIT]);
    const dry = tb(['undo', '--dry-run', '--delete-created']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('1 to delete');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(true);

    const one = tb(['undo', '--path', 'src/parser.rs', '--yes']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('restored 1 file to');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('two();');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);

    const turn = json<{ checkpoints: { id: string; kind: string }[] }>(tb(['list', '--json'])).checkpoints.find((c) => c.kind === 'turn');
    const all = tb(['undo', turn?.id ?? '', '--yes', '--delete-created', '--json']);
    expect(all.code, all.stderr).toBe(0);
    expect(json<{ restored: boolean }>(all).restored).toBe(true);
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(false);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'n1.md'))).toBe(true);
  });

  it('skips a file changed since the picture instead of overwriting it', async () => {
    tb(['run', '--', ...EDIT]);
    await writeFile(path.join(proj, 'src', 'parser.rs'), 'my own edit\n');
    const undo = tb(['undo', '--yes']);
    // Issue #27: an undo that left a file behind says so last, and in its exit code.
    expect(undo.code).toBe(6);
    expect(undo.stdout).toMatch(/skipped +src\/parser\.rs +changed since/);
    expect(undo.stdout.trimEnd().split('\n').at(-1)).toBe('not brought back: 1 file (1 changed since (your version is kept))');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toBe('my own edit\n');
  });

  it('gives clear messages: nothing to undo, outside path, cleared id', async () => {
    const none = tb(['undo']);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('no checkpoints in this project');
    tb(['run', '--', 'sh', '-c', 'echo a > a.txt']);
    const outside = tb(['undo', '--path', '../elsewhere.txt', '--yes']);
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain('undo takes a path inside the project');
    const cleared = tb(['undo', '1700000000000-0000-abcdef01', '--yes']);
    expect(cleared.code).toBe(2);
    expect(cleared.stderr).toContain('no picture 1700000000000-0000-abcdef01 in this project');
    const bad = tb(['show', 'nonsense', '--json']);
    expect(bad.code).toBe(2);
    expect(json<{ error: { reason: string } }>(bad).error.reason).toBe('INVALID_ID');
  });
});

