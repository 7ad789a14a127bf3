// The real Claude Code binary (test/agents, pinned) with turnback's hooks on and off (issue #28):
// one turn of five Bash calls, played by the harness's scripted model server, runs alternating
// hooks on / hooks off, median of five each. Per tool call: the time between the model server's
// requests of the turn (a tool call's round: Claude's PreToolUse hook, the command, its PostToolUse
// hook, the next request), so the turn's own command hooks (prompt, stop, session end) are not
// counted in it; the whole run is given too. On a small project and on a generated 9,000-file tree,
// or on a committed tree of one's own (`--tree=DIR`, a git work tree used in place: prettier's
// clone; what the bench adds there — .claude/, bench-log.txt — is removed at the end).
// `--floor`: Claude's own cost of an HTTP hook pair, with hooks that answer at once (a tiny server
// of the bench's, no turnback), and whether Claude runs one event's hooks one after the other or
// at once (two hooks per event that each answer after 300 ms, against one such hook).
// Usage: node bench/claude-hooks.mjs [--runs=5] [--files=9000 (0: the small project alone)]
//   [--tree=DIR] [--no-small] [--max-walk-entries=N] [--settle[=SECONDS]] [--floor] [--command-hooks]
//   [--profile=DIR] (each project's command server CPU-profiled, bench/server-profile.cjs: its
//   `.cpuprofile` files written into DIR when it leaves)
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { committedHookProject, fmtMs, median, say, TempRoot } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const args = Object.fromEntries(process.argv.slice(2).map((arg) => { const [, name, value] = /^--([\w-]+)(?:=(.*))?$/.exec(arg) ?? [arg, arg]; return [name, value ?? true]; }));
const runs = Number(args.runs ?? 5);
const tree = typeof args.tree === 'string' ? path.resolve(args.tree) : undefined;
const bigFiles = tree !== undefined ? 0 : Number(args.files ?? 9000);
const floor = args.floor === true;
/** How long each hook of the floor's slow variants takes to answer. */
const SLOW_MS = 300;
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

/**
 * A committed project (`files` generated files, else seven small ones, or `tree` used in place)
 * with its own HOME and socket folder (so its own command server and watchman service),
 * turnback's hooks installed.
 */
