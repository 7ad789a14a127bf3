// A committed 250,000-file tree served through the command server with the watcher on (issue #28),
// side by side with git in the same run. A REPORT, not a test: it prints PASS/MISS per goal and
// always exits 0. Needs watchman (the server starts a service of its own).
//
// Usage: npx tsup && node bench/big-tree.mjs [--files=250000] [--rounds=5] [--phases=memory] [--tree=DIR]
//
// `--phases=memory`: the server's memory alone (the first run, `rounds` more, then 10 edits and a
// run three times, no git side and no quiet waits; ~2 min at 250,000 files). `--tree=DIR`: the
// committed tree is made in DIR once and reused by later runs (put back with `git checkout`).
//
// Rows: the first picture (the first `turnback run -- true`, the server already listening) against
// a warmed `git status --porcelain` with the untracked cache; every later `run -- true` against
// shadow git's no-change `add -A && write-tree` (GIT_DIR outside the tree, the same tree), in
// turn, median of `rounds` — once right after the first run (the server's idle copy-in of the
// resting blobs may still be running between commands), once after the server and its
// watchman went quiet, and once with each side started only when they are quiet (the server's
// CPU while git's side runs is printed, since its idle work shares the cores); then 10 edits and
// a run, three times; the server's and its watchman service's VmHWM/VmRSS from /proc. Everything lives in one temp folder with its own HOME, XDG
// folders and runtime folder (so the server and watchman are this run's own), removed at the end.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtRatio, git, median, shadowEnv, TempRoot } from './lib.mjs';
import { timedProcess } from './processes.mjs';
import { editFiles, generateTree } from './tree.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
const CLI = path.join(DIST, 'cli', 'turnback.cjs');
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const files = Number(args.files ?? 250_000);
const rounds = Number(args.rounds ?? 5);
const memoryOnly = args.phases === 'memory';
const treeDir = args.tree === undefined ? undefined : path.resolve(args.tree);
const RSS_GOAL_MIB = 250;
const say = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const verdict = (ok) => (ok ? 'PASS' : 'MISS');

/** VmHWM and VmRSS of a process, MiB (undefined once it is gone). */
function memory(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
    return { hwm: field('VmHWM'), rss: field('VmRSS') };
  } catch {
    return undefined;
  }
}

