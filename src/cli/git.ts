import { execFile, spawn } from 'node:child_process';
import { lstatSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { GitAnswer } from '../report/turn-end-list.js';
import { gitDirFromFile, objectIdBytes } from '../fs/git-files.js';

interface GitResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

function git(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 10_000): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8', env: { ...env, GIT_OPTIONAL_LOCKS: '0' } }, (error, stdout, stderr) => {
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

/**
 * The repository `cwd` is in, or `undefined` outside a work tree. Found as git finds it — the
 * nearest folder above with a `.git` folder or `.git` file, not past a file-system boundary —
 * by reading the file system, which costs a fresh command no git process. Whatever that reading
 * cannot settle as git would (GIT_DIR and the other discovery variables, a `.git` owned by another
 * user, a start inside a `.git` folder) is asked of git itself, in one call.
 */
export async function gitRepoOf(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<GitRepo | undefined> {
  const discoveryVariables = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_CEILING_DIRECTORIES', 'GIT_DISCOVERY_ACROSS_FILESYSTEM', 'GIT_COMMON_DIR'];
  const found = discoveryVariables.some((name) => env[name] !== undefined) ? 'ask' : discoverRepo(cwd);
  return found === 'ask' ? askGitForRepo(cwd, env) : found;
}

/** The walk up from `cwd` that git's discovery makes; `'ask'` where only git can say. */
function discoverRepo(cwd: string): GitRepo | undefined | 'ask' {
  let dir: string;
  try {
    dir = realpathSync(cwd);
  } catch {
    return 'ask';
  }
  if (dir.split(path.sep).includes('.git')) return 'ask';
  const device = statSync(dir).dev;
  const uid = process.getuid?.();
  for (;;) {
    const dotGit = path.join(dir, '.git');
    const stats = lstatSync(dotGit, { throwIfNoEntry: false });
    if (stats !== undefined) {
      // git's safe.directory rule: a repository another user owns is git's to accept or refuse.
      if (uid !== undefined && stats.uid !== uid) return 'ask';
      const gitDir = stats.isDirectory() ? dotGit : stats.isFile() ? gitDirFromFile(dir, dotGit) : undefined;
      if (gitDir !== undefined && statSync(path.join(gitDir, 'HEAD'), { throwIfNoEntry: false })?.isFile() === true) {
        return { toplevel: dir, gitDir, hashBytes: objectIdBytes(gitDir) };
      }
    }
    const up = path.dirname(dir);
    // git stops at the file system's root and at a mount point.
    if (up === dir || statSync(up).dev !== device) return undefined;
    dir = up;
  }
}

/** What git itself says of `cwd`, in one call. */
async function askGitForRepo(cwd: string, env: NodeJS.ProcessEnv): Promise<GitRepo | undefined> {
  const result = await git(['rev-parse', '--show-toplevel', '--absolute-git-dir', '--show-object-format'], cwd, env);
  const [toplevel, gitDir, format] = result.stdout.split('\n');
  if (!result.ok || toplevel === undefined || toplevel.length === 0 || gitDir === undefined || gitDir.length === 0) return undefined;
  return { toplevel, gitDir, hashBytes: format === 'sha256' ? 32 : 20 };
}

/** Where else git may still hold a deleted file, besides the index and HEAD now. */
export interface GitHolders {
  /** Commits to look in too: HEAD before the turn, when the turn moved it (a checkout, a reset). */
  commits?: readonly string[];
  /** A path's blob id as the picture recorded it (`git:<id>`): a blob git still has is a copy. */
  blobs?: ReadonlyMap<string, string>;
}

/**
 * Asks git, in one call, which of `paths` (project-relative) it holds a copy of: in the index, in
 * HEAD, in any of `holders.commits` (HEAD before a turn that moved it), or as the blob the picture
 * recorded (`git cat-file --batch-check`, the questions on its standard input, so their number is
 * not bounded by a command line). Outside a repository git holds no copy of anything, so every
 * path is `notInGit`. A name with a newline cannot be asked line by line: it comes back `unchecked`.
 */
export async function askGit(projectRoot: string, paths: readonly string[], holders: GitHolders = {}): Promise<GitAnswer> {
  if (paths.length === 0) return { notInGit: new Set(), unchecked: new Set() };
  const inside = await git(['rev-parse', '--is-inside-work-tree'], projectRoot);
  if (!inside.ok || inside.stdout.trim() !== 'true') {
    if (/not a git repository/i.test(inside.stderr)) return { notInGit: new Set(paths), unchecked: new Set() };
    return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  }
  const askable = paths.filter((p) => !p.includes('\n'));
  const unaskable = new Set(paths.filter((p) => p.includes('\n')));
  const why = unaskable.size > 0 ? { uncheckedWhy: `${unaskable.size === 1 ? 'its name holds' : 'their names hold'} a newline` } : {};
  const commits = (holders.commits ?? []).filter((c) => /^[0-9a-f]{40,64}$/.test(c));
  // `:path` is the index entry, `REV:path` the committed file, a bare id the recorded blob; each
  // answer is one line, in order.
  const questions = askable.map((p) => {
    const blob = holders.blobs?.get(p);
    return [`:${p}`, `HEAD:${p}`, ...commits.map((c) => `${c}:${p}`), ...(blob !== undefined && /^[0-9a-f]{40,64}$/.test(blob) ? [blob] : [])];
  });
  const input = questions.map((q) => `${q.join('\n')}\n`).join('');
  const asked = questions.reduce((sum, q) => sum + q.length, 0);
  const result = await gitWithInput(['cat-file', '--batch-check'], projectRoot, input);
  const answers = result.stdout.split('\n');
  if (!result.ok || answers.length < asked) return { notInGit: new Set(), unchecked: new Set(paths), uncheckedWhy: 'git could not answer' };
  const held = (line: string | undefined): boolean => line !== undefined && !/ (missing|ambiguous)$/.test(line);
  const notInGit = new Set<string>();
  let at = 0;
  askable.forEach((p, i) => {
    const count = (questions[i] as string[]).length;
    if (!answers.slice(at, at + count).some(held)) notInGit.add(p);
    at += count;
  });
  return { notInGit, unchecked: unaskable, ...why };
}

/**
 * How many files the index holds differently from HEAD (`git diff-index --cached`: staged, as
 * `git status` counts them), or `undefined` when git cannot say. Read-only (no index refresh).
 */
export async function stagedAgainstHead(toplevel: string): Promise<number | undefined> {
  const result = await git(['diff-index', '--cached', '--name-only', '-z', 'HEAD', '--'], toplevel);
  if (!result.ok) return undefined;
  return result.stdout.split('\u0000').filter((name) => name.length > 0).length;
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
