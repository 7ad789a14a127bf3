import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

// The command a `turnback run` starts, and whether it still runs once its turnback is gone. On
// Linux the command is started through util-linux's `setpriv --pdeathsig TERM`, so it is told to
// end when turnback dies; every process of the run carries TURNBACK_RUN=<session> in its
// environment (children inherit it), so a later turnback can see one still running — a command
// that ignored the signal, or a child it left — and refuse to restore under it.

/** The environment variable naming the run a process belongs to. */
export const RUN_ENV = 'TURNBACK_RUN';

/** An executable `name` on PATH (a name with a slash is taken as given), or `undefined`. */
export function onPath(name: string, envPath: string = process.env.PATH ?? ''): string | undefined {
  const candidates = name.includes('/') ? [name] : envPath.split(path.delimiter).filter((dir) => dir.length > 0).map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Not here: the next folder on PATH.
    }
  }
  return undefined;
}

let setpriv: string | null | undefined;

/** setpriv's path where the parent-death signal can be set (Linux with util-linux), once per process. */
function setprivPath(): string | undefined {
  if (setpriv === undefined) setpriv = process.platform === 'linux' ? (onPath('setpriv') ?? null) : null;
  return setpriv ?? undefined;
}

/**
 * Starts `argv` with this terminal, marked as run `sessionId`, and — where the OS allows — bound to
 * turnback's life: if turnback is killed, the command gets SIGTERM.
 */
export function spawnCommand(argv: readonly string[], sessionId: string): ChildProcess {
  const [file, ...args] = argv as [string, ...string[]];
  const env = { ...process.env, [RUN_ENV]: sessionId };
  const bind = setprivPath();
  // A command that cannot be found is spawned as itself, so the error is turnback's, not setpriv's.
  if (bind !== undefined && onPath(file) !== undefined) return spawn(bind, ['--pdeathsig', 'TERM', '--', file, ...args], { stdio: 'inherit', env });
  return spawn(file, args, { stdio: 'inherit', env });
}

/**
 * The processes still running as part of run `sessionId` (its command or anything it started), by
 * their environment; `undefined` where processes cannot be listed (no /proc). A process that
 * replaced its whole environment is not seen.
 */
export function processesOfRun(sessionId: string, procRoot = '/proc'): number[] | undefined {
  let scan = scans.get(procRoot);
  if (scan === undefined || Date.now() - scan.at > SCAN_FRESH_MS) {
    scan = { at: Date.now(), byRun: runsByProcess(procRoot) };
    scans.set(procRoot, scan);
  }
  return scan.byRun === null ? undefined : [...(scan.byRun.get(sessionId) ?? [])];
}

/** How long one scan of /proc answers: one command asks about several pictures in a moment. */
const SCAN_FRESH_MS = 1000;
const scans = new Map<string, { at: number; byRun: Map<string, number[]> | null }>();

/** Every process's TURNBACK_RUN, as run → pids (sorted); `null` where processes cannot be listed. */
function runsByProcess(procRoot: string): Map<string, number[]> | null {
  let names: string[];
  try {
    names = readdirSync(procRoot);
  } catch {
    return null;
  }
  const mark = Buffer.from(`${RUN_ENV}=`);
  const byRun = new Map<string, number[]>();
  for (const name of names) {
    if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(path.join(procRoot, name, 'environ'));
    } catch {
      // Gone meanwhile, or another user's: not ours to see.
      continue;
    }
    // Whole entries only: the name starts the environment or follows a NUL; the value ends at a NUL.
    for (let at = environ.indexOf(mark); at >= 0; at = environ.indexOf(mark, at + 1)) {
      if (at !== 0 && environ[at - 1] !== 0) continue;
      const end = environ.indexOf(0, at);
      const run = environ.toString('utf8', at + mark.length, end < 0 ? environ.length : end);
      const pids = byRun.get(run) ?? [];
      pids.push(Number(name));
      byRun.set(run, pids);
      break;
    }
  }
  for (const pids of byRun.values()) pids.sort((a, b) => a - b);
  return byRun;
}
