import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CheckpointError } from '../core/errors.js';

// Which checkpoints on a remote store belong to a project, on any machine and at any path: a
// project's absolute root differs between two clones, so the remote names a workspace by what
// every clone shares — the repository's first commit (the oldest root commit of HEAD's history)
// and the project's folder relative to the repository's top. Two unrelated repositories never
// share a first commit; two folders of one repository are two workspaces. A project outside git,
// or in a repository with no commit yet, has nothing that survives a copy: it is refused.

const run = promisify(execFile);

/** A project's remote workspace: the id keys are stored under, and what it was made from. */
export interface WorkspaceIdentity {
  /** 24 hex digits: SHA-256 of the first commit and the relative root. */
  id: string;
  firstCommit: string;
  /** The project's folder inside its repository, `/`-separated; `''` at the top. */
  relativeRoot: string;
}

/** The identity made of a first commit and a relative root. Pure. */
export function workspaceIdentityOf(firstCommit: string, relativeRoot: string): WorkspaceIdentity {
  const id = createHash('sha256').update(`turnback-workspace\0${firstCommit}\0${relativeRoot}`).digest('hex').slice(0, 24);
  return { id, firstCommit, relativeRoot };
}

/**
 * The remote workspace of the project at `projectRoot` (read-only: git is only asked).
 * @throws CheckpointError `INVALID_CONFIG` outside a git repository or before its first commit.
 */
export async function workspaceIdentity(projectRoot: string): Promise<WorkspaceIdentity> {
  const git = async (...args: string[]): Promise<string> => (await run('git', args, { cwd: projectRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
  let top: string;
  let roots: string[];
  try {
    top = await git('rev-parse', '--show-toplevel');
    roots = (await git('rev-list', '--max-parents=0', 'HEAD')).split('\n').filter((line) => /^[0-9a-f]{40,64}$/.test(line));
  } catch (error) {
    throw new CheckpointError('INVALID_CONFIG', 'a remote store needs the project in a git repository with at least one commit: its first commit names the project on every machine', { path: projectRoot, cause: error });
  }
  if (roots.length === 0) throw new CheckpointError('INVALID_CONFIG', 'a remote store needs the project in a git repository with at least one commit', { path: projectRoot });
  // rev-list lists newest first: the last root is the oldest (a history with merged-in roots has several).
  const firstCommit = roots[roots.length - 1] as string;
  const relative = path.relative(top, projectRoot).split(path.sep).join('/');
  if (relative.startsWith('..')) throw new CheckpointError('INVALID_CONFIG', 'the project is not inside its git repository', { path: projectRoot });
  return workspaceIdentityOf(firstCommit, relative);
}
