import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, onTestFailed, onTestFinished } from 'vitest';
import { CLI, TEST_SERVER_IDLE_SECONDS, turnbackBin, type CliResult } from '../cli/harness.js';
import { tempFolder } from '../helpers/temp.js';
import { startModelServer, type ModelServer, type Script, type Step, type WireFormat } from './model-server.js';

// The real agents, driven as a person runs them: each agent binary pinned in
// test/agents/package.json (installed by `npm install --prefix test/agents --no-save`), run non-interactively
// in a temporary HOME and project, after `turnback hooks install AGENT` of this build, against a
// model server of our own (model-server.ts) that plays a scripted session from fixtures/.
// Without the agents installed the tests are skipped (installed.test.ts says which, in one
// line); TURNBACK_TEST_AGENTS=required (.ci/run) makes a missing agent a failure.

const here = path.dirname(fileURLToPath(import.meta.url));

/** The agents of the harness, by turnback's name for them. */
export type HarnessAgent = 'claude' | 'qwen' | 'gemini' | 'codex' | 'copilot';

/** Each agent's npm package and command, as test/agents/package.json pins them. */
export const AGENT_BINARIES: Readonly<Record<HarnessAgent, { pkg: string; bin: string }>> = {
  claude: { pkg: '@anthropic-ai/claude-code', bin: 'claude' },
  qwen: { pkg: '@qwen-code/qwen-code', bin: 'qwen' },
  gemini: { pkg: '@google/gemini-cli', bin: 'gemini' },
  codex: { pkg: '@openai/codex', bin: 'codex' },
  copilot: { pkg: '@github/copilot', bin: 'copilot' },
};

/** The agent's command in test/agents/node_modules/.bin. */
export function agentBin(agent: HarnessAgent): string {
  return path.join(here, 'node_modules', '.bin', AGENT_BINARIES[agent].bin);
}

/** The version test/agents/package.json pins. */
export async function pinnedVersion(agent: HarnessAgent): Promise<string> {
  const pkg = JSON.parse(await readFile(path.join(here, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return pkg.dependencies[AGENT_BINARIES[agent].pkg] as string;
}

/** Why `agent` cannot run here, or `undefined` when it can. */
export function missingReason(agent: HarnessAgent): string | undefined {
  const { pkg } = AGENT_BINARIES[agent];
  if (!existsSync(path.join(here, 'node_modules', ...pkg.split('/'), 'package.json'))) return 'not installed';
  if (!existsSync(agentBin(agent))) return `${pkg} has no ${AGENT_BINARIES[agent].bin} command`;
  return undefined;
}

/** True when a missing agent must fail the run (`TURNBACK_TEST_AGENTS=required`, as `.ci/run` sets). */
export const AGENTS_REQUIRED: boolean = process.env.TURNBACK_TEST_AGENTS === 'required';

/** Whether the tests of `agent` run: installed, or required (then a missing agent fails them). */
export function agentRuns(agent: HarnessAgent): boolean {
  return AGENTS_REQUIRED || missingReason(agent) === undefined;
}

/** A temporary HOME and git project for one agent, and `turnback` of this build run there. */
export interface AgentProject {
  root: string;
  home: string;
  proj: string;
  /** The environment turnback and the agent share: HOME, XDG folders (a socket folder of its own), PATH; nothing of the test runner's. */
  env: Record<string, string>;
  tb(args: string[]): CliResult;
}

/** The project every agent starts from: a file to edit, one the shell edits (mode 0755), a folder the shell removes. */
export const START_FILES: Readonly<Record<string, { text: string; mode: number }>> = {
  'existing.txt': { text: 'old line\nkept line\n', mode: 0o644 },
  'other.txt': { text: 'alpha\nbeta\n', mode: 0o755 },
  'docs/a.md': { text: '# a\n', mode: 0o644 },
  'docs/sub/b.md': { text: '# b\n', mode: 0o600 },
  'src/keep.ts': { text: 'export {};\n', mode: 0o644 },
};

/** A new project with {@link START_FILES} committed, and a HOME beside it. */
export async function agentProject(agent: HarnessAgent): Promise<AgentProject> {
  const root = await tempFolder(`turnback-agent-${agent}-`);
  const home = path.join(root, 'home');
  const proj = path.join(root, 'proj');
  await mkdir(home);
  await mkdir(proj);
  // `turnback` on the agent's PATH is this build, as a user's global install would be: the project's
  // hook file names `turnback`, never this machine's paths.
  const bin = await turnbackBin(root);
  const env: Record<string, string> = {
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    XDG_DATA_HOME: path.join(home, 'data'),
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    // Its own socket folder, so its own command server: one per user would otherwise be shared by every test.
    XDG_RUNTIME_DIR: path.join(root, 'run'),
    TMPDIR: path.join(root, 'tmp'),
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    CI: '1',
    TURNBACK_SERVER_IDLE_SECONDS: TEST_SERVER_IDLE_SECONDS,
  };
  await mkdir(env.TMPDIR as string);
  await mkdir(env.XDG_RUNTIME_DIR as string, { mode: 0o700 });
  for (const [name, { text, mode }] of Object.entries(START_FILES)) {
    const file = path.join(proj, ...name.split('/'));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
    await chmod(file, mode);
  }
  const git = (...args: string[]): void => void execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: proj, env, stdio: 'ignore' });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'init');
  const tb = (args: string[]): CliResult => {
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: proj, env, input: '', encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  return { root, home, proj, env, tb };
}

/**
 * Every file, folder and link under `root` but `.git` and `skip` (project-relative folders): a
 * file as its mode and bytes, a folder as its mode, so an undo that leaves an empty folder, a
 * mode or a byte differs.
 */
export async function treePicture(root: string, skip: readonly string[] = []): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(dir: string, rel: string): Promise<void> {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (r === '.git' || skip.includes(r)) continue;
      const abs = path.join(dir, entry.name);
      const st = await lstat(abs);
      if (st.isSymbolicLink()) out[r] = `link ${await readlink(abs)}`;
      else if (st.isDirectory()) {
        out[`${r}/`] = `dir ${(st.mode & 0o7777).toString(8)}`;
        await walk(abs, r);
      } else out[r] = `file ${(st.mode & 0o7777).toString(8)} ${(await readFile(abs)).toString('base64')}`;
    }
  }
  await walk(root, '');
  return out;
}

