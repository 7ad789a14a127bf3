import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempFolder } from '../helpers/temp.js';

/**
 * The built command as a person starts it: the small client, which hands most commands to the
 * per-user server and runs the rest in its own process (TURNBACK_CLI: another build's client).
 */
export const CLI: string =
  process.env.TURNBACK_CLI !== undefined && process.env.TURNBACK_CLI !== '' ? path.resolve(process.env.TURNBACK_CLI) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'turnback.cjs');

/**
 * Seconds a test's server stays after its last command. Every repository here has its own socket
 * folder (XDG_RUNTIME_DIR), so its own server — one test's `server stop`, a socket it blocks or a
 * server it freezes never reaches another test —, and they must not pile up over a whole suite. A
 * test's first command finds no server, runs in its own process and starts one; the later ones
 * are served.
 */
export const TEST_SERVER_IDLE_SECONDS = '5';

/** What one `turnback` process did. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A temporary git repository with its own HOME and socket folder, and the built `turnback` run in it as a person would. */
export interface CliRepo {
  proj: string;
  home: string;
  /** Its XDG_RUNTIME_DIR: where its command server's socket is (`<runtime>/turnback/`). */
  runtime: string;
  env: NodeJS.ProcessEnv;
  /** Runs `turnback ARGS` in the repository. */
  tb(args: string[], options?: { input?: string; cwd?: string }): CliResult;
  /** Runs `git ARGS` in the repository. */
  git(...args: string[]): string;
  /** The id of the newest checkpoint `turnback list --json` shows. */
  newestId(): string;
}

/** A folder `bin` in `root` holding `turnback`, a link to this build's command file, as `npm install -g` makes. */
export async function turnbackBin(root: string): Promise<string> {
  const { symlink } = await import('node:fs/promises');
  const bin = path.join(root, 'bin');
  await mkdir(bin, { recursive: true });
  await symlink(CLI, path.join(bin, 'turnback'));
  return bin;
}

/** A new repository with `files` committed (mode 0644 unless given), HOME, XDG folders and a socket folder outside it. */
export async function cliRepo(files: Record<string, string | { text: string; mode: number }>): Promise<CliRepo> {
  const root = await tempFolder('turnback-cli-');
  const home = path.join(root, 'home');
  const proj = path.join(root, 'proj');
  const runtime = path.join(root, 'run');
  await mkdir(home);
  await mkdir(proj);
  await mkdir(runtime, { mode: 0o700 });
  // `turnback` on PATH is this build, as a user's global install is (a link to the command file):
  // the hooks a project install writes name `turnback`.
  const bin = await turnbackBin(root);
  const env: NodeJS.ProcessEnv = { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1', LANG: 'C', TURNBACK_SERVER_IDLE_SECONDS: TEST_SERVER_IDLE_SECONDS };
  const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: proj, env, encoding: 'utf8' });
  const { writeFile } = await import('node:fs/promises');
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(proj, ...name.split('/'));
    await mkdir(path.dirname(file), { recursive: true });
    const { text, mode } = typeof content === 'string' ? { text: content, mode: 0o644 } : content;
    await writeFile(file, text, { mode });
    execFileSync('chmod', [mode.toString(8), file]);
  }
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'init');
  const tb = (args: string[], options: { input?: string; cwd?: string } = {}): CliResult => {
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: options.cwd ?? proj, env, input: options.input ?? '', encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const newestId = (): string => {
    const listed = JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] };
    const newest = listed.checkpoints[0];
    if (newest === undefined) throw new Error('no checkpoint listed');
    return newest.id;
  };
  return { proj, home, runtime, env, tb, git, newestId };
}

/** Starts `turnback run -- CMD` in its own process group; its stdout (shared with CMD) is a pipe. */
export function startRun(repo: CliRepo, command: string[]): { child: ChildProcess; lines: string[]; closed: Promise<unknown>; line(text: string): Promise<void> } {
  const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', ...command], { cwd: repo.proj, env: repo.env, stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  const lines: string[] = [];
  const waiting: { text: string; resolve: () => void }[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    lines.push(...chunk.split('\n').filter((l) => l.length > 0));
    for (const w of waiting.splice(0)) if (lines.includes(w.text)) w.resolve();
      else waiting.push(w);
  });
  // The pipe ends only when every process holding it — turnback and the whole command — is gone.
  const closed = once(child.stdout as NodeJS.ReadableStream, 'end');
  const line = (text: string): Promise<void> => (lines.includes(text) ? Promise.resolve() : new Promise((resolve) => waiting.push({ text, resolve })));
  return { child, lines, closed, line };
}

/** SIGKILLs a started run's whole process group (turnback and its command). */
export function killGroup(child: ChildProcess): void {
  try {
    process.kill(-(child.pid as number), 'SIGKILL');
  } catch {
    // Already gone.
  }
}