/** CPU ticks (user + system) a process has used so far. */
function cpuTicks(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Waits until none of `pids` used CPU for two seconds in a row (the idle copy-in, watchman's crawl), at most `limitMs`; returns the ms waited. */
function waitQuiet(pids, limitMs) {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const start = Date.now();
  let last = pids.map(cpuTicks);
  let still = 0;
  while (Date.now() - start < limitMs && still < 2) {
    Atomics.wait(pause, 0, 0, 1000);
    const now = pids.map(cpuTicks);
    still = now.every((ticks, i) => ticks - last[i] <= 1) ? still + 1 : 0;
    last = now;
  }
  return Date.now() - start;
}

function turnbackJson(argv, options) {
  const result = spawnSync(process.execPath, [CLI, ...argv, '--json'], { ...options, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  try {
    return JSON.parse(result.stdout);
  } catch {
    return { unparsed: result.stdout.slice(0, 300), stderr: result.stderr.slice(0, 300) };
  }
}

const temp = new TempRoot();
const rows = [];
const row = (figure, value, goal = '', status = '') => rows.push({ figure, value, goal, status });
let env;
let servers = [];
try {
  const repo = treeDir === undefined ? temp.dir('repo') : path.join(treeDir, `repo-${files}`);
  const made = treeDir !== undefined && fs.existsSync(path.join(treeDir, `repo-${files}.covered.json`));
  let gen;
  if (made) {
    say(`reusing ${repo}`);
    git(['checkout', '-q', '--', '.'], { cwd: repo });
    gen = { covered: JSON.parse(fs.readFileSync(path.join(treeDir, `repo-${files}.covered.json`), 'utf8')) };
  } else {
    say(`generating ${files.toLocaleString('en-US')} files`);
    fs.rmSync(repo, { recursive: true, force: true });
    fs.mkdirSync(repo, { recursive: true });
    gen = generateTree(repo, { files, seed: 28, tiny: true });
    git(['init', '-q'], { cwd: repo });
    git(['config', 'core.untrackedCache', 'true'], { cwd: repo });
    git(['add', '-A'], { cwd: repo });
    git(['commit', '-qm', 'tree'], { cwd: repo });
    if (treeDir !== undefined) fs.writeFileSync(path.join(treeDir, `repo-${files}.covered.json`), JSON.stringify(gen.covered));
  }
  const home = temp.dir('home');
  const runtime = temp.dir('runtime');
  fs.chmodSync(runtime, 0o700);
  env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1' };
  delete env.TURNBACK_SERVER;
  delete env.TURNBACK_WATCHER;
  delete env.TURNBACK_DIR;
  // The whole tree pictured: the walk's and the time limits raised; the copy budget stays the
  // default, so clean tracked files past it rest on git's blobs (the first picture is a stat sweep).
  fs.mkdirSync(path.join(home, 'config', 'turnback'), { recursive: true });
  fs.writeFileSync(path.join(home, 'config', 'turnback', 'config.toml'), '[checkpoints]\nmax_walk_entries = 1000000\nmax_picture_seconds = 900\n');
  const options = { cwd: repo, env };
  const run = () => timedProcess(process.execPath, [CLI, 'run', '--', 'true'], options);
  const shadow = shadowEnv(temp.path('shadow.git'), repo);
  const shadowOptions = { cwd: repo, env: { ...process.env, ...shadow } };
  const shadowRun = () => timedProcess('sh', ['-c', 'git add -A && git write-tree'], shadowOptions);
  const status = () => timedProcess('git', ['status', '--porcelain'], { cwd: repo });

  if (!memoryOnly) {
    say('warming git status (untracked cache) and shadow git');
    status();
    status();
    git(['init', '-q'], { env: shadow });
    git(['add', '-A'], { env: shadow });
    git(['write-tree'], { env: shadow });
  }

  say('starting the server');
  const started = spawnSync(process.execPath, [CLI, 'server', 'start'], { ...options, encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`server start failed: ${started.stderr}`);
  const serverState = turnbackJson(['server', 'status'], options);
  const serverPid = serverState.pid;
  const watchmanPid = () => {
    const folder = `${String(serverState.socket).replace(/\.sock$/, '')}.w`;
    try {
      const pid = Number(fs.readFileSync(path.join(folder, 'pid'), 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };

  say('first picture vs git status --porcelain');
  const gitStatus = memoryOnly ? [] : [status()];
  const first = run();
  if (!memoryOnly) gitStatus.push(status(), status());
  const statusMs = memoryOnly ? Number.NaN : median(gitStatus);
  if (memoryOnly) row('first `run -- true` (the first picture, served, watcher starting)', fmtMs(first));
  else row(`first \`run -- true\` (the first picture, served, watcher starting) vs warmed \`git status --porcelain\` (untracked cache; median of 3 around it)`, `${fmtMs(first)} vs ${fmtMs(statusMs)}: ${fmtRatio(first / statusMs)}`, '≤ 1×', verdict(first <= statusMs));

  // The server's and its watchman's CPU while shadow git runs: the server's idle work (the copy-in
  // of resting blobs, which starts whenever it goes idle) shares the 2 cores with git's side.
  const serviceTicks = () => [serverPid, watchmanPid()].filter(Boolean).reduce((sum, pid) => sum + cpuTicks(pid), 0);
  const ticksMs = 1000 / 100; // USER_HZ
  const phase = (label, quietEach = false) => {
    const mine = [];
    const theirs = [];
    const beside = [];
    for (let i = 0; i < rounds; i++) {
      if (quietEach) waitQuiet([serverPid, watchmanPid()].filter(Boolean), 120_000);
      mine.push(run());
      if (quietEach) waitQuiet([serverPid, watchmanPid()].filter(Boolean), 120_000);
      const before = serviceTicks();
      theirs.push(shadowRun());
      beside.push((serviceTicks() - before) * ticksMs);
    }
    const watcher = turnbackJson(['status'], options).watcher;
    const a = median(mine);
    const b = median(theirs);
    row(`later \`run -- true\`, ${label}: runs`, mine.map(fmtMs).join(', '));
    row('  shadow git `add -A && write-tree`, no change, in the same rounds', theirs.map(fmtMs).join(', '));
    row('  CPU the server and its watchman used while shadow git ran', beside.map(fmtMs).join(', '));
    row(`  median of ${rounds} vs shadow git (watcher after: ${watcher?.state ?? 'unknown'}${watcher?.reason ? `, ${watcher.reason}` : ''})`, `${fmtMs(a)} vs ${fmtMs(b)}: ${fmtRatio(a / b)}`, '≤ 1×', verdict(a <= b));
  };
  const afterOne = memory(serverPid);
  let afterFirst;
  if (memoryOnly) {
    const runs = [];
    for (let i = 0; i < rounds; i++) runs.push(run());
    row(`later \`run -- true\`: runs`, runs.map(fmtMs).join(', '));
    afterFirst = memory(serverPid);
  } else {
    say('later runs, right after the first');
    phase('from the second run on, right after the first');
    afterFirst = memory(serverPid);
    say('waiting for the server and watchman to go quiet');
    const waited = waitQuiet([serverPid, watchmanPid()].filter(Boolean), 300_000);
    row('  then waited for the server and its watchman to go quiet (no CPU for 2 s)', fmtMs(waited));
    say('later runs, quiet');
    phase('the server and watchman quiet before');
    phase('each side only once the server and watchman are quiet (no CPU for 2 s)', true);
  }

  say('10 edits and a run, three times');
  const edited = [];
  for (let i = 0; i < 3; i++) {
    editFiles(repo, gen.covered, 10, 100 + i);
    edited.push(run());
  }
  row('`run -- true` after 10 edits (three times)', edited.map(fmtMs).join(', '));

  if (args.smaps !== undefined) fs.writeFileSync(args.smaps, fs.readFileSync(`/proc/${serverPid}/smaps`));
  if (args.snapshot !== undefined) {
    // A heap snapshot of the server (started with NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2
    // --diagnostic-dir=<dir>): sent the signal, waited for until the file stops growing.
    process.kill(serverPid, 'SIGUSR2');
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let last = -1;
    for (let i = 0; i < 600; i++) {
      Atomics.wait(pause, 0, 0, 500);
      const found = fs.readdirSync(args.snapshot).filter((f) => f.endsWith('.heapsnapshot') && f.includes(`.${serverPid}.`));
      const size = found.length === 0 ? -1 : fs.statSync(path.join(args.snapshot, found[0])).size;
      if (size > 0 && size === last) break;
      last = size;
    }
  }
  const server = memory(serverPid);
  const served = turnbackJson(['server', 'status'], options);
  const wmPid = watchmanPid();
  const watchman = wmPid === undefined ? undefined : memory(wmPid);
  row(`server RSS (pid ${serverPid}, ${served.served ?? '?'} commands served): VmHWM / VmRSS at the end`, `${server?.hwm.toFixed(0)} MiB / ${server?.rss.toFixed(0)} MiB (after the first run: ${afterOne?.hwm.toFixed(0)} / ${afterOne?.rss.toFixed(0)} MiB; after the first phase: ${afterFirst?.hwm.toFixed(0)} / ${afterFirst?.rss.toFixed(0)} MiB)`, `≤ ${RSS_GOAL_MIB} MiB`, verdict(server !== undefined && server.hwm <= RSS_GOAL_MIB));
  row(`  \`turnback server status\`'s memory`, (() => {
    const entry = (served.servers ?? []).find((e) => e.pid === serverPid);
    return entry?.rss ? `${(entry.rss / 1048576).toFixed(0)} MiB` : 'n/a';
  })());
  row(`the server's own watchman service (pid ${wmPid ?? '?'}): VmHWM / VmRSS`, watchman ? `${watchman.hwm.toFixed(0)} MiB / ${watchman.rss.toFixed(0)} MiB` : 'n/a');
  servers = [serverPid, wmPid].filter(Boolean);
} catch (error) {
  row('bench failed', String(error?.stack ?? error).split('\n').slice(0, 3).join(' '), '', 'MISS');
} finally {
  if (env !== undefined) spawnSync(process.execPath, [CLI, 'server', 'stop', '--all'], { env, encoding: 'utf8' });
  // The server stops its watchman as it leaves; wait for both to be gone before removing their folders.
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 100 && servers.some((pid) => fs.existsSync(`/proc/${pid}`)); i++) Atomics.wait(pause, 0, 0, 100);
  const left = servers.filter((pid) => fs.existsSync(`/proc/${pid}`));
  if (left.length > 0) say(`still running after stop, ended by pid: ${left.join(', ')}`);
  for (const pid of left) process.kill(pid, 'SIGTERM');
  temp.remove();
}
console.log(`## ${files.toLocaleString('en-US')} files, served with the watcher (${new Date().toISOString()}, load: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${os.cpus().length} cores, Node ${process.version})\n`);
console.log('| figure | value | goal | result |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.figure} | ${r.value} | ${r.goal} | ${r.status} |`);
process.exitCode = 0;
