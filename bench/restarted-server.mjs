// What a server's exit costs the next commands on a big committed tree (issue #28): the server
// leaves after its idle time (TURNBACK_SERVER_IDLE_SECONDS) and takes its watch with it, so the
// next commands find no server, or a new one whose watcher cannot vouch yet. A REPORT, not a
// test: prints one table, always exits 0. Needs watchman.
//
// Usage: node bench/restarted-server.mjs [--files=250000] [--restarts=2] [--runs=3] [--tree=DIR]
//
// The tree is bench/first-picture.mjs's (seed 28, tiny files, committed), generated into `--tree`
// if it is not there yet. Its own HOME, XDG folders and runtime folder. In turn, each a pause
// after the last: `server start`, the store's first `run -- true` and two more; shadow git's
// no-change `add -A && write-tree` three times (GIT_DIR outside the tree, its first `add` not
// timed); then, `restarts` times, `server stop --all` (as an idle exit leaves) and `runs`
// `run -- true` — the first finds no server (it starts one and pictures in its own process), the
// next are served by the new server.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, git, median, shadowEnv } from './lib.mjs';
import { benchHome, committedBenchTree, timedProcess } from './processes.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = process.env.TURNBACK_DIST ? path.resolve(process.env.TURNBACK_DIST) : path.join(HERE, '..', 'dist');
const CLI = path.join(DIST, 'cli', 'turnback.cjs');
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const files = Number(args.files ?? 250_000);
const restarts = Number(args.restarts ?? 2);
const after = Number(args.runs ?? 3);
const base = path.resolve(args.tree ?? path.join(os.tmpdir(), `turnback-first-picture-${files}`));
const say = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const repo = committedBenchTree(base, files, say);

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-restarted-'));
const env = benchHome(work);
const options = { cwd: repo, env };
const run = () => timedProcess(process.execPath, [CLI, 'run', '--', 'true'], options);
const watcherLine = () => spawnSync(process.execPath, [CLI, 'status'], { ...options, encoding: 'utf8' }).stdout.split('\n').find((line) => /^watcher/.test(line.trim()))?.trim() ?? '(no watcher line)';
const pause = new Int32Array(new SharedArrayBuffer(4));
const stopAll = () => {
  spawnSync(process.execPath, [CLI, 'server', 'stop', '--all'], { env, encoding: 'utf8' });
  Atomics.wait(pause, 0, 0, 1500);
};
const shadowDir = path.join(work, 'shadow.git');
const shadow = { cwd: repo, env: { ...env, ...shadowEnv(shadowDir, repo) } };

try {
  const started = spawnSync(process.execPath, [CLI, 'server', 'start'], { ...options, encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`server start failed: ${started.stderr}`);
  say('the first runs');
  const firstRuns = [run(), run(), run()];
  git(['init', '-q', '--bare', shadowDir]);
  git(['add', '-A'], shadow);
  git(['add', '-A'], shadow);
  const shadowMs = [0, 1, 2].map(() => timedProcess('sh', ['-c', 'git add -A && git write-tree'], shadow));
  const rows = [`| a new store: the first run, then two more | ${firstRuns.map(fmtMs).join(' · ')} | ${watcherLine()} |`];
  for (let k = 1; k <= restarts; k++) {
    say(`restart ${k}`);
    stopAll();
    const runs = Array.from({ length: after }, () => run());
    rows.push(`| after the server left (${k}): no server, then the new one | ${runs.map(fmtMs).join(' · ')} | ${watcherLine()} |`);
  }
  console.log(`## A server's exit on ${files.toLocaleString('en-US')} committed files (${new Date().toISOString()}, load: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${os.cpus().length} cores, Node ${process.version})\n`);
  console.log(`shadow git's no-change \`add -A && write-tree\`: ${shadowMs.map(fmtMs).join(' · ')} (median ${fmtMs(median(shadowMs))})\n`);
  console.log('| sequence | `run -- true`, in turn | `status` after them |');
  console.log('| --- | --- | --- |');
  for (const row of rows) console.log(row);
} finally {
  stopAll();
  fs.rmSync(work, { recursive: true, force: true });
}
process.exitCode = 0;
