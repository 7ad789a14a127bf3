import { execFile, spawn } from 'node:child_process';
import type { GitAnswer } from '../report/turn-end-list.js';

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

/** Where a work tree's repository is: what one `git rev-parse` says of a folder. */
export interface GitRepo {
  /** The work tree's top folder. */
  toplevel: string;
  /** Its git folder (`.git`, or a worktree's folder inside the main one). */
  gitDir: string;
  /** Bytes in an object id: 20 (SHA-1) or 32 (SHA-256). */
  hashBytes: number;
}

/** The repository `cwd` is in, in one git call, or `undefined` outside a work tree (or without git). */
export async function gitRepoOf(cwd: string): Promise<GitRepo | undefined> {
  const result = await git(['rev-parse', '--show-toplevel', '--absolute-git-dir', '--show-object-format'], cwd);
  const [toplevel, gitDir, format] = result.stdout.split('\n');
  if (!result.ok || toplevel === undefined || toplevel.length === 0 || gitDir === undefined || gitDir.length === 0) return undefined;
  return { toplevel, gitDir, hashBytes: format === 'sha256' ? 32 : 20 };
}

/**
 * Asks git, in one call, which of `paths` (project-relative) it holds a copy of: in the index or
 * in HEAD (`git cat-file --batch-check`, the paths on its standard input, so their number is not
 * bounded by a command line). Outside a repository git holds no copy of anything, so every path
 * is `notInGit`. A name with a newline cannot be asked line by line: it comes back `unchecked`.
 */
export async function askGit(projectRoot: string, paths: readonly string[]): Promise<GitAnswer> {
  if (paths.length === 0) return { notInGit: new Set(), unchecked: new Set() };
  const inside = await git(['rev-parse', '--is-inside-work-tree'], projectRoot);
  if (!inside.ok || inside.stdout.trim() !== 'true') {
    if (/not a git repository/i.test(inside.stderr)) return { notInGit: new Set(paths), unchecked: new Set() };
    return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  }
  const askable = paths.filter((p) => !p.includes('\n'));
  const unaskable = new Set(paths.filter((p) => p.includes('\n')));
  const why = unaskable.size > 0 ? { uncheckedWhy: `${unaskable.size === 1 ? 'its name holds' : 'their names hold'} a newline` } : {};
  // `:path` is the index entry, `HEAD:path` the committed file; each answer is one line, in order.
  const input = askable.map((p) => `:${p}\nHEAD:${p}\n`).join('');
  const result = await gitWithInput(['cat-file', '--batch-check'], projectRoot, input);
  const answers = result.stdout.split('\n');
  if (!result.ok || answers.length < askable.length * 2) return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  const held = (line: string | undefined): boolean => line !== undefined && !/ (missing|ambiguous)$/.test(line);
  const notInGit = new Set(askable.filter((_, i) => !held(answers[2 * i]) && !held(answers[2 * i + 1])));
  return { notInGit, unchecked: unaskable, ...why };
}

/** Runs git with `input` on its standard input. */
function gitWithInput(args: string[], cwd: string, input: string, timeoutMs = 10_000): Promise<GitResult> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', () => undefined);
    child.stdin.on('error', () => undefined);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, stdout, stderr });
    });
    child.stdin.end(input);
  });
}
