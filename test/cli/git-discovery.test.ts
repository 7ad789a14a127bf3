import { execFileSync } from 'node:child_process';
import { mkdir, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepoOf } from '../../src/cli/git.js';
import { tempFolder } from '../helpers/temp.js';

// A fresh command finds its repository by reading the file system, as git's discovery does, and
// asks git only where that reading cannot settle it. Each answer is checked against git itself.

function gitSays(cwd: string, env: NodeJS.ProcessEnv = process.env): { toplevel: string; gitDir: string } | undefined {
  try {
    const [toplevel, gitDir] = execFileSync('git', ['rev-parse', '--show-toplevel', '--absolute-git-dir'], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n');
    return { toplevel: toplevel as string, gitDir: gitDir as string };
  } catch {
    return undefined;
  }
}

describe('gitRepoOf', () => {
  it('agrees with git at a repository top, in a subfolder, in a worktree, outside any repository, and inside .git', async () => {
    const root = await realpath(await tempFolder('turnback-discovery-'));
    const repo = path.join(root, 'repo');
    await mkdir(path.join(repo, 'a', 'b'), { recursive: true });
    const git = (...args: string[]): void => void execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: repo, stdio: 'ignore' });
    git('init', '-q');
    git('commit', '-q', '--allow-empty', '-m', 'i');
    git('worktree', 'add', '-q', '-b', 'side', path.join(root, 'wt'));
    await mkdir(path.join(root, 'plain', 'x'), { recursive: true });
    for (const cwd of [repo, path.join(repo, 'a', 'b'), path.join(root, 'wt'), path.join(root, 'plain', 'x'), path.join(repo, '.git', 'refs')]) {
      const ours = await gitRepoOf(cwd);
      const theirs = gitSays(cwd);
      expect(ours === undefined ? undefined : { toplevel: ours.toplevel, gitDir: ours.gitDir }, cwd).toEqual(theirs);
    }
    expect((await gitRepoOf(repo))?.hashBytes).toBe(20);
  });

  it('leaves GIT_DIR and the other discovery variables to git', async () => {
    const root = await realpath(await tempFolder('turnback-discovery-env-'));
    execFileSync('git', ['init', '-q', root]);
    const elsewhere = await realpath(await tempFolder('turnback-discovery-other-'));
    const env = { ...process.env, GIT_DIR: path.join(root, '.git'), GIT_WORK_TREE: elsewhere };
    const ours = await gitRepoOf(elsewhere, env);
    // Through git: the work tree the variables name, not a walk from the folder.
    expect(ours?.gitDir).toBe(path.join(root, '.git'));
  });
});