/** `script` with `{{proj}}` replaced by the project's path, in every string of every step. */
export async function loadScript(fixture: string, proj: string): Promise<Script> {
  const text = await readFile(path.join(here, 'fixtures', fixture), 'utf8');
  const filled = JSON.parse(text, (_key, value: unknown) => (typeof value === 'string' ? value.replaceAll('{{proj}}', proj) : value)) as Script;
  return filled;
}

/** What one agent run printed. */
export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the agent once. The test's own timeout bounds it: the agent runs in a process group of
 * its own, and when the test ends — passed, failed or timed out — whatever of that group is still
 * running is killed, so no timer of ours waits and nothing outlives the test. A test that fails
 * while the agent still runs prints what it printed so far and what the model server was asked.
 */
export async function runAgent(agent: HarnessAgent, args: readonly string[], options: { cwd: string; env: Record<string, string>; server: ModelServer }): Promise<AgentRun> {
  const child = spawn(agentBin(agent), args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  let ended = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  onTestFailed(() => {
    if (!ended) console.error(`${agent} ${args.join(' ')} was still running when its test failed\n${describeRun({ code: null, stdout, stderr }, options.server)}`);
  });
  // The group, not the child alone: an agent's tools (a shell it left running) are in it too.
  onTestFinished(() => {
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // The whole group is gone already.
    }
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exit) => resolve(exit));
  });
  ended = true;
  return { code, stdout, stderr };
}

/** A run's output and the server's requests, for a failing assertion's message. */
export function describeRun(run: AgentRun, server: ModelServer): string {
  const asked = server.requests.map((r) => `  ${r.method} ${r.url} → ${r.answered}`).join('\n');
  return `exit ${String(run.code)}\n--- stdout\n${run.stdout.slice(-6000)}\n--- stderr\n${run.stderr.slice(-6000)}\n--- model server\n${asked}`;
}

/** What an agent prints when a hook went wrong, in any of the five. */
const HOOK_TROUBLE = /hook[^\n]{0,80}(error|fail|timed out|timeout|cancel)|Cannot find module|(error|fail)[^\n]{0,40}hook/i;

/** Asserts that the run ended well and printed no hook trouble. */
export function expectCleanRun(agent: HarnessAgent, run: AgentRun, server: ModelServer): void {
  expect(run.code, `${agent} failed\n${describeRun(run, server)}`).toBe(0);
  const trouble = `${run.stdout}\n${run.stderr}`.split('\n').filter((line) => HOOK_TROUBLE.test(line));
  expect(trouble, `${agent} printed hook trouble\n${describeRun(run, server)}`).toEqual([]);
}

/** One agent as the harness drives it. */
export interface AgentDriver {
  agent: HarnessAgent;
  format: WireFormat;
  /** The fixture of its scripted session (fixtures/NAME). */
  fixture: string;
  /** The project folder install writes into (kept out of the tree pictures; compared on its own for uninstall). */
  settingsFolder: string;
  /**
   * Whose tool-call ids the hooks carry: the model's (the id in the model's answer), or the
   * agent's own (Qwen Code makes one per call, `toolu_<ms>_<random>`, that neither the model nor
   * the person sees: generateToolUseId, packages/core/src/core/toolHookTriggers.ts).
   */
  callIds: 'model' | 'agent';
  /** Set-up before the first run (a config file in the temporary HOME, say). */
  prepare?(project: AgentProject, server: ModelServer): Promise<void>;
  /** The command line and environment of prompt `prompt`, the `turn`-th of the session. */
  command(project: AgentProject, server: ModelServer, prompt: string, turn: number): { args: string[]; env: Record<string, string> };
}

