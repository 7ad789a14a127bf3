import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveCoverage, type CoverageOptions } from '../../src/capture/coverage.js';
import { scanTree, type ScanResult } from '../../src/capture/scan.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { makeTree, tempDir } from './helpers.js';

let root: string;
beforeEach(async () => {
  root = await tempDir();
});
afterEach(async () => {
  await fs.chmod(root, 0o755).catch(() => undefined);
  await fs.rm(root, { recursive: true, force: true });
});

async function scan(options: CoverageOptions = {}, extra: Parameters<typeof scanTree>[2] = {}): Promise<ScanResult> {
  return scanTree(root, resolveCoverage(options), extra);
}

function paths(result: ScanResult): string[] {
  return [...result.entries.keys()].sort();
}

describe('scanTree coverage', () => {
  it('records files and symlinks with their stat, and nothing else', async () => {
    await makeTree(root, { 'a.txt': 'hello', 'src/b.ts': 'b', 'empty/': { dir: true }, link: { link: 'a.txt' } });
    const result = await scan();
    expect(paths(result)).toEqual(['a.txt', 'link', 'src/b.ts']);
    const a = result.entries.get('a.txt');
    const stats = await fs.lstat(path.join(root, 'a.txt'));
    expect(a).toEqual({ path: 'a.txt', type: 'file', size: 5, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs, ino: stats.ino });
    expect(result.entries.get('link')).toMatchObject({ type: 'symlink', target: 'a.txt' });
    expect(result.partial).toBe(false);
    expect(result.unchecked).toEqual([]);
    expect(result.walked).toBe(5);
  });

  it('records a symlink to a folder outside the root as a link and never walks it', async () => {
    const outside = await tempDir();
    try {
      await makeTree(outside, { 'secret.txt': 'x', 'deep/y.txt': 'y' });
      await makeTree(root, { out: { link: outside }, 'in.txt': 'i' });
      const result = await scan();
      expect(paths(result)).toEqual(['in.txt', 'out']);
      expect(result.entries.get('out')).toMatchObject({ type: 'symlink', target: outside });
    } finally {
      await fs.rm(outside, { recursive: true, force: true });
    }
  });

  it('skips FIFOs', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    await makeTree(root, { 'a.txt': 'a' });
    expect(paths(await scan())).toEqual(['a.txt']);
  });

  it('honours the root .gitignore, negations and folder-only patterns', async () => {
    await makeTree(root, {
      '.gitignore': '*.log\n!keep.log\nbuild/\n# comment\n',
      'a.log': 'x',
      'keep.log': 'k',
      'sub/b.log': 'x',
      'build/out.js': 'o',
      'src/build': 'a file named build',
      'src/main.ts': 'm',
    });
    expect(paths(await scan())).toEqual(['.gitignore', 'keep.log', 'src/build', 'src/main.ts']);
  });

  it('honours nested .gitignore files relative to their own folder', async () => {
    await makeTree(root, {
      '.gitignore': 'tmp/\n',
      'pkg/.gitignore': '/dist\n*.gen.ts\n!keep.gen.ts\n',
      'pkg/dist/x.js': 'x',
      'pkg/src/dist/y.js': 'y',
      'pkg/src/a.gen.ts': 'g',
      'pkg/src/keep.gen.ts': 'k',
      'pkg/tmp/t': 't',
      'dist/z.js': 'z',
      'other/a.gen.ts': 'not ignored here',
    });
    expect(paths(await scan())).toEqual([
      '.gitignore',
      'dist/z.js',
      'other/a.gen.ts',
      'pkg/.gitignore',
      'pkg/src/dist/y.js',
      'pkg/src/keep.gen.ts',
    ]);
  });

  it('lets a deeper .gitignore re-include a file an outer one ignores', async () => {
    await makeTree(root, { '.gitignore': '*.txt\n', 'a.txt': 'a', 'docs/.gitignore': '!*.txt\n', 'docs/b.txt': 'b' });
    expect(paths(await scan())).toEqual(['.gitignore', 'docs/.gitignore', 'docs/b.txt']);
  });

  it('skips dependency folders only when the project is not a git repository', async () => {
    const tree = { 'node_modules/x/index.js': 'x', '.venv/lib.py': 'v', 'target/out': 't', 'sub/__pycache__/m.pyc': 'p', 'src/a.ts': 'a' };
    await makeTree(root, tree);
    expect(paths(await scan())).toEqual(['src/a.ts']);
    await makeTree(root, { '.git/HEAD': 'ref: refs/heads/main\n' });
    expect(paths(await scan())).toEqual(['.venv/lib.py', 'node_modules/x/index.js', 'src/a.ts', 'sub/__pycache__/m.pyc', 'target/out']);
  });

  it('never covers .git at any depth, but covers a nested repository and honours its .gitignore', async () => {
    await makeTree(root, {
      '.git/HEAD': 'h',
      'a.txt': 'a',
      'vendor/lib/.git/HEAD': 'h',
      'vendor/lib/.git/objects/ab/cd': 'o',
      'vendor/lib/.gitignore': 'secret-build/\n',
      'vendor/lib/src/x.c': 'x',
      'vendor/lib/secret-build/y.o': 'y',
      'wt/.git': 'gitdir: ../.git/worktrees/wt\n',
      'wt/f.txt': 'f',
    });
    expect(paths(await scan())).toEqual(['a.txt', 'vendor/lib/.gitignore', 'vendor/lib/src/x.c', 'wt/f.txt']);
  });

  it('skips turnback temp files, excluded paths and configured skip patterns', async () => {
    await makeTree(root, {
      '.turnback-stage-1234': 'tmp',
      'src/.turnback-displaced-9': 'tmp',
      'src/a.ts': 'a',
      '.store/objects/x': 'o',
      'out/big.bin': 'b',
      'notes.tmp': 'n',
    });
    const result = await scan({ skip: ['out/', '*.tmp'] }, { exclude: [path.join(root, '.store')] });
    expect(paths(result)).toEqual(['src/a.ts']);
    expect(result.partial).toBe(false);
  });
});

