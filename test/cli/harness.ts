import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempFolder } from '../helpers/temp.js';

/** The built command (TURNBACK_CLI: another bundle of src/cli/main.ts, a private build). */
export const CLI: string =
  process.env.TURNBACK_CLI !== undefined && process.env.TURNBACK_CLI !== '' ? path.resolve(process.env.TURNBACK_CLI) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

/** What one `turnback` process did. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A temporary git repository with its own HOME, and the built `turnback` run in it as a person would. */
export interface CliRepo {
  proj: string;
  home: string;
  env: NodeJS.ProcessEnv;
  /** Runs `turnback ARGS` in the repository. */
  tb(args: string[], options?: { input?: string; cwd?: string }): CliResult;
  /** Runs `git ARGS` in the repository. */
  git(...args: string[]): string;
  /** The id of the newest checkpoint `turnback list --json` shows. */
  newestId(): string;
}

/** A new repository with `files` committed (mode 0644 unless given), HOME and XDG folders outside it. */
export async function cliRepo(files: Record<string, string | { text: string; mode: number }>): Promise<CliRepo> {
  const root = await tempFolder('turnback-cli-');
  const home = path.join(root, 'home');
  const proj = path.join(root, 'proj');
  await mkdir(home);
  await mkdir(proj);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', LANG: 'C' };
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
  return { proj, home, env, tb, git, newestId };
}
