import { execFileSync } from 'node:child_process';
import { readFile, symlink, mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { tempFolder } from '../helpers/temp.js';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { scanTree } from '../../src/capture/scan.js';

// A file git tracks is covered whatever the ignore rules say, as git itself treats it (prettier
// has tracked files under a folder whose own .gitignore says `test-*`).

describe('tracked files a .gitignore matches', () => {
  it('are pictured, listed and brought back by undo; untracked ignored files stay uncovered', async () => {
    const repo = await cliRepo({ 'tests/test-a.js': 'a\n', 'tests/keep.js': 'k\n', 'build/tracked.txt': 't\n', 'top.txt': 'x\n' });
    // Ignore rules added after the files were tracked, as in prettier's repository.
    await writeFile(path.join(repo.proj, 'tests', '.gitignore'), 'test-*\n');
    await writeFile(path.join(repo.proj, '.gitignore'), 'build/\n');
    repo.git('add', '.gitignore', 'tests/.gitignore');
    repo.git('commit', '-qm', 'ignore rules');
    await writeFile(path.join(repo.proj, 'tests', 'test-untracked.js'), 'u\n');

    const run = repo.tb(['run', '--', 'sh', '-c', 'echo changed > tests/test-a.js; echo changed > build/tracked.txt; echo changed > tests/test-untracked.js']);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/changed +tests\/test-a\.js/);
    expect(run.stderr).toMatch(/changed +build\/tracked\.txt/);
    expect(run.stderr).not.toContain('test-untracked');

    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(await readFile(path.join(repo.proj, 'tests', 'test-a.js'), 'utf8')).toBe('a\n');
    expect(await readFile(path.join(repo.proj, 'build', 'tracked.txt'), 'utf8')).toBe('t\n');
    expect(repo.git('status', '--porcelain')).toBe('');
  });

  it('a tracked path behind a link is never followed, and skip patterns still hold', async () => {
    const root = await tempFolder('turnback-tracked-');
    const outside = await tempFolder('turnback-outside-');
    const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root, encoding: 'utf8' });
    await mkdir(path.join(root, 'real'));
    await writeFile(path.join(root, 'real', 'f.txt'), 'f\n');
    await mkdir(path.join(root, 'skipped'));
    await writeFile(path.join(root, 'skipped', 's.txt'), 's\n');
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'i');
    await writeFile(path.join(root, '.gitignore'), 'real/\nskipped/\n');
    // The tracked folder is swapped for a link to a folder outside holding the same name.
    execFileSync('mv', [path.join(root, 'real'), path.join(root, 'real.moved')]);
    await writeFile(path.join(outside, 'f.txt'), 'outside\n');
    await symlink(outside, path.join(root, 'real'));
    const scan = await scanTree(root, resolveCoverage({ skip: ['skipped/'] }));
    const paths = scan.list.map((r) => r.path);
    expect(paths).not.toContain('real/f.txt');
    expect(paths).not.toContain('skipped/s.txt');
    expect(paths).toContain('real');
  });
  it('are found under hidden folders at any depth, and beside them only the hidden ones count', async () => {
    const root = await tempFolder('turnback-tracked-deep-');
    const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root, encoding: 'utf8' });
    const files = ['pkg/out/a.o', 'pkg/out/deep/b.o', 'pkg/keep.txt', 'pkg/outer/c.txt', 'build/d.o', 'top.log', 'src/e.log', 'src/f.ts'];
    for (const file of files) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), `${file}\n`);
    }
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'i');
    await writeFile(path.join(root, '.gitignore'), 'pkg/out/\nbuild/\n*.log\n');
    // Untracked files the same rules hide stay uncovered.
    await writeFile(path.join(root, 'pkg', 'out', 'new.o'), 'n\n');
    await writeFile(path.join(root, 'src', 'new.log'), 'n\n');
    const scan = await scanTree(root, resolveCoverage({}));
    const paths = scan.list.map((r) => r.path).sort();
    expect(paths).toEqual(['.gitignore', ...files].sort());
  });
});