describe('unusable .gitignore', () => {
  it('a symlinked .gitignore leaves its folder unchecked and reports a gap', async () => {
    await makeTree(root, { 'real-ignore': '*.txt\n', 'a.txt': 'a', 'sub/.gitignore': { link: '../real-ignore' }, 'sub/b.txt': 'b' });
    const result = await scan();
    expect(paths(result)).toEqual(['a.txt', 'real-ignore']);
    expect(result.unchecked).toEqual([{ path: 'sub', reason: 'gitignore-unusable' }]);
    expect(result.gaps).toEqual([{ path: 'sub', reason: 'gitignore-unusable', detail: expect.stringContaining('symlink') }]);
    expect(result.partial).toBe(true);
  });

  it('a .gitignore over 1 MiB leaves its folder unchecked', async () => {
    await makeTree(root, { 'sub/.gitignore': `# ${'x'.repeat(1024 * 1024)}\n`, 'sub/b.txt': 'b', 'c.txt': 'c' });
    const result = await scan();
    expect(paths(result)).toEqual(['c.txt']);
    expect(result.unchecked).toEqual([{ path: 'sub', reason: 'gitignore-unusable' }]);
    expect(result.gaps[0]?.detail).toContain('over 1 MiB');
  });

  it('an unusable root .gitignore leaves the whole project unchecked', async () => {
    await makeTree(root, { '.gitignore': 'a/***/b\n', 'c.txt': 'c' });
    const result = await scan();
    expect(result.entries.size).toBe(0);
    expect(result.unchecked).toEqual([{ path: '.', reason: 'gitignore-unusable' }]);
    expect(result.gaps[0]?.detail).toContain('***');
  });

  it('a .gitignore that is a folder leaves its folder unchecked', async () => {
    await makeTree(root, { 'sub/.gitignore/x': 'x', 'sub/b.txt': 'b' });
    const result = await scan();
    expect(result.unchecked).toEqual([{ path: 'sub', reason: 'gitignore-unusable' }]);
    expect(result.entries.has('sub/b.txt')).toBe(false);
  });
});

