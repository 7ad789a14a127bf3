import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pathMatcher } from '../../src/cli/path-patterns.js';
import { cliRepo } from './harness.js';

// Issue #12: folders and globs work in `undo --path`, `diff` and `show`. Through the built binary.

const files = { 'src/cli/a.ts': 'a\n', 'src/cli/b.ts': 'b\n', 'src/core/c.ts': 'c\n', 'src/core/d.md': 'd\n', 'top.ts': 't\n' };
const EDIT_ALL = 'for f in src/cli/a.ts src/cli/b.ts src/core/c.ts src/core/d.md top.ts; do echo changed >> $f; done';
const text = (repo: { proj: string }, file: string) => readFile(path.join(repo.proj, file), 'utf8');

describe('folders and globs as paths', () => {
  it('undo --path FOLDER restores every changed file under it and nothing else', async () => {
    const repo = await cliRepo(files);
    expect(repo.tb(['run', '--', 'sh', '-c', EDIT_ALL]).code).toBe(0);
    expect(repo.tb(['undo', '--path', 'src/cli', '--yes']).code).toBe(0);
    expect([await text(repo, 'src/cli/a.ts'), await text(repo, 'src/cli/b.ts')]).toEqual(['a\n', 'b\n']);
    expect(await text(repo, 'src/core/c.ts')).toBe('c\nchanged\n');
  });

  it("undo --path 'src/**/*.ts' restores the matching files; diff and show take folders and globs", async () => {
    const repo = await cliRepo(files);
    expect(repo.tb(['run', '--', 'sh', '-c', EDIT_ALL]).code).toBe(0);
    const id = repo.newestId();
    const diff = repo.tb(['diff', id, 'src/core']);
    expect(diff.stdout).toContain('--- a/src/core/c.ts');
    expect(diff.stdout).toContain('--- a/src/core/d.md');
    expect(diff.stdout).not.toContain('src/cli');
    const show = JSON.parse(repo.tb(['show', id, 'src/**/*.ts', '--json']).stdout) as { changes: { path: string }[] };
    expect(show.changes.map((change) => change.path).sort()).toEqual(['src/cli/a.ts', 'src/cli/b.ts', 'src/core/c.ts']);
    expect(repo.tb(['show', id, 'src/**/*.ts']).stdout).toContain('files: 3 changed');
    expect(repo.tb(['undo', id, '--path', 'src/**/*.ts', '--yes']).code).toBe(0);
    expect(await text(repo, 'src/core/c.ts')).toBe('c\n');
    expect(await text(repo, 'src/core/d.md')).toBe('d\nchanged\n');
    expect(await text(repo, 'top.ts')).toBe('t\nchanged\n');
    const none = repo.tb(['undo', '--path', 'nowhere/**', '--yes']);
    expect(none.code).toBe(3);
  });

  it('pathMatcher anchors at the root: a file name is that file, not any file of that name', () => {
    const matches = pathMatcher(['a.txt', 'src', 'lib/**/*.js']);
    expect(['a.txt', 'x/a.txt', 'src/y', 'srcx', 'lib/p/q.js', 'lib/q.ts'].filter(matches)).toEqual(['a.txt', 'src/y', 'lib/p/q.js']);
  });
});
