// The fresh-process bench: what a person, and every agent hook, pays per `turnback` command.
// Each round runs, side by side and in turn, a bare `node -e 0` (the floor for a Node command),
// `git status --porcelain`, and `turnback run -- true`, `turnback list`, `turnback status` in a
// committed 10,000-file repository whose store already holds its first picture — each as a
// person starts it (the small client, served by the per-user server) and, for comparison, with
// the server turned off (TURNBACK_SERVER=off: the whole command in the fresh process).
import * as path from 'node:path';
import { fmtMs, fmtRatio, median } from './lib.mjs';
import { committedRepo, GAP_MS, timedProcess } from './processes.mjs';

/** Served runs before the timed rounds: the server's JIT is warm by then. */
const WARM_RUNS = 20;

const timed = (file, args, options) => timedProcess(file, args, options);

/**
 * @param {{ temp: { path(name: string): string }, row: (figure: string, value: string, goal?: string, status?: string) => void, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchFresh({ temp, row, notes, quick, dist }) {
  const { repo, env } = committedRepo(temp, 'fresh', 11);
  const cli = path.join(dist, 'cli', 'turnback.cjs');
  const options = { cwd: repo, env };
  const alone = { cwd: repo, env: { ...env, TURNBACK_SERVER: 'off' } };
  const node = process.execPath;
  // The store's first picture, the server (started and waited for, as the first command of a
  // day starts it in the background), and the served commands that warm its JIT (a new server's
  // first dozen runs are slower, see bench/RESULTS.md) before anything is timed.
  timed(node, [cli, 'run', '--', 'true'], alone);
  timed(node, [cli, 'server', 'start'], options);
  const firstServed = [];
  for (let i = 0; i < WARM_RUNS; i++) firstServed.push(timed(node, [cli, 'run', '--', 'true'], options));
  const sides = {
    node: () => timed(node, ['-e', '0'], options),
    git: () => timed('git', ['status', '--porcelain'], options),
    run: () => timed(node, [cli, 'run', '--', 'true'], options),
    list: () => timed(node, [cli, 'list'], options),
    status: () => timed(node, [cli, 'status'], options),
  };
  // The server-off rows in rounds of their own: an in-process run between served ones writes a new
  // stat cache and base each time, which a person working through the client never does.
  const aloneSides = {
    nodeAlone: () => timed(node, ['-e', '0'], options),
    runAlone: () => timed(node, [cli, 'run', '--', 'true'], alone),
    listAlone: () => timed(node, [cli, 'list'], alone),
  };
  const times = Object.fromEntries([...Object.keys(sides), ...Object.keys(aloneSides)].map((name) => [name, []]));
  const rounds = quick ? 5 : 11;
  for (let round = 0; round < rounds; round++) for (const [name, run] of Object.entries(sides)) times[name].push(run());
  timed(node, [cli, 'server', 'stop'], options);
  for (let round = 0; round < (quick ? 3 : 5); round++) for (const [name, run] of Object.entries(aloneSides)) times[name].push(run());
  const m = Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
  const against = (name, goal) => {
    const ratio = m[name] / m.node;
    row(`fresh \`turnback ${name === 'run' ? 'run -- true' : name}\` (10,000-file repo) vs fresh \`node -e 0\``, `${fmtMs(m[name])} vs ${fmtMs(m.node)}: ${fmtRatio(ratio)}`, `≤ ${goal}×`, ratio <= goal ? 'PASS' : 'MISS');
  };
  against('run', 2);
  row('  the same against `git status --porcelain`', `${fmtMs(m.run)} vs ${fmtMs(m.git)}: ${fmtRatio(m.run / m.git)}`);
  against('list', 1.5);
  against('status', 1.5);
  row('  `run -- true`: a new server\'s first 3 served runs, median', `${fmtMs(median(firstServed.slice(0, 3)))}: ${fmtRatio(median(firstServed.slice(0, 3)) / m.node)}`);
  row('  `run -- true` with the server off (the whole command in the fresh process), vs `node -e 0` in the same rounds', `${fmtMs(m.runAlone)} vs ${fmtMs(m.nodeAlone)}: ${fmtRatio(m.runAlone / m.nodeAlone)}`);
  row('  `list` with the server off', `${fmtMs(m.listAlone)} vs ${fmtMs(m.nodeAlone)}: ${fmtRatio(m.listAlone / m.nodeAlone)}`);
  notes.push(`fresh: ${rounds} rounds, each side spawned in turn, ${GAP_MS} ms apart (spawnSync, process start to exit); medians; the repository is a committed 10,000-file tree of tiny files whose store already holds its first picture; the client is served by a running server (started once, as the first command of a day starts it), except on the rows with the server off.`);
}
