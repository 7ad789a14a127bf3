// Clean tracked files past the copy budget (issue #28): a tree larger than `max_picture_files`
// rests its clean tracked files on git's blobs. Before, every later picture copied up to the
// budget of them in, inside the command (the tool call); now pictures reuse those records while
// their stat holds, and the copy-in runs outside any tool call (the server's idle time, or
// `turnback prune`). Side by side, in turn: a fresh `turnback run -- true` with the server off
// (the whole command in the fresh process) and shadow git's no-change `add -A && write-tree` of
// the same tree; then the prune that copies them in.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fmtMs, fmtRatio, git, median, shadowEnv } from './lib.mjs';
import { timedProcess } from './processes.mjs';
import { generateTree } from './tree.mjs';

/**
 * @param {{ temp: { path(name: string): string }, row: (figure: string, value: string, goal?: string, status?: string) => void, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchRestingOnGit({ temp, row, notes, quick, dist }) {
  const files = quick ? 15_000 : 30_000;
  const repo = temp.path('resting-repo');
  fs.mkdirSync(repo, { recursive: true });
  generateTree(repo, { files, seed: 28, tiny: true });
  git(['init', '-q'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-qm', 'tree'], { cwd: repo });
  const home = temp.path('resting-home');
  fs.mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', TURNBACK_SERVER: 'off' };
  const shadow = shadowEnv(temp.path('resting-shadow.git'), repo);
  git(['init', '-q'], { env: shadow });
  git(['add', '-A'], { env: shadow });
  git(['write-tree'], { env: shadow });
  const cli = path.join(dist, 'cli', 'turnback.cjs');
  const options = { cwd: repo, env };
  const runs = quick ? 4 : 6;
  const turnback = [];
  const shadowGit = [];
  for (let i = 0; i < runs; i++) {
    turnback.push(timedProcess(process.execPath, [cli, 'run', '--', 'true'], options));
    shadowGit.push(timedProcess('sh', ['-c', 'git add -A && git write-tree'], { cwd: repo, env: { ...process.env, ...shadow } }));
  }
  const prune = timedProcess(process.execPath, [cli, 'prune'], options);
  const later = median(turnback.slice(1));
  const reference = median(shadowGit.slice(1));
  row(`\`run -- true\` past the copy budget (${files.toLocaleString('en-US')} clean tracked files, 10,000 a picture), server off: runs 1..${runs}`, turnback.map(fmtMs).join(', '));
  row('  shadow git `add -A && write-tree`, no change, in the same rounds', shadowGit.map(fmtMs).join(', '));
  row('  from the second run on, median, vs shadow git', `${fmtMs(later)} vs ${fmtMs(reference)}: ${fmtRatio(later / reference)}`);
  row('  `turnback prune` copying every resting blob in (outside any tool call)', fmtMs(prune));
  notes.push(`resting-on-git: a committed ${files.toLocaleString('en-US')}-file tree of tiny files (seed 28), default budget (max_picture_files = 10,000), TURNBACK_SERVER=off; each side spawned in turn; the first run takes the first picture.`);
}
