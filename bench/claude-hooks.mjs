// The real Claude Code binary (test/agents, pinned) with turnback's hooks on and off (issue #28):
// one turn of five Bash calls, played by the harness's scripted model server, runs alternating
// hooks on / hooks off, median of five each. Per tool call: the time between the model server's
// requests of the turn (a tool call's round: Claude's PreToolUse hook, the command, its PostToolUse
// hook, the next request), so the turn's own command hooks (prompt, stop, session end) are not
// counted in it; the whole run is given too. On a small project and on a generated 9,000-file tree.
// Usage: node bench/claude-hooks.mjs [--runs=5] [--files=9000 (0: the small project alone)] [--command-hooks]
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { fmtMs, git, median, TempRoot } from './lib.mjs';
import { generateTree } from './tree.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const args = Object.fromEntries(process.argv.slice(2).map((arg) => { const [, name, value] = /^--([\w-]+)(?:=(.*))?$/.exec(arg) ?? [arg, arg]; return [name, value ?? true]; }));
const runs = Number(args.runs ?? 5);
const bigFiles = Number(args.files ?? 9000);
const claude = path.join(ROOT, 'test', 'agents', 'node_modules', '.bin', 'claude');
const cli = path.join(process.env.TURNBACK_DIST ?? path.join(ROOT, 'dist'), 'cli', 'turnback.cjs');
if (!fs.existsSync(claude)) {
  console.log('claude-hooks: Claude Code is not installed in test/agents (npm install --prefix test/agents): nothing measured');
  process.exit(0);
}

const temp = new TempRoot();
// The harness's model server, bundled for plain Node.
const serverModule = temp.path('model-server.mjs');
await build({ entryPoints: [path.join(ROOT, 'test', 'agents', 'model-server.ts')], bundle: true, platform: 'node', format: 'esm', outfile: serverModule, logLevel: 'warning' });
const { startModelServer } = await import(pathToFileURL(serverModule).href);

const CALLS = 5;
const script = { turns: [[...Array.from({ length: CALLS }, (_, i) => ({ tool: 'Bash', input: { command: `echo ${i} >> bench-log.txt`, description: `append ${i}` } })), { text: 'done' }]] };

/** A committed project (`files` generated files, else seven small ones) with its own HOME, turnback's hooks installed. */
function project(name, files) {
  const proj = temp.path(`${name}-proj`);
  fs.mkdirSync(proj, { recursive: true });
  if (files > 0) generateTree(proj, { files, seed: 28, tiny: true });
  else for (let i = 0; i < 7; i++) fs.writeFileSync(path.join(proj, `file${i}.txt`), `${i}\n`);
  git(['init', '-q'], { cwd: proj });
  git(['add', '-A'], { cwd: proj });
  git(['commit', '-qm', 'tree'], { cwd: proj });
  const home = temp.path(`${name}-home`);
  fs.mkdirSync(home, { recursive: true });
  const bin = temp.path(`${name}-bin`);
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(cli, path.join(bin, 'turnback'));
  const env = { PATH: `${bin}${path.delimiter}${process.env.PATH}`, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache'), NO_COLOR: '1', LANG: 'C.UTF-8', TERM: 'dumb', CI: '1' };
  const tb = (...argv) => spawnSync(process.execPath, [cli, ...argv], { cwd: proj, env, encoding: 'utf8' });
  const installed = tb('hooks', 'install', 'claude', ...(args['command-hooks'] === true ? ['--command-hooks'] : []));
  if (installed.status !== 0) throw new Error(`hooks install: ${installed.stderr}`);
  // The first picture of the tree is taken once, before the timed runs, as a day's first turn would.
  tb('run', '--', 'true');
  return { proj, env, tb, settings: path.join(proj, '.claude'), away: path.join(temp.root, `${name}-claude-away`) };
}

/** One `claude -p` turn: the run's wall time and each tool call's round, from the model server's clock. */
async function turn(where, hooksOn) {
  // Hooks off: the project's .claude folder is moved out of the way for the run.
  if (!hooksOn) fs.renameSync(where.settings, where.away);
  const server = await startModelServer('anthropic', script);
  try {
    const env = { ...where.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-turnback-bench', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', IS_SANDBOX: '1' };
    const start = performance.now();
    const child = spawn(claude, ['-p', 'TB-TURN-1 append five lines', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'], { cwd: where.proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    const wall = performance.now() - start;
    if (code !== 0) throw new Error(`claude exited ${code}: ${output.slice(-2000)}`);
    const steps = [];
    for (let i = 0; i <= CALLS; i++) steps.push(server.requests.find((r) => r.answered.startsWith(`turn 1 step ${i}:`))?.receivedAt);
    if (steps.some((t) => t === undefined)) throw new Error(`the turn did not play every step: ${server.requests.map((r) => r.answered).join(', ')}`);
    const rounds = steps.slice(1).map((t, i) => t - steps[i]);
    return { wall, rounds };
  } finally {
    await server.close();
    if (!hooksOn) fs.renameSync(where.away, where.settings);
  }
}

const results = [];
// `--files=0`: the small project alone.
for (const [name, files] of [['small', 0], ...(bigFiles > 0 ? [[`${bigFiles}-file`, bigFiles]] : [])]) {
  const where = project(name, files);
  const on = { wall: [], rounds: [] };
  const off = { wall: [], rounds: [] };
  // A warm-up pair: the server, the caches and Claude's own first start are not timed.
  await turn(where, true);
  await turn(where, false);
  for (let i = 0; i < runs; i++) {
    for (const [hooksOn, into] of [
      [true, on],
      [false, off],
    ]) {
      const one = await turn(where, hooksOn);
      into.wall.push(one.wall);
      into.rounds.push(median(one.rounds));
    }
  }
  const log = spawnSync('tail', ['-n', '3', ...fs.readdirSync(path.join(where.env.XDG_DATA_HOME, 'turnback')).filter((f) => f.endsWith('.hooks.log')).map((f) => path.join(where.env.XDG_DATA_HOME, 'turnback', f))], { encoding: 'utf8' }).stdout;
  where.tb('server', 'stop');
  results.push({ name, on, off, log });
}
console.log(`claude-hooks: Claude Code, one turn of ${CALLS} Bash calls, ${runs} runs each side alternating, medians${args['command-hooks'] === true ? ' (command hooks)' : ' (HTTP hooks for the tool events)'}`);
console.log('| project | a tool call\'s round, hooks off | hooks on | added per tool call | the whole run, off | on |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const { name, on, off } of results) {
  const added = median(on.rounds) - median(off.rounds);
  console.log(`| ${name} | ${fmtMs(median(off.rounds))} | ${fmtMs(median(on.rounds))} | ${fmtMs(added)} | ${fmtMs(median(off.wall))} | ${fmtMs(median(on.wall))} |`);
}
for (const { name, log } of results) console.log(`\n${name}: the hook log's last lines\n${log}`);
temp.remove();
