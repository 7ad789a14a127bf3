import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach } from 'vitest';
import { tempFolder } from '../helpers/temp.js';

// What the end-to-end files of the command (e2e, e2e-undo, e2e-signals, e2e-terminal) share: a
// fresh git project with its own HOME for each test, and the built command run in its own
// process against it. The folders and the environment are live bindings, set before each test by
// the hook useE2eProject registers.

/** The built command (TURNBACK_CLI runs these tests against another bundle of src/cli/main.ts, a private build, without touching dist/). */
export const CLI: string = process.env.TURNBACK_CLI !== undefined && process.env.TURNBACK_CLI !== '' ? path.resolve(process.env.TURNBACK_CLI) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

/** The running test's temp folder, holding `home/` and `proj/`. */
export let root: string;
/** The running test's HOME (its data and config folders inside). */
export let home: string;
/** The running test's project: a git repository with one commit and one uncommitted file. */
export let proj: string;
/** The environment every command of the running test gets. */
export let env: NodeJS.ProcessEnv;

/** What one command did. */
export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `turnback ARGS…` in the project (or `cwd`), with `input` on stdin, and waits for it. */
export function tb(args: string[], options: { input?: string; cwd?: string } = {}): Result {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: options.cwd ?? proj, env, input: options.input ?? '', encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A command's stdout, parsed as JSON. */
export function json<T = Record<string, unknown>>(result: Result): T {
  return JSON.parse(result.stdout) as T;
}

/** `turnback run --report FILE ARGS…`: the command's result, and the JSON report read from FILE. */
export async function runReport<T = Record<string, unknown>>(args: string[]): Promise<{ result: Result; report: T }> {
  const file = path.join(root, `report-${Math.random().toString(16).slice(2)}.json`);
  const result = tb(['run', '--report', file, ...args]);
  return { result, report: JSON.parse(await readFile(file, 'utf8')) as T };
}

/** Runs git in the project, quietly. */
export function git(...args: string[]): void {
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: proj, env, stdio: 'ignore' });
}

/** Resolves once `text` has come on `stream` (a run's command says it has started). */
export function lineOn(stream: NodeJS.ReadableStream | null, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    stream?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolve();
    });
  });
}

/** Registers the hook that makes the running test's project, HOME and environment afresh. */
export function useE2eProject(): void {
  beforeEach(async () => {
    root = await tempFolder('turnback-e2e-');
    home = path.join(root, 'home');
    proj = path.join(root, 'proj');
    await mkdir(home);
    await mkdir(path.join(proj, 'src'), { recursive: true });
    await mkdir(path.join(proj, 'docs', 'notes'), { recursive: true });
    env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', LANG: 'C' };
    await writeFile(path.join(proj, 'src', 'parser.rs'), 'fn parse() {\n    one();\n    two();\n}\n');
    await writeFile(path.join(proj, 'Cargo.toml'), '[package]\nname = "p"\n');
    for (let i = 0; i < 3; i++) await writeFile(path.join(proj, 'docs', 'notes', `n${i}.md`), `note ${i}\n`);
    execFileSync('git', ['init', '-q'], { cwd: proj, env });
    git('add', '-A');
    git('commit', '-qm', 'init');
    await writeFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'not committed\n');
  });
}

/** A command that changes a file, removes a folder of notes (one of them uncommitted) and creates a file. */
export const EDIT = ['sh', '-c', "printf 'fn parse() {\\n    one();\\n    TWO();\\n}\\n' > src/parser.rs; rm -rf docs; echo new > tidy.sh"];