function project(name, files, tree) {
  const proj = tree ?? temp.path(`${name}-proj`);
  if (tree === undefined) {
    committedHookProject(proj, files);
  } else if (fs.existsSync(path.join(proj, '.claude'))) throw new Error(`${proj} has a .claude folder of its own: the bench would replace it`);
  const home = temp.path(`${name}-home`);
  fs.mkdirSync(home, { recursive: true });
  const runtime = temp.path(`${name}-run`);
  fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const bin = temp.path(`${name}-bin`);
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(cli, path.join(bin, 'turnback'));
  const env = { PATH: `${bin}${path.delimiter}${process.env.PATH}`, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1', LANG: 'C.UTF-8', TERM: 'dumb', CI: '1' };
  if (typeof args.profile === 'string') {
    // NODE_OPTIONS reaches every turnback process; the preload profiles the server alone.
    fs.mkdirSync(path.resolve(args.profile), { recursive: true });
    Object.assign(env, { NODE_OPTIONS: `--require ${path.join(ROOT, 'bench', 'server-profile.cjs')}`, TURNBACK_BENCH_PROFILE_DIR: path.resolve(args.profile) });
  }
  if (args['max-walk-entries'] !== undefined) {
    // A tree past the walk's default entry limit (100,000): raised as bench/big-tree.mjs raises it.
    fs.mkdirSync(path.join(home, 'config', 'turnback'), { recursive: true });
    fs.writeFileSync(path.join(home, 'config', 'turnback', 'config.toml'), `[checkpoints]\nmax_walk_entries = ${Number(args['max-walk-entries'])}\n`);
  }
  const tb = (...argv) => spawnSync(process.execPath, [cli, ...argv], { cwd: proj, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const installed = tb('hooks', 'install', 'claude', ...(args['command-hooks'] === true ? ['--command-hooks'] : []));
  if (installed.status !== 0) throw new Error(`hooks install: ${installed.stderr}`);
  // The first picture of the tree is taken once, before the timed runs, as a day's first turn would.
  const first = performance.now();
  tb('run', '--', 'true');
  say(`${name}: first picture ${fmtMs(performance.now() - first)}`);
  if (args.settle !== undefined) {
    // `--settle[=SECONDS]`: the timed runs start once the server's idle copier has copied in every
    // blob the first picture left resting on git (`server status`'s idle copies), as a day's later
    // turns would find it; without it they share the cores with that copy.
    const limit = performance.now() + (args.settle === true ? 300 : Number(args.settle)) * 1000;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let copies;
    for (;;) {
      copies = JSON.parse(tb('server', '--json').stdout).servers.find((server) => server.thisBuild)?.idleCopies;
      const look = copies?.lastLook;
      if ((copies !== undefined && !copies.running && copies.pending === 0 && look !== null && look.left === look.lost) || performance.now() > limit) break;
      Atomics.wait(pause, 0, 0, 1000);
    }
    say(`${name}: idle copies after ${fmtMs(performance.now() - first)}: ${JSON.stringify(copies)}`);
  }
  const settings = path.join(proj, '.claude');
  const variants = { on: temp.path(`${name}-claude-on`), off: undefined };
  fs.renameSync(settings, variants.on);
  return { name, proj, env, tb, settings, variants, added: tree !== undefined };
}

/** The bench's own hook server for `--floor`: answers `{}` after `?delay=` ms, counting the hooks in flight at once. */
async function floorServer() {
  let inFlight = 0;
  let most = 0;
  let count = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      count += 1;
      inFlight += 1;
      most = Math.max(most, inFlight);
      const delay = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => {
        inFlight -= 1;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{}');
      }, delay);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    port,
    stats: () => ({ count, most }),
    reset: () => ((most = 0), (count = 0)),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * A `.claude` folder whose only hooks are `perEvent` HTTP hooks per tool event to the floor server,
 * each answering after `delay` ms; with `port` undefined, command hooks that run `true` (a process
 * that does nothing: Claude's own cost of a command hook).
 */
function floorSettings(folder, port, perEvent, delay) {
  fs.mkdirSync(folder, { recursive: true });
  const hook = (event, n) => (port === undefined ? { type: 'command', command: 'true', timeout: 30 } : { type: 'http', url: `http://127.0.0.1:${port}/${event}/${n}?delay=${delay}`, timeout: 30 });
  const group = (event) => [{ matcher: 'Bash', hooks: Array.from({ length: perEvent }, (_, n) => hook(event, n)) }];
  fs.writeFileSync(path.join(folder, 'settings.local.json'), `${JSON.stringify({ hooks: { PreToolUse: group('PreToolUse'), PostToolUse: group('PostToolUse') } }, null, 2)}\n`, { mode: 0o600 });
  return folder;
}

/** One `claude -p` turn with `variant`'s `.claude` folder in place (none: hooks off): the run's wall time and each tool call's round, from the model server's clock. */
async function turn(where, variant) {
  const folder = where.variants[variant];
  if (folder !== undefined) fs.renameSync(folder, where.settings);
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
    if (folder !== undefined) fs.renameSync(where.settings, folder);
  }
}

/** The hook log's lines for `where`'s store: each event's server-side time. */
function hookLog(where) {
  const folder = path.join(where.env.XDG_DATA_HOME, 'turnback');
  const lines = [];
  for (const file of fs.readdirSync(folder).filter((f) => f.endsWith('.hooks.log'))) for (const line of fs.readFileSync(path.join(folder, file), 'utf8').split('\n')) if (line.length > 0) lines.push(JSON.parse(line));
  return lines;
}

const results = [];
const projects = [
  ...(args['no-small'] === true ? [] : [['small', 0, undefined]]),
  ...(bigFiles > 0 ? [[`${bigFiles}-file`, bigFiles, undefined]] : []),
  ...(tree !== undefined ? [[path.basename(tree), 0, tree]] : []),
];
const hooksServer = floor ? await floorServer() : undefined;
let inFlight;
try {
  for (const [name, files, own] of projects) {
    const where = project(name, files, own);
    const variants = ['on', 'off'];
    if (hooksServer !== undefined) {
      where.variants.floor = floorSettings(temp.path(`${name}-claude-floor`), hooksServer.port, 1, 0);
      where.variants.slow1 = floorSettings(temp.path(`${name}-claude-slow1`), hooksServer.port, 1, SLOW_MS);
      where.variants.slow2 = floorSettings(temp.path(`${name}-claude-slow2`), hooksServer.port, 2, SLOW_MS);
      where.variants.command = floorSettings(temp.path(`${name}-claude-command`), undefined, 1, 0);
      variants.push('floor', 'slow1', 'slow2', 'command');
    }
    const sides = Object.fromEntries(variants.map((v) => [v, { wall: [], rounds: [] }]));
    try {
      // A warm-up round: the server, the caches and Claude's own first start are not timed.
      for (const variant of variants) await turn(where, variant);
      for (let i = 0; i < runs; i++) {
        for (const variant of variants) {
          if (variant === 'slow2') hooksServer.reset();
          const one = await turn(where, variant);
          if (variant === 'slow2') inFlight = Math.max(inFlight ?? 0, hooksServer.stats().most);
          sides[variant].wall.push(one.wall);
          sides[variant].rounds.push(median(one.rounds));
        }
        say(`${name}: run ${i + 1} of ${runs}`);
      }
      const log = hookLog(where);
      const perEvent = {};
      for (const line of log) (perEvent[line.event] ??= []).push(line.ms);
      where.tb('server', 'stop');
      results.push({ name, sides, perEvent, failed: log.filter((line) => !line.ok).length, last: log.slice(-3) });
    } finally {
      fs.rmSync(where.settings, { recursive: true, force: true });
      if (where.added) fs.rmSync(path.join(where.proj, 'bench-log.txt'), { force: true });
    }
  }
} finally {
  await hooksServer?.close();
}
console.log(`claude-hooks: Claude Code, one turn of ${CALLS} Bash calls, ${runs} runs each side alternating, medians${args['command-hooks'] === true ? ' (command hooks)' : ' (HTTP hooks for the tool events)'}`);
console.log('| project | a tool call\'s round, hooks off | hooks on | added per tool call | the whole run, off | on |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const { name, sides } of results) {
  const { on, off } = sides;
  const added = median(on.rounds) - median(off.rounds);
  console.log(`| ${name} | ${fmtMs(median(off.rounds))} | ${fmtMs(median(on.rounds))} | ${fmtMs(added)} | ${fmtMs(median(off.wall))} | ${fmtMs(median(on.wall))} |`);
}
if (floor) {
  console.log(`\nClaude's own cost of an HTTP hook pair (PreToolUse + PostToolUse to a server that answers \`{}\` at once), and one event's hooks one after the other or at once (each answering after ${SLOW_MS} ms):`);
  console.log('| project | round, hooks off | instant HTTP hook pair | added | command hook pair (`true`) | added | one slow hook per event | two slow hooks per event | two minus one |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const { name, sides } of results) {
    const off = median(sides.off.rounds);
    const [instant, command, one, two] = ['floor', 'command', 'slow1', 'slow2'].map((v) => median(sides[v].rounds));
    console.log(`| ${name} | ${fmtMs(off)} | ${fmtMs(instant)} | ${fmtMs(instant - off)} | ${fmtMs(command)} | ${fmtMs(command - off)} | ${fmtMs(one)} | ${fmtMs(two)} | ${fmtMs(two - one)} |`);
  }
  console.log(`most hooks in flight at once with two slow hooks per event: ${inFlight} (2: Claude runs an event's hooks at once; 1: one after the other)`);
}
for (const { name, perEvent, failed, last } of results) {
  console.log(`\n${name}: the server's time per hook event (the hook log, every run; median, max): ${Object.entries(perEvent).map(([event, ms]) => `${event} ${fmtMs(median(ms))}, ${fmtMs(Math.max(...ms))} (${ms.length})`).join('; ')}; ${failed} failed`);
  for (const line of last) console.log(`  ${JSON.stringify(line)}`);
}
temp.remove();
