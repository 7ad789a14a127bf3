// What the fresh-process benches share: a committed 10,000-file repository with a HOME of its
// own, and the time of one process from spawn to exit, taken a pause after the previous one.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { git } from './lib.mjs';
import { generateTree } from './tree.mjs';

/**
 * A pause before each timed process: commands come seconds apart from a person and tool calls
 * apart from an agent, and back to back the previous process's aftermath (the server's
 * concurrent compiler and collector threads finishing on this 2-core machine) would land in the
 * next one's time, whichever side that is.
 */
export const GAP_MS = 100;
const gap = new Int32Array(new SharedArrayBuffer(4));

/** Milliseconds one process takes from spawn to exit, `input` on its stdin; throws when it fails. */
export function timedProcess(file, args, options, input = '') {
  Atomics.wait(gap, 0, 0, GAP_MS);
  const start = performance.now();
  const result = spawnSync(file, args, { ...options, input, stdio: ['pipe', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - start;
  if (result.status !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${result.status}: ${result.stderr.slice(0, 300)}`);
  return ms;
}

/**
 * A committed repository of 10,000 tiny files (seeded) and an environment whose HOME and XDG
 * folders are its own.
 * @param {{ path(name: string): string }} temp
 */
export function committedRepo(temp, name, seed) {
  const repo = temp.path(`${name}-repo`);
  fs.mkdirSync(repo, { recursive: true });
  generateTree(repo, { files: 10_000, seed, tiny: true });
  git(['init', '-q'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-qm', 'tree'], { cwd: repo });
  const home = temp.path(`${name}-home`);
  fs.mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1' };
  return { repo, env };
}

/**
 * The committed tree of the first-picture benches (bench/first-picture.mjs, stat-floor.mjs,
 * restarted-server.mjs): `files` tiny files (seed 28) in `base`/repo, git initialised with the
 * untracked cache on and everything committed; generated once (`base`/done marks it) and reused.
 * Returns the repository's path.
 */
export function committedBenchTree(base, files, say = () => undefined) {
  const repo = path.join(base, 'repo');
  if (fs.existsSync(path.join(base, 'done'))) return repo;
  say(`generating ${files.toLocaleString('en-US')} files in ${base}`);
  fs.rmSync(base, { recursive: true, force: true });
  fs.mkdirSync(repo, { recursive: true });
  generateTree(repo, { files, seed: 28, tiny: true });
  git(['init', '-q'], { cwd: repo });
  git(['config', 'core.untrackedCache', 'true'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-qm', 'tree'], { cwd: repo });
  fs.writeFileSync(path.join(base, 'done'), '');
  return repo;
}

/**
 * A HOME, XDG folders and runtime folder of their own under `work` (so a server and its watchman
 * service are the bench's own), the whole tree pictured (the walk's and the time limits raised,
 * the copy budget the default), and the environment naming them, with no TURNBACK_SERVER,
 * TURNBACK_WATCHER or TURNBACK_DIR of the caller's.
 */
export function benchHome(work) {
  const home = path.join(work, 'home');
  const runtime = path.join(work, 'runtime');
  fs.mkdirSync(path.join(home, 'config', 'turnback'), { recursive: true });
  fs.mkdirSync(runtime, { mode: 0o700 });
  fs.writeFileSync(path.join(home, 'config', 'turnback', 'config.toml'), '[checkpoints]\nmax_walk_entries = 1000000\nmax_picture_seconds = 900\n');
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1' };
  delete env.TURNBACK_SERVER;
  delete env.TURNBACK_WATCHER;
  delete env.TURNBACK_DIR;
  return env;
}