/** The tool call ids the server gave out, in order, and the shell step's. */
export function shellStepOf(script: Script): { turn: number; index: number } {
  for (const [t, steps] of script.turns.entries()) {
    const index = steps.findIndex((s: Step) => 'tool' in s && /rm -rf? docs/.test(JSON.stringify(s.input)));
    if (index >= 0) return { turn: t + 1, index };
  }
  throw new Error('the script has no shell step');
}

/** A checkpoint as `turnback list --json` shows it. */
export interface Listed {
  id: string;
  shortId: string;
  kind: string;
  label?: string;
  agent?: { name: string; session: string; turn: number; role: string; boundary: string };
}

export function listed(project: AgentProject): Listed[] {
  const result = project.tb(['list', '--json']);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { checkpoints: Listed[] }).checkpoints;
}

/** The hook log's lines (every event turnback's hook ran, and how it ended). */
export async function hookLogLines(project: AgentProject): Promise<{ ok: boolean; event: string; error?: string; action?: string }[]> {
  const folder = path.join(project.home, 'data', 'turnback');
  if (!existsSync(folder)) return [];
  const logs = (await readdir(folder)).filter((name) => name.endsWith('.hooks.log'));
  const lines: { ok: boolean; event: string; error?: string; action?: string }[] = [];
  for (const log of logs)
    for (const line of (await readFile(path.join(folder, log), 'utf8')).split('\n'))
      if (line.length > 0) lines.push(JSON.parse(line) as { ok: boolean; event: string; error?: string; action?: string });
  return lines;
}

/** A started session: the project, its server, and a way to send the next prompt. */
export interface AgentSession {
  project: AgentProject;
  server: ModelServer;
  script: Script;
  /** Sends prompt `TB-TURN-<turn> …` and asserts the run was clean. */
  prompt(turn: number, words: string): Promise<AgentRun>;
  close(): Promise<void>;
}

/** A project with turnback's hooks installed for the driver's agent, and its model server running. */
export async function startSession(driver: AgentDriver): Promise<AgentSession & { beforeInstall: Record<string, string> }> {
  const project = await agentProject(driver.agent);
  const beforeInstall = await treePicture(project.proj);
  const installed = project.tb(['hooks', 'install', driver.agent]);
  expect(installed.code, installed.stderr).toBe(0);
  // The project's committed hook file names `turnback`, never this machine's paths (issue #26). A
  // file of this machine alone (Claude Code's settings.local.json, where its HTTP hooks go, issue
  // #28) may name them, is readable by its owner alone, and is ignored by git.
  const written = Object.entries(await treePicture(project.proj)).filter(([name, entry]) => name.startsWith(`${driver.settingsFolder}/`) && entry.startsWith('file ') && !name.endsWith('/.gitignore'));
  expect(written.length).toBeGreaterThan(0);
  for (const [name, entry] of written) {
    const text = Buffer.from(entry.split(' ')[2] ?? '', 'base64').toString('utf8');
    expect(text, name).toContain(` hook ${driver.agent} `);
    if (name.endsWith('.local.json')) {
      expect(entry.split(' ')[1], name).toBe('600');
      execFileSync('git', ['check-ignore', '-q', name], { cwd: project.proj });
    } else {
      expect(text, name).toContain(`turnback hook ${driver.agent} `);
      expect(text, name).not.toContain('turnback.cjs');
    }
  }
  // Claude Code's tool events are HTTP hooks (issue #28): no command runs for them, so every tool
  // event in the hook log came through the server's listener.
  if (driver.agent === 'claude') {
    const local = JSON.parse(await readFile(path.join(project.proj, '.claude', 'settings.local.json'), 'utf8')) as { hooks: Record<string, { hooks: { type: string }[] }[]> };
    for (const event of ['PreToolUse', 'PostToolUse', 'PostToolUseFailure']) expect(local.hooks[event]?.flatMap((group) => group.hooks.map((hook) => hook.type))).toEqual(['http']);
  }
  const script = await loadScript(driver.fixture, project.proj);
  const server = await startModelServer(driver.format, script);
  await driver.prepare?.(project, server);
  return {
    project,
    server,
    script,
    beforeInstall,
    async prompt(turn, words) {
      const { args, env } = driver.command(project, server, `TB-TURN-${turn} ${words}`, turn);
      const run = await runAgent(driver.agent, args, { cwd: project.proj, env: { ...project.env, ...env }, server });
      expectCleanRun(driver.agent, run, server);
      return run;
    },
    close: () => server.close(),
  };
}
