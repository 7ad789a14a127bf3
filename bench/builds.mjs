// Two builds of turnback side by side, served: what a change to the command server costs a
// person's commands. Usage: node bench/builds.mjs BASE_DIST CHANGED_DIST [ROUNDS]
// (e.g. a `git archive main` build in /tmp against this checkout's dist/). In one committed
// 10,000-file repository whose store holds its first picture, both servers started and warmed (20
// served runs each), then ROUNDS rounds (default 11) of `run -- true` and `list` through each
// build's small client, in turn; the medians and the changed/base ratio are printed.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fmtMs, fmtRatio, median, TempRoot } from './lib.mjs';
import { committedRepo, timedProcess } from './processes.mjs';

const [baseDist, changedDist, roundsText] = process.argv.slice(2);
if (baseDist === undefined || changedDist === undefined) {
  console.log('node bench/builds.mjs BASE_DIST CHANGED_DIST [ROUNDS]');
  process.exit(2);
}
const rounds = Number(roundsText ?? 11);
const temp = new TempRoot();
try {
  const { repo, env } = committedRepo(temp, 'builds', 11);
  const runtime = temp.dir('run');
  fs.chmodSync(runtime, 0o700);
  const options = { cwd: repo, env: { ...env, XDG_RUNTIME_DIR: runtime } };
  const node = process.execPath;
  const builds = { base: path.resolve(baseDist, 'cli', 'turnback.cjs'), changed: path.resolve(changedDist, 'cli', 'turnback.cjs') };
  timedProcess(node, [builds.base, 'run', '--', 'true'], { ...options, env: { ...options.env, TURNBACK_SERVER: 'off' } });
  for (const cli of Object.values(builds)) {
    timedProcess(node, [cli, 'server', 'start'], options);
    for (let i = 0; i < 20; i++) timedProcess(node, [cli, 'run', '--', 'true'], options);
  }
  const times = { 'base run': [], 'changed run': [], 'base list': [], 'changed list': [] };
  for (let round = 0; round < rounds; round++) {
    // Which build goes first alternates, so neither always follows the other's aftermath.
    const order = round % 2 === 0 ? ['base', 'changed'] : ['changed', 'base'];
    for (const command of ['run', 'list']) {
      for (const build of order) times[`${build} ${command}`].push(timedProcess(node, [builds[build], ...(command === 'run' ? ['run', '--', 'true'] : ['list'])], options));
    }
  }
  for (const cli of Object.values(builds)) timedProcess(node, [cli, 'server', 'stop'], options);
  for (const command of ['run', 'list']) {
    const base = median(times[`base ${command}`]);
    const changed = median(times[`changed ${command}`]);
    console.log(`served \`turnback ${command === 'run' ? 'run -- true' : 'list'}\` (10,000-file repo): base ${fmtMs(base)}, changed ${fmtMs(changed)}: ${fmtRatio(changed / base)}`);
  }
} finally {
  temp.remove();
}