describe('scan limits', () => {
  it('maxWalkEntries stops the walk and leaves the rest unchecked', async () => {
    await makeTree(root, { 'a/1': '1', 'a/2': '2', 'b/1': '1', 'b/2': '2', 'c/1': '1', 'top.txt': 't' });
    const result = await scan({ maxWalkEntries: 6 });
    expect(result.partial).toBe(true);
    expect(result.walked).toBeLessThanOrEqual(6);
    const uncheckedPaths = result.unchecked.map((u) => u.path).sort();
    expect(uncheckedPaths.length).toBeGreaterThan(0);
    expect(result.unchecked.every((u) => u.reason === 'walk-entries')).toBe(true);
    // Every file is either recorded or under an unchecked folder: nothing silently missing.
    for (const file of ['a/1', 'a/2', 'b/1', 'b/2', 'c/1', 'top.txt']) {
      const covered = result.entries.has(file) || uncheckedPaths.some((u) => u === '.' || file.startsWith(`${u}/`));
      expect(covered, file).toBe(true);
    }
    expect(result.gaps.some((g) => g.reason === 'walk-entries')).toBe(true);
  });

  it('maxWalkEntries below the root listing leaves the whole project unchecked', async () => {
    await makeTree(root, { a: 'a', b: 'b', c: 'c' });
    const result = await scan({ maxWalkEntries: 2 });
    expect(result.entries.size).toBe(0);
    expect(result.unchecked).toEqual([{ path: '.', reason: 'walk-entries' }]);
  });

  it('maxDepth leaves deeper folders unchecked', async () => {
    await makeTree(root, { 'a/b/c/d.txt': 'd', 'a/x.txt': 'x', 'top.txt': 't' });
    const result = await scan({ maxDepth: 1 });
    expect(paths(result)).toEqual(['a/x.txt', 'top.txt']);
    expect(result.unchecked).toEqual([{ path: 'a/b', reason: 'too-deep' }]);
    expect(result.partial).toBe(true);
    expect(result.gaps).toEqual([{ path: 'a/b', reason: 'too-deep', detail: expect.stringContaining('deeper than 1 levels') }]);
  });

  it('a passed deadline leaves the project unchecked', async () => {
    await makeTree(root, { 'a.txt': 'a' });
    const result = await scan({}, { deadline: Date.now() - 1 });
    expect(result.entries.size).toBe(0);
    expect(result.unchecked).toEqual([{ path: '.', reason: 'time-limit' }]);
    expect(result.partial).toBe(true);
    expect(result.gaps[0]?.reason).toBe('time-limit');
  });

  it('an aborted signal rejects with its reason', async () => {
    await makeTree(root, { 'a.txt': 'a' });
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(scan({}, { signal: controller.signal })).rejects.toThrow('stop');
  });

  it('a folder that cannot be listed is left unchecked with a gap, and the rest is recorded', async () => {
    await makeTree(root, { 'a.txt': 'a', 'locked/b.txt': 'b', 'locked/deep/c.txt': 'c', 'open/d.txt': 'd' });
    const { readdirSync } = await import('node:fs');
    // Root ignores chmod 000, so the listing itself is made to fail as it would for another user.
    const readDir = (abs: string): import('node:fs').Dirent[] => {
      if (abs === path.join(root, 'locked')) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      return readdirSync(abs, { withFileTypes: true });
    };
    const result = await scan({}, { readDir });
    expect(paths(result)).toEqual(['a.txt', 'open/d.txt']);
    expect(result.unchecked).toEqual([{ path: 'locked', reason: 'unreadable' }]);
    expect(result.gaps).toEqual([{ path: 'locked', reason: 'unreadable', detail: 'locked/ cannot be listed (EACCES)' }]);
    expect(result.partial).toBe(true);
  });

  it('a missing root throws UNAVAILABLE', async () => {
    await expect(scanTree(path.join(root, 'missing'), resolveCoverage())).rejects.toSatisfy((e) => isCheckpointError(e, 'UNAVAILABLE'));
  });
});
