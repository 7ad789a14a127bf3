import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// `turnback revert ID` undoes one turn and keeps the later ones: paths a later turn changed again
// are listed and left; the rest is restored, guarded and saved first.

describe('turnback revert', () => {
  it('a picture cut short that found no change says what it could not see, never "changed no file"', async () => {
    const repo = await cliRepo({ 'a/f.txt': 'a\n', 'b/f.txt': 'b\n', 'c/f.txt': 'c\n', 'turnback.toml': '[checkpoints]\nmax_walk_entries = 3\n' });
    // Untracked, in a folder the walk's entry limit leaves: no picture holds it.
    await writeFile(path.join(repo.proj, 'c', 'mine.txt'), 'mine\n');
    expect(repo.tb(['run', '--', 'rm', 'c/mine.txt']).code).toBe(0);
    const revert = repo.tb(['revert', repo.newestId(), '--dry-run']);
    expect(revert.code).toBe(3);
    expect(revert.stderr).toMatch(/nothing to revert: before rm c\/mine\.txt recorded no change, but its pictures were incomplete \(the walk reached its entry limit .*\): what it changed there is not known/);
    expect(revert.stderr).not.toContain('changed no file');
  });

  it("undoes only that turn's files (what it created goes with it), leaves what a later turn changed again, and keeps the later turn", async () => {
    const repo = await cliRepo({ 'x.txt': 'x0\n', 'y.txt': 'y0\n', 'z.txt': 'z0\n' });
    const read = (name: string): Promise<string> => readFile(path.join(repo.proj, name), 'utf8');
    repo.tb(['run', '--label', 'first', '--', 'sh', '-c', 'echo x1 > x.txt; echo y1 > y.txt; echo new > new.txt']);
    const first = repo.newestId();
    repo.tb(['run', '--label', 'second', '--', 'sh', '-c', 'echo y2 > y.txt; echo z2 > z.txt']);

    const dry = repo.tb(['revert', first, '--dry-run']);
    expect(dry.code).toBe(0);
    // new.txt is the turn's own creation, still as it left it: its revert takes it (issue #26, point 7).
    expect(dry.stdout).toContain('revert first (its own changes; later turns kept): 1 to write back, 1 to delete');
    expect(dry.stdout).toContain('left as they are: 1 file a later picture changed again');
    expect(dry.stdout).toMatch(/left {8}y\.txt {3}changed again by [0-9a-f]{8} second/);
    expect(await read('x.txt')).toBe('x1\n');

    const done = repo.tb(['revert', first, '--yes']);
    expect(done.code).toBe(0);
    expect(await read('x.txt')).toBe('x0\n');
    expect(await read('y.txt')).toBe('y2\n');
    expect(await read('z.txt')).toBe('z2\n');
    expect(existsSync(path.join(repo.proj, 'new.txt'))).toBe(false);
    const saves = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { kind: string; label: string }[] };
    expect(saves.checkpoints[0]).toMatchObject({ kind: 'pre-restore', label: 'before revert of first' });

    // The revert was saved first: redo walks it forward again.
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    expect(await read('x.txt')).toBe('x1\n');
    expect(await read('y.txt')).toBe('y2\n');
    expect(await read('new.txt')).toBe('new\n');
  });

  it('--delete-created removes the files that turn created; a file changed outside since is refused, not overwritten', async () => {
    const repo = await cliRepo({ 'x.txt': 'x0\n', 'w.txt': 'w0\n' });
    repo.tb(['run', '--', 'sh', '-c', 'echo x1 > x.txt; echo w1 > w.txt; echo new > new.txt']);
    const turn = repo.newestId();
    await writeFile(path.join(repo.proj, 'w.txt'), 'by hand\n');
    const result = repo.tb(['revert', turn, '--yes', '--delete-created']);
    // Issue #27: w.txt is left as the person made it, and the exit code and last line say so.
    expect(result.code).toBe(6);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toMatch(/^not brought back: 1 file \(1 /);
    expect(await readFile(path.join(repo.proj, 'x.txt'), 'utf8')).toBe('x0\n');
    expect(await readFile(path.join(repo.proj, 'w.txt'), 'utf8')).toBe('by hand\n');
    expect(existsSync(path.join(repo.proj, 'new.txt'))).toBe(false);
  });

  it('bad input: a save, an unknown id, and a turn whose every file changed again change nothing', async () => {
    const repo = await cliRepo({ 'x.txt': 'x0\n' });
    repo.tb(['run', '--', 'sh', '-c', 'echo x1 > x.txt']);
    const first = repo.newestId();
    repo.tb(['run', '--label', 'again', '--', 'sh', '-c', 'echo x2 > x.txt']);
    const all = repo.tb(['revert', first, '--yes']);
    expect(all.code).toBe(3);
    expect(all.stderr).toContain('nothing to revert: every file');
    expect(all.stdout).toMatch(/left {8}x\.txt {3}changed again by [0-9a-f]{8} again/);

    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    const save = repo.newestId();
    const onSave = repo.tb(['revert', save, '--yes']);
    expect(onSave.code).toBe(2);
    expect(onSave.stderr).toContain("a restore's save");
    const unknown = repo.tb(['revert', 'abcdef01', '--yes']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no picture abcdef01 in this project');
    expect(await readFile(path.join(repo.proj, 'x.txt'), 'utf8')).toBe('x1\n');
  });
});
