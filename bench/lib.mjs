// Shared helpers of the turnback benchmark report: timing, medians, temp dirs, disk usage, git.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { generateTree } from './tree.mjs';

/** Median of a list of numbers (NaN when empty). */
export function median(values) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Milliseconds an async function takes. */
export async function timeAsync(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Milliseconds a sync function takes. */
export function timeSync(fn) {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

/** Runs a full GC when node was started with --expose-gc, so one bench's garbage does not land in the next. */
export function collect() {
  if (typeof globalThis.gc === 'function') globalThis.gc();
}

/** One temp root for the whole run; every bench dir lives under it and goes with it. */
export class TempRoot {
  constructor() {
    this.root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-bench-')));
    this.count = 0;
  }
  /** A fresh, existing folder. */
  dir(name) {
    const dir = path.join(this.root, `${String(this.count++).padStart(2, '0')}-${name}`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }
  /** A fresh path that does not exist yet (for stores, which create their own folder). */
  path(name) {
    return path.join(this.root, `${String(this.count++).padStart(2, '0')}-${name}`);
  }
  remove() {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * Disk usage of a folder as the file system accounts it: the sum of st_blocks * 512 over every
 * regular file (folders not counted, the same measure for the turnback store and a git dir).
 */
export function diskUsage(dir) {
  let bytes = 0;
  let files = 0;
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        bytes += fs.lstatSync(full).blocks * 512;
        files += 1;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}

const GIT_CONFIG = ['-c', 'gc.auto=0', '-c', 'core.autocrlf=false', '-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', '-c', 'commit.gpgsign=false'];

/** Runs git synchronously (process start included); throws with stderr on failure. */
export function git(args, { cwd, env } = {}) {
  const result = spawnSync('git', [...GIT_CONFIG, ...args], {
    cwd,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

/** Environment of a shadow repository: GIT_DIR outside the tree, the tree as work tree. */
export function shadowEnv(gitDir, workTree) {
  return { GIT_DIR: gitDir, GIT_WORK_TREE: workTree };
}

export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return 'n/a';
  if (Math.abs(ms) < 1) return `${ms.toFixed(3)} ms`;
  if (Math.abs(ms) < 100) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(0)} ms`;
}

export function fmtBytes(bytes) {
  if (!Number.isFinite(bytes)) return 'n/a';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function fmtRatio(ratio) {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a';
}

/** `--quick`, `--only=a,b`. */
export function parseArgs(argv) {
  const options = { quick: false, only: undefined };
  for (const arg of argv) {
    if (arg === '--quick') options.quick = true;
    else if (arg.startsWith('--only=')) options.only = arg.slice('--only='.length).split(',').filter(Boolean);
    else if (arg === '--help' || arg === '-h') options.help = true;
    else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** Prints a progress line to stderr, so stdout stays the report. */
export function say(message) {
  process.stderr.write(`${message}\n`);
}

/**
 * A committed project in `proj` for the hook benches: `files` tiny files of bench/tree.mjs (seed
 * 28), or seven one-line files when `files` is 0; git initialised and everything committed.
 */
export function committedHookProject(proj, files) {
  fs.mkdirSync(proj, { recursive: true });
  if (files > 0) generateTree(proj, { files, seed: 28, tiny: true });
  else for (let i = 0; i < 7; i++) fs.writeFileSync(path.join(proj, `file${i}.txt`), `${i}\n`);
  git(['init', '-q'], { cwd: proj });
  git(['add', '-A'], { cwd: proj });
  git(['commit', '-qm', 'tree'], { cwd: proj });
}
