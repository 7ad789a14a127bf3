// The first served `run -- true` of a committed tree (issue #28 goal (a)), builds side by side. A
// REPORT, not a test: prints one row per pass and build, always exits 0. Needs watchman.
//
// Usage: node bench/first-picture.mjs [--files=250000] [--passes=2] [--builds=DIST_A,DIST_B]
//          [--tree=DIR] [--profile] [--watcher=off]
//
// Each pass, for each build in turn: a fresh HOME, XDG folders and runtime folder (so the server
// and its watchman service are that pass's own), `git status --porcelain` (untracked cache on)
// warmed twice, then timed three times, then the first served run (`run -- sh -c 'date …'`: the
// command notes when it starts, so the time until then, the first picture, is printed beside the
// whole run's), then a second `run -- true`. Printed beside: the server's CPU during the first
// run and its watchman's CPU by then (from /proc), since both share the machine's cores. The committed tree (seed 28,
// tiny files) is generated once into `--tree` (default under the temp folder) and kept for the
// next run. `--profile` CPU-profiles each server (bench/server-profile.cjs, preloaded through
// NODE_OPTIONS: `--cpu-prof` is refused there) and prints where its `.cpuprofile` files are.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtRatio, median } from './lib.mjs';
import { benchHome, committedBenchTree, GAP_MS, timedProcess } from './processes.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const files = Number(args.files ?? 250_000);
const passes = Number(args.passes ?? 2);
const builds = (args.builds ?? path.join(HERE, '..', 'dist')).split(',').map((d) => path.resolve(d));
const base = path.resolve(args.tree ?? path.join(os.tmpdir(), `turnback-first-picture-${files}`));
const say = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);

/** CPU milliseconds (user + system) a process has used so far; 0 once it is gone. */
function cpuMs(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

const repo = committedBenchTree(base, files, say);

const rows = [];
const pause = new Int32Array(new SharedArrayBuffer(4));
for (let pass = 1; pass <= passes; pass++) {
  for (const dist of builds) {
    const cli = path.join(dist, 'cli', 'turnback.cjs');
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-first-'));
    const env = benchHome(work);
    if (args.watcher === 'off') env.TURNBACK_WATCHER = 'off';
    const profiles = path.join(work, 'profiles');
    const serverEnv = 'profile' in args ? { ...env, NODE_OPTIONS: `--require ${path.join(HERE, 'server-profile.cjs')}`, TURNBACK_BENCH_PROFILE_DIR: profiles } : env;
    if ('profile' in args) fs.mkdirSync(profiles);
    const options = { cwd: repo, env };
    const status = () => timedProcess('git', ['status', '--porcelain'], { cwd: repo });
    let server;
    try {
      status();
      status();
      const started = spawnSync(process.execPath, [cli, 'server', 'start'], { cwd: repo, env: serverEnv, encoding: 'utf8' });
      if (started.status !== 0) throw new Error(`server start failed: ${started.stderr}`);
      server = JSON.parse(spawnSync(process.execPath, [cli, 'server', 'status', '--json'], { ...options, encoding: 'utf8' }).stdout);
      const watchmanPid = () => {
        try {
          return Number(fs.readFileSync(`${String(server.socket).replace(/\.sock$/, '')}.w/pid`, 'utf8').trim());
        } catch {
          return undefined;
        }
      };
      say(`pass ${pass}, ${dist}: first run`);
      // All three before the run: the watch service's crawl, which starts with the first picture,
      // would slow a `git status` beside it.
      const gitStatus = [status(), status(), status()];
      const before = cpuMs(server.pid);
      // The command notes when it starts: the run's time until then is the first picture's (the
      // call's begin, with the client's start and the round trip to the server); the rest is the
      // call's end, which sweeps again (no watcher token vouches for the tree yet).
      const startedFile = path.join(work, 'started');
      const runStart = Date.now();
      const first = timedProcess(process.execPath, [cli, 'run', '--', 'sh', '-c', `date +%s%3N > '${startedFile}'`], options);
      const commandAt = Number(fs.readFileSync(startedFile, 'utf8').trim());
      const untilCommand = commandAt - runStart - GAP_MS;
      const serverCpu = cpuMs(server.pid) - before;
      const wm = watchmanPid();
      const watchmanCpu = wm === undefined ? undefined : cpuMs(wm);
      const second = timedProcess(process.execPath, [cli, 'run', '--', 'true'], options);
      const statusMs = median(gitStatus);
      rows.push(`| ${pass} | ${dist} | ${fmtMs(first)} | ${fmtMs(untilCommand)} | ${fmtMs(statusMs)} | ${fmtRatio(first / statusMs)} | ${fmtRatio(untilCommand / statusMs)} | ${fmtMs(serverCpu)} | ${watchmanCpu === undefined ? 'n/a' : fmtMs(watchmanCpu)} | ${fmtMs(second)} |`);
    } catch (error) {
      rows.push(`| ${pass} | ${dist} | failed: ${String(error?.message ?? error).slice(0, 200)} | | | | | | | | |`);
    } finally {
      spawnSync(process.execPath, [cli, 'server', 'stop', '--all'], { env, encoding: 'utf8' });
      for (let i = 0; i < 200 && server?.pid !== undefined && fs.existsSync(`/proc/${server.pid}`); i++) Atomics.wait(pause, 0, 0, 100);
      if ('profile' in args) say(`profiles: ${profiles}`);
      else fs.rmSync(work, { recursive: true, force: true });
    }
  }
}
console.log(`## The first served run of ${files.toLocaleString('en-US')} committed files (${new Date().toISOString()}, load: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, ${os.cpus().length} cores, Node ${process.version})\n`);
console.log("| pass | build | first `run -- sh -c 'date …'` | until its command started (the first picture) | `git status --porcelain` (median of 3) | ratio, the whole run | ratio, the first picture (goal ≤ 1×) | server CPU in the first run | its watchman CPU by then | second `run -- true` |");
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const row of rows) console.log(row);
process.exitCode = 0;
