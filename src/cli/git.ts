import { execFile } from 'node:child_process';
import type { GitAnswer } from '../report/turn-end-list.js';

/** Git is asked about at most this many files per list (seed 001). */
export const GIT_QUESTION_LIMIT = 100;

interface GitResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

function git(args: string[], cwd: string, timeoutMs = 10_000): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } }, (error, stdout, stderr) => {
      resolve({ ok: error === null, stdout, stderr });
    });
  });
}

/** The git toplevel of `cwd`, or `undefined` when it is not in a work tree (or git is missing). */
export async function gitToplevel(cwd: string): Promise<string | undefined> {
  const result = await git(['rev-parse', '--show-toplevel'], cwd);
  const top = result.stdout.trim();
  return result.ok && top.length > 0 ? top : undefined;
}

/**
 * Asks git which of `paths` (project-relative) it holds a copy of: tracked in the index. At most
 * {@link GIT_QUESTION_LIMIT} are asked; the rest come back `unchecked`. Outside a repository git
 * holds no copy of anything, so every path is `notInGit`.
 */
export async function askGit(projectRoot: string, paths: readonly string[]): Promise<GitAnswer> {
  if (paths.length === 0) return { notInGit: new Set(), unchecked: new Set() };
  const asked = paths.slice(0, GIT_QUESTION_LIMIT);
  const over = new Set(paths.slice(GIT_QUESTION_LIMIT));
  const overWhy = over.size > 0 ? `git is asked about at most ${GIT_QUESTION_LIMIT} files` : undefined;
  const inside = await git(['rev-parse', '--is-inside-work-tree'], projectRoot);
  if (!inside.ok || inside.stdout.trim() !== 'true') {
    if (/not a git repository/i.test(inside.stderr)) {
      return { notInGit: new Set(asked), unchecked: over, ...(overWhy !== undefined ? { uncheckedWhy: overWhy } : {}) };
    }
    return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  }
  // `:(literal)` keeps names with glob characters from matching other files.
  const result = await git(['ls-files', '-z', '--', ...asked.map((p) => `:(literal)${p}`)], projectRoot);
  if (!result.ok) return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  const tracked = new Set(result.stdout.split('\0').filter((p) => p.length > 0));
  return {
    notInGit: new Set(asked.filter((p) => !tracked.has(p))),
    unchecked: over,
    ...(overWhy !== undefined ? { uncheckedWhy: overWhy } : {}),
  };
}
