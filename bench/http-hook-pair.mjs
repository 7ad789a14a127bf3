// A served HTTP hook pair (issue #28, the fixed cost): a PreToolUse + PostToolUse of a Bash call
// posted to the command server's hook listener exactly as Claude Code posts them (the installed
// settings.local.json's URL and secret header), inside a turn begun by the prompt's command hook,
// on a small committed project (7 files, or `--files=N` generated). Prints each event's time as
// the client sees it (request to answer) and the hook log's server-side time, medians of
// `--pairs` after a warm-up. `--cpu-prof=DIR`: the server runs under `node --cpu-prof` (its
// profile written into DIR when it stops), for finding where a pair spends its time.
// `--tree=DIR`: a committed tree of one's own, used in place (what the bench adds there — .claude/,
// bench-log.txt — is removed at the end), with `--max-walk-entries=N` past the walk's default
// limit; the pairs start once the server's idle copier has nothing left to copy (at most 5 min).
// Usage: npx tsup && node bench/http-hook-pair.mjs [--pairs=40] [--files=0 | --tree=DIR [--max-walk-entries=N]] [--cpu-prof=DIR | --strace=FILE]
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { committedHookProject, fmtMs, median, TempRoot } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
const CLI = path.join(DIST, 'cli', 'turnback.cjs');
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const pairs = Number(args.pairs ?? 40);
const files = Number(args.files ?? 0);
const WARM = 8;

const temp = new TempRoot();
const tree = args.tree !== undefined ? path.resolve(args.tree) : undefined;
const proj = tree ?? temp.path('proj');
if (tree === undefined) {
  committedHookProject(proj, files);
} else if (fs.existsSync(path.join(proj, '.claude'))) throw new Error(`${proj} has a .claude folder of its own`);
const home = temp.path('home');
const runtime = temp.path('run');
fs.mkdirSync(home, { recursive: true });
fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
const env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1', LANG: 'C.UTF-8' };
const tb = (argv, input) => spawnSync(process.execPath, [CLI, ...argv], { cwd: proj, env, input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
if (args['max-walk-entries'] !== undefined) {
  fs.mkdirSync(path.join(home, 'config', 'turnback'), { recursive: true });
  fs.writeFileSync(path.join(home, 'config', 'turnback', 'config.toml'), `[checkpoints]\nmax_walk_entries = ${Number(args['max-walk-entries'])}\n`);
}

let server;
if (args['cpu-prof'] !== undefined || args.strace !== undefined) {
  // This bench's own server, under the profiler (or strace, its system calls of the timed pairs'
  // events counted per kind), at the address every client of this build and environment finds.
  const { socket } = JSON.parse(tb(['server', '--json']).stdout);
  const serve = [path.join(DIST, 'cli', 'main.cjs'), '--turnback-serve', socket];
  const [command, argv] =
    args.strace !== undefined
      ? ['strace', ['-f', '-tt', '-T', '-o', path.resolve(args.strace), process.execPath, ...serve]]
      : [process.execPath, ['--cpu-prof', `--cpu-prof-dir=${path.resolve(args['cpu-prof'])}`, ...serve]];
  server = spawn(command, argv, { cwd: '/', env, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => server.stdout.on('data', (chunk) => String(chunk).includes('ready') && resolve()));
}
const installed = tb(['hooks', 'install', 'claude']);
if (installed.status !== 0) throw new Error(installed.stderr);
const local = JSON.parse(fs.readFileSync(path.join(proj, '.claude', 'settings.local.json'), 'utf8'));
const target = (event) => local.hooks[event][0].hooks[0];
const session = 'bench-pair';
const transcript = path.join(home, 'transcript.jsonl');
fs.writeFileSync(transcript, `${JSON.stringify({ type: 'user', message: { role: 'user', content: 'TB-TURN-1 go' } })}\n`);
const common = { session_id: session, cwd: proj, transcript_path: transcript, permission_mode: 'bypassPermissions' };

async function post(event, payload) {
  const { url, headers } = target(event);
  const start = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ ...common, hook_event_name: event, ...payload }) });
  await response.text();
  if (response.status !== 200) throw new Error(`${event}: HTTP ${response.status}`);
  return performance.now() - start;
}

if (tree !== undefined) {
  // The tree's first picture, then the idle copier's copy-in of what it left resting on git, before anything is timed.
  const first = performance.now();
  tb(['run', '--', 'true']);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const limit = performance.now() + 300_000; performance.now() < limit; Atomics.wait(pause, 0, 0, 1000)) {
    const copies = JSON.parse(tb(['server', '--json']).stdout).servers.find((server) => server.thisBuild)?.idleCopies;
    if (copies !== undefined && !copies.running && copies.pending === 0 && copies.lastLook !== null && copies.lastLook.left === copies.lastLook.lost) break;
  }
  process.stderr.write(`first picture and idle copies: ${fmtMs(performance.now() - first)}\n`);
}
const prompt = tb(['hook', 'claude', 'UserPromptSubmit'], JSON.stringify({ ...common, hook_event_name: 'UserPromptSubmit', prompt: 'TB-TURN-1 go' }));
if (prompt.status !== 0) throw new Error(prompt.stderr);
const times = { PreToolUse: [], PostToolUse: [], pair: [] };
for (let i = 0; i < WARM + pairs; i++) {
  const id = `toolu_bench_${i}`;
  const input = { command: `echo ${i} >> bench-log.txt`, description: 'append' };
  fs.appendFileSync(transcript, `${JSON.stringify({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input }] } })}\n`);
  const before = await post('PreToolUse', { tool_name: 'Bash', tool_input: input, tool_use_id: id });
  fs.appendFileSync(path.join(proj, 'bench-log.txt'), `${i}\n`);
  const after = await post('PostToolUse', { tool_name: 'Bash', tool_input: input, tool_use_id: id, tool_response: { stdout: '', stderr: '' } });
  fs.appendFileSync(transcript, `${JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: '' }] } })}\n`);
  if (i < WARM) continue;
  times.PreToolUse.push(before);
  times.PostToolUse.push(after);
  times.pair.push(before + after);
}
tb(['hook', 'claude', 'Stop'], JSON.stringify({ ...common, hook_event_name: 'Stop', stop_hook_active: false }));
const log = fs.readdirSync(path.join(home, 'data', 'turnback')).filter((f) => f.endsWith('.hooks.log')).flatMap((f) => fs.readFileSync(path.join(home, 'data', 'turnback', f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
const served = (event) => log.filter((l) => l.event === event).slice(WARM).map((l) => l.ms);
console.log(`http-hook-pair: ${tree !== undefined ? tree : files > 0 ? `${files} generated files` : '7 files'}, ${pairs} pairs after ${WARM} warm-up, medians (client: request to answer; server: the hook log's ms)`);
for (const event of ['PreToolUse', 'PostToolUse']) console.log(`  ${event}: client ${fmtMs(median(times[event]))}, server ${fmtMs(median(served(event)))}`);
console.log(`  the pair: client ${fmtMs(median(times.pair))}; failed events: ${log.filter((l) => !l.ok).length}`);
tb(['server', 'stop']);
if (server !== undefined) await new Promise((resolve) => server.on('exit', resolve));
if (tree !== undefined) for (const added of ['.claude', 'bench-log.txt']) fs.rmSync(path.join(proj, added), { recursive: true, force: true });
temp.remove();
