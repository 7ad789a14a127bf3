import { realpathSync, statSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import { defaultStoreDir, openObserver, openStore as openStoreView, recoverInterruptedRestores } from '../admin.js';
import { renderRecoveredRestore } from '../report/interrupted.js';
import { shownPath, shownText } from '../report/escape.js';
import { CheckpointError, type CheckpointObserver, type StoreView } from '../index.js';
import { loadCliConfig, type CliConfig } from './config-file.js';
import { gitRepoOf, type GitRepo } from './git.js';
import type { Invocation } from './invocation.js';

/** Options every command accepts. */
export interface GlobalOptions {
  project?: string;
  store?: string;
  json?: boolean;
  /** Every row of every list. */
  all?: boolean;
  /** Rows of each list before the rest folds (`-n N`). */
  rows?: number;
}

/** Rows a list prints before the rest folds into one line. */
export const DEFAULT_ROWS = 10;

/** The row limit `--all` / `-n N` ask for. */
export function rowLimit(options: Pick<GlobalOptions, 'all' | 'rows'>): number {
  return options.all === true ? Number.POSITIVE_INFINITY : (options.rows ?? DEFAULT_ROWS);
}

/** Where a command works: the project, its config, and its store folder. */
export interface CliContext {
  /** Canonical project root. */
  projectRoot: string;
  config: CliConfig;
  storeDir: string;
  /** Rows each list prints before folding (`--all`, `-n N`). */
  maxRows: number;
  /** Where the store folder came from. */
  storeFrom: '--store' | 'TURNBACK_DIR' | 'config' | 'default';
  /** Why this project takes no pictures (home folder, `/`), when it does not. */
  refusal?: string;
  /** The command's folder, output, signals and caches. */
  invocation: Invocation;
}

/**
 * The project root: `--project DIR`, else the git toplevel of the current folder, else the
 * nearest folder above that is already a project (a `turnback.toml`, or an existing store), else
 * the current folder. Canonical (symlinks resolved).
 *
 * @throws CheckpointError `INVALID_ARGUMENT` when `--project` does not name a folder.
 */
export async function resolveProjectRoot(project: string | undefined, cwd: string, env: NodeJS.ProcessEnv = process.env, repos?: Invocation['repos']): Promise<string> {
  if (project !== undefined) {
    const absolute = path.resolve(cwd, project);
    try {
      if (!(await stat(absolute)).isDirectory()) throw new Error('not a folder');
      return await realpath(absolute);
    } catch {
      throw new CheckpointError('INVALID_ARGUMENT', `--project is not a folder: ${project}`, { path: project });
    }
  }
  const repo = await gitRepoOf(cwd);
  if (repo !== undefined) {
    const top = await realpath(repo.toplevel);
    repos?.set(top, Promise.resolve(repo));
    return top;
  }
  const here = await realpath(cwd);
  return (await enclosingProject(here, env)) ?? here;
}

/** The git repository of the context's project (asked once per command), or `undefined`. */
export function gitRepoFor(context: CliContext): Promise<GitRepo | undefined> {
  const { repos } = context.invocation;
  let repo = repos.get(context.projectRoot);
  if (repo === undefined) {
    repo = gitRepoOf(context.projectRoot);
    repos.set(context.projectRoot, repo);
  }
  return repo;
}

/**
 * Outside git, the nearest folder above `dir` that is already a project — it holds a
 * `turnback.toml`, or its store exists — so a subfolder shares its project's store instead of
 * starting one of its own. The walk stops below the home folder and the file-system root, which
 * are never projects.
 */
async function enclosingProject(dir: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  let home = homeFolder(env);
  try {
    home = realpathSync(home);
  } catch {
    // A home folder that does not exist stops no walk.
  }
  for (let at = dir; ; ) {
    const up = path.dirname(at);
    if (at === home || up === at) return undefined;
    if (await exists(path.join(at, 'turnback.toml'), 'file') || (await exists(defaultStoreDir(at, env), 'folder'))) return at;
    at = up;
  }
}

async function exists(target: string, kind: 'file' | 'folder'): Promise<boolean> {
  try {
    const stats = await stat(target);
    return kind === 'file' ? stats.isFile() : stats.isDirectory();
  } catch {
    return false;
  }
}

/**
 * Why a project root takes no pictures, in the words of seed 001, or `undefined`. The same rule
 * as the library's workspace refusal (home folder, file-system root), kept here because the CLI
 * imports only the public API.
 */
export function refusalOf(projectRoot: string, home: string = homeFolder()): string | undefined {
  if (path.parse(projectRoot).root === projectRoot) return `the project is the root folder (${projectRoot})`;
  let canonicalHome = home;
  try {
    canonicalHome = realpathSync(home);
  } catch {
    // A home folder that does not exist cannot be the project.
  }
  if (projectRoot === canonicalHome) return 'the project is your home folder';
  try {
    if (!statSync(projectRoot).isDirectory()) return `the project is not a folder: ${projectRoot}`;
  } catch {
    return `the project is not a folder: ${projectRoot}`;
  }
  return undefined;
}

/** Resolves the project, loads the config, and picks the store folder (without opening it). */
export async function loadContext(options: GlobalOptions, invocation: Invocation, env: NodeJS.ProcessEnv = process.env): Promise<CliContext> {
  const projectRoot = await resolveProjectRoot(options.project, invocation.cwd, env, invocation.repos);
  const config = await loadCliConfig(projectRoot, env);
  let storeDir: string;
  let storeFrom: CliContext['storeFrom'];
  if (options.store !== undefined) {
    storeDir = path.resolve(invocation.cwd, options.store);
    storeFrom = '--store';
  } else if (env.TURNBACK_DIR !== undefined && env.TURNBACK_DIR !== '') {
    storeDir = path.resolve(invocation.cwd, env.TURNBACK_DIR);
    storeFrom = 'TURNBACK_DIR';
  } else if (config.resolved.dir !== undefined) {
    storeDir = config.resolved.dir;
    storeFrom = 'config';
  } else {
    storeDir = defaultStoreDir(projectRoot, env);
    storeFrom = 'default';
  }
  const refusal = refusalOf(projectRoot, homeFolder(env));
  return { projectRoot, config, storeDir, storeFrom, maxRows: rowLimit(options), invocation, ...(refusal !== undefined ? { refusal } : {}) };
}

/**
 * Opens the store (creating it when missing); the command's end closes it. A restore a killed
 * process left half done is rolled back first, and its stage and displaced files removed, and
 * the command says so on stderr: the first command after the kill, whichever it is, does it once.
 */
export async function openStore(context: CliContext): Promise<StoreView> {
  const store = await openStoreView(context.storeDir, { projectRoot: context.projectRoot });
  context.invocation.opened.push(store);
  const { recovered, problem } = await recoverInterruptedRestores(store);
  const lines = recovered.flatMap((restore) => renderRecoveredRestore(restore));
  if (problem !== undefined) lines.push(`turnback: a killed restore could not be put right yet: ${shownText(problem)}`);
  for (const line of lines) context.invocation.stderr.write(`${line}\n`);
  return store;
}

/**
 * Closes every store the command opened: its presence file goes (else each command left one
 * behind until a prune), and its pack is sealed. Never rejects: the command's outcome stands.
 */
export async function closeOpenedStores(invocation: Invocation): Promise<void> {
  for (const store of invocation.opened.splice(0)) await store.close().catch(() => undefined);
}

/**
 * Why the store folder cannot become a store, read-only (nothing is created): it exists, is not
 * empty and holds no `STORE.json` — a folder `TURNBACK_DIR`, `--store` or the config points at by
 * mistake. `undefined` when it is a store, empty, or not there yet.
 */
export async function storeFolderProblem(context: CliContext): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(context.storeDir);
  } catch {
    return undefined;
  }
  if (names.length === 0 || names.includes('STORE.json')) return undefined;
  const from = context.storeFrom === 'TURNBACK_DIR' ? 'TURNBACK_DIR' : context.storeFrom === 'config' ? 'the config\'s dir' : context.storeFrom === '--store' ? '--store' : 'the default store folder';
  return `${shownPath(context.storeDir)} (${from}) is not a turnback store and not empty`;
}

/** True when the store folder exists, so read-only commands can avoid creating one. */
export async function storeExists(context: CliContext): Promise<boolean> {
  try {
    return (await stat(context.storeDir)).isDirectory();
  } catch {
    return false;
  }
}

/** An observer over `store` with the config's limits, under `sessionId` (default: one per command). */
export function observerFor(context: CliContext, store: StoreView, sessionId?: string): CheckpointObserver {
  // One session per command: two concurrent runs must never share a call baseline. Its calls
  // follow the life of the process the person started, which a server is not.
  const { pid } = context.invocation;
  return openObserver(store, { config: context.config.resolved, sessionId: sessionId ?? `cli-${pid}-${Date.now().toString(36)}-${(sessionCount++).toString(36)}`, ownerPid: pid });
}

/** Told apart two sessions of one client pid within a millisecond (a served command's pid is the client's). */
let sessionCount = 0;
