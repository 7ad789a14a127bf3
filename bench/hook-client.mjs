// The command hook's own cost (issue #28, "the command hook itself does the least work a
// process can"): a served hook event that pictures nothing (a read-only tool's PreToolUse), so
// what is timed is the hook process — Node's start, the client, its round trip to a warm server —
// side by side with a fresh `node -e 0` (the floor) and, when given, another build's client (the
// reference: `--reference=OLD/dist/cli/turnback.cjs`), alternating, each spawned with pipes on
// stdin, stdout and stderr as an agent spawns its hooks. CPU time is read with `perf stat` where
// it runs (the wall clock of a loaded 2-core VM says more about the other processes).
// Usage: node bench/hook-client.mjs [--reference=PATH] [--rounds=N]
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, git, median, TempRoot } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((arg) => /^--(\w+)=(.*)$/.exec(arg)?.slice(1) ?? [arg, true]));
const client = path.resolve(process.env.TURNBACK_DIST ?? path.join(HERE, '..', 'dist'), 'cli', 'turnback.cjs');
const reference = typeof args.reference === 'string' ? path.resolve(args.reference) : undefined;
const rounds = Number(args.rounds ?? 21);

const temp = new TempRoot();
const repo = temp.path('proj');
fs.mkdirSync(repo, { recursive: true });
for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(repo, `f${i}.txt`), `${i}\n`);
git(['init', '-q'], { cwd: repo });
git(['add', '-A'], { cwd: repo });
git(['commit', '-qm', 'tree'], { cwd: repo });
const home = temp.path('home');
fs.mkdirSync(home, { recursive: true });
const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', TURNBACK_SERVER_IDLE_SECONDS: '120' };
const payload = JSON.stringify({ session_id: 'bench', cwd: repo, hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path: path.join(repo, 'f1.txt') }, tool_use_id: 'toolu_bench' });
const perf = spawnSync('perf', ['stat', '-x,', '-e', 'task-clock', 'true'], { encoding: 'utf8' }).status === 0;
const perfOut = temp.path('perf.out');

/** One process as an agent starts a hook: wall ms, and CPU ms when perf runs. */
function timed(argv) {
  const command = perf ? ['perf', ['stat', '-x,', '-e', 'task-clock', '-o', perfOut, process.execPath, ...argv]] : [process.execPath, argv];
  const start = performance.now();
  const result = spawnSync(command[0], command[1], { cwd: repo, env, input: payload, stdio: ['pipe', 'pipe', 'pipe'] });
  const wall = performance.now() - start;
  if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${String(result.stderr).slice(0, 300)}`);
  const cpu = perf ? Number(fs.readFileSync(perfOut, 'utf8').split('\n').find((line) => line.includes('task-clock'))?.split(',')[0]) : Number.NaN;
  return { wall, cpu };
}

const variants = { 'node -e 0': ['-e', '0'], 'this build': [client, 'hook', 'claude', 'PreToolUse'], ...(reference !== undefined ? { reference: [reference, 'hook', 'claude', 'PreToolUse'] } : {}) };
// Each client's own server, started and warmed (a reference beside another main.cjs has another one).
for (const file of [client, ...(reference !== undefined ? [reference] : [])]) {
  spawnSync(process.execPath, [file, 'server', 'start'], { cwd: repo, env, stdio: 'ignore' });
  for (let i = 0; i < 10; i++) timed([file, 'hook', 'claude', 'PreToolUse']);
}
const times = Object.fromEntries(Object.keys(variants).map((name) => [name, { wall: [], cpu: [] }]));
for (let round = 0; round < rounds; round++) {
  for (const [name, argv] of Object.entries(variants)) {
    const { wall, cpu } = timed(argv);
    times[name].wall.push(wall);
    times[name].cpu.push(cpu);
  }
}
for (const file of [client, ...(reference !== undefined ? [reference] : [])]) spawnSync(process.execPath, [file, 'server', 'stop'], { cwd: repo, env, stdio: 'ignore' });
const floor = times['node -e 0'];
console.log(`hook client: ${rounds} alternating rounds, a served read-only PreToolUse, medians${perf ? '' : ' (no perf here: wall clock only)'}`);
console.log('| process | wall | over `node -e 0` | CPU | over `node -e 0` |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, t] of Object.entries(times)) {
  const wall = median(t.wall);
  const cpu = median(t.cpu);
  const over = (a, b) => (name === 'node -e 0' ? '—' : `+${fmtMs(a - b)}`);
  console.log(`| ${name} | ${fmtMs(wall)} | ${over(wall, median(floor.wall))} | ${perf ? fmtMs(cpu) : '—'} | ${perf ? over(cpu, median(floor.cpu)) : '—'} |`);
}
temp.remove();
