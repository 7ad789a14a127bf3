// The fresh-process bench: what a person, and every agent hook, pays per `turnback` command.
// Each round runs, side by side and in turn, a bare `node -e 0` (the floor for a Node command),
// `git status --porcelain`, and `turnback run -- true`, `turnback list`, `turnback status` in a
// committed 10,000-file repository whose store already holds its first picture.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fmtMs, fmtRatio, git, median } from './lib.mjs';
import { generateTree } from './tree.mjs';

/** Milliseconds one process takes from spawn to exit; throws when it fails. */
function timed(file, args, options) {
  const start = performance.now();
  const result = spawnSync(file, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - start;
  if (result.status !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${result.status}: ${result.stderr.slice(0, 300)}`);
  return ms;
}

/**
 * @param {{ temp: { path(name: string): string }, row: (figure: string, value: string, goal?: string, status?: string) => void, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchFresh({ temp, row, notes, quick, dist }) {
  const repo = temp.path('fresh-repo');
  fs.mkdirSync(repo, { recursive: true });
  generateTree(repo, { files: 10_000, seed: 11, tiny: true });
  git(['init', '-q'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-qm', 'tree'], { cwd: repo });
  const home = temp.path('fresh-home');
  fs.mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1' };
  const cli = path.join(dist, 'cli', 'main.cjs');
  const options = { cwd: repo, env };
  const node = process.execPath;
  // The store's first picture, and one repeat, before anything is timed.
  for (let i = 0; i < 2; i++) timed(node, [cli, 'run', '--', 'true'], options);
  const sides = {
    node: () => timed(node, ['-e', '0'], options),
    git: () => timed('git', ['status', '--porcelain'], options),
    run: () => timed(node, [cli, 'run', '--', 'true'], options),
    list: () => timed(node, [cli, 'list'], options),
    status: () => timed(node, [cli, 'status'], options),
  };
  const times = Object.fromEntries(Object.keys(sides).map((name) => [name, []]));
  const rounds = quick ? 5 : 11;
  for (let round = 0; round < rounds; round++) for (const [name, run] of Object.entries(sides)) times[name].push(run());
  const m = Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
  const against = (name, goal) => {
    const ratio = m[name] / m.node;
    row(`fresh \`turnback ${name === 'run' ? 'run -- true' : name}\` (10,000-file repo) vs fresh \`node -e 0\``, `${fmtMs(m[name])} vs ${fmtMs(m.node)}: ${fmtRatio(ratio)}`, `≤ ${goal}×`, ratio <= goal ? 'PASS' : 'MISS');
  };
  against('run', 2);
  row('  the same against `git status --porcelain`', `${fmtMs(m.run)} vs ${fmtMs(m.git)}: ${fmtRatio(m.run / m.git)}`);
  against('list', 1.5);
  against('status', 1.5);
  notes.push(`fresh: ${rounds} rounds, each side spawned in turn (spawnSync, process start to exit); medians; the repository is a committed 10,000-file tree of tiny files whose store already holds its first picture.`);
}
