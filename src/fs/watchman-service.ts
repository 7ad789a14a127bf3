import { execFile } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';

// turnback's own watchman service: its socket, state, log, pid and global config in a folder of
// the caller's (the command server's, under the user's owner-only runtime folder), never the
// user's service. Why its own: watchman syncs every query through a cookie file, made in the
// first folder of `ignore_vcs` that exists (default .git, .svn, .hg), and turnback never writes
// into a user's `.git`, nor has anyone do it for it. A global config is read once, when a service
// starts (`$WATCHMAN_CONFIG_FILE`), and a running user's service has its own: so this service is
// started with a config whose `ignore_vcs` names nothing and whose `ignore_dirs` keeps .git, .hg
// and .svn unwatched: the cookie folder is then the watched root itself (watchman 4.9
// root/vcs.cpp, `applyIgnoreVCSConfiguration`), where each cookie lives for the length of one
// query, and pictures leave every `.watchman-cookie-*` name at the root out (isWatchmanCookieName).

/** The name every watchman cookie file starts with (watchman's `WATCHMAN_COOKIE_PREFIX`). */
export const WATCHMAN_COOKIE_PREFIX = '.watchman-cookie-';

/**
 * The global config of turnback's service. `ignore_vcs: []`: no cookie folder but the root;
 * `ignore_dirs`: the version-control folders are not watched at all (no event from them, no
 * cookie in them); `idle_reap_age_seconds`: a watch nobody asks about for two days is dropped
 * (a server killed before it could remove its watches), longer than a server lives idle (at most
 * one day, `TURNBACK_SERVER_IDLE_SECONDS`), so a live server's watch is never reaped under it.
 */
export const WATCHMAN_CONFIG = { ignore_vcs: [], ignore_dirs: ['.git', '.hg', '.svn'], idle_reap_age_seconds: 172_800 } as const;

/** The keys of a project's own `.watchmanconfig` that would override {@link WATCHMAN_CONFIG} for its watch. */
const OVERRIDING_KEYS = ['ignore_vcs', 'ignore_dirs'] as const;

/** True for a watchman cookie file's name (pictures leave them out at the project root). */
export function isWatchmanCookieName(name: string): boolean {
  return name.startsWith(WATCHMAN_COOKIE_PREFIX);
}

/** A running service of turnback's own. */
export interface OwnWatchman {
  /** Its socket, for {@link import('./watchman.js').startWatchman}. */
  sockname: string;
  /** Its process (from its pid file), or `undefined` when the file could not be read. */
  pid: number | undefined;
  /** Stops the service (synchronous, so it can run in an `exit` handler): a signal to its pid. */
  kill(): void;
}

/** Why no service of turnback's own could be started. */
export interface OwnWatchmanRefusal {
  refused: true;
  reason: 'not-installed' | 'stopped';
  detail: string;
}

/**
 * Starts (or finds running) the watchman service whose files live in `folder` (made owner-only
 * if missing), with {@link WATCHMAN_CONFIG} as its global config. Resolves to a refusal, never
 * rejects, when watchman is not installed or does not start.
 */
export async function ownWatchman(folder: string): Promise<OwnWatchman | OwnWatchmanRefusal> {
  const sockname = path.join(folder, 'sock');
  const pidFile = path.join(folder, 'pid');
  const configFile = path.join(folder, 'config.json');
  try {
    nodeFs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const temp = `${configFile}.${process.pid}`;
    nodeFs.writeFileSync(temp, `${JSON.stringify(WATCHMAN_CONFIG)}\n`, { mode: 0o600 });
    nodeFs.renameSync(temp, configFile);
  } catch (error) {
    return { refused: true, reason: 'stopped', detail: `the watchman service's folder ${folder} cannot be made (${(error as Error).message})` };
  }
  const flags = [`--sockname=${sockname}`, `--statefile=${path.join(folder, 'state')}`, `--logfile=${path.join(folder, 'log')}`, `--pidfile=${pidFile}`, '--no-save-state', '--no-pretty'];
  const env: NodeJS.ProcessEnv = { ...process.env, WATCHMAN_CONFIG_FILE: configFile };
  // The user's own service is never the one asked.
  delete env.WATCHMAN_SOCK;
  try {
    await new Promise<void>((resolve, reject) => {
      execFile('watchman', [...flags, 'get-sockname'], { timeout: 30_000, windowsHide: true, env }, (error) => (error === null ? resolve() : reject(error)));
    });
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    return { refused: true, reason: missing ? 'not-installed' : 'stopped', detail: missing ? 'watchman is not installed' : `watchman does not start (${(error as Error).message.split('\n')[0] ?? ''})` };
  }
  let pid: number | undefined;
  try {
    const read = Number(nodeFs.readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(read) && read > 0) pid = read;
  } catch {
    // No pid: the service cannot be stopped by signal; its watches are reaped when idle.
  }
  return {
    sockname,
    pid,
    kill() {
      if (pid === undefined) return;
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Gone already.
      }
    },
  };
}

/**
 * Why a project's own `.watchmanconfig` keeps turnback's service from vouching for it, or
 * `undefined`: one that sets `ignore_vcs` or `ignore_dirs` overrides the global config for its
 * watch (a cookie could go into `.git`, a folder pictures cover could go unreported). One that is
 * not a plain file or not JSON is refused too: what watchman makes of it cannot be told.
 */
export function projectConfigRefusal(root: string): string | undefined {
  const file = path.join(root, '.watchmanconfig');
  let stats: nodeFs.Stats;
  try {
    stats = nodeFs.lstatSync(file);
  } catch {
    return undefined;
  }
  if (!stats.isFile()) return 'the project\'s .watchmanconfig is not a plain file';
  let parsed: unknown;
  try {
    parsed = JSON.parse(nodeFs.readFileSync(file, 'utf8'));
  } catch {
    return 'the project\'s .watchmanconfig is not JSON';
  }
  if (typeof parsed !== 'object' || parsed === null) return 'the project\'s .watchmanconfig is not a JSON object';
  const set = OVERRIDING_KEYS.filter((key) => key in parsed);
  return set.length > 0 ? `the project's .watchmanconfig sets ${set.join(' and ')}, which would put watchman's cookies or blind spots where turnback cannot allow them` : undefined;
}
