import { lstatSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Where the per-user command server listens (see server.ts), computed the same way by the small
// client and by the server. Small on purpose: the client loads this and nothing heavy.

/** Bumped whenever the frames between client and server change. */
export const PROTOCOL_VERSION = 2;

/** The hidden argument that starts `main.cjs` as the server. */
export const SERVE_FLAG = '--turnback-serve';

/**
 * The commands a server runs for a client: the ones that never ask the person anything (the
 * client relays output, signals and `run`'s command, not a terminal dialogue; for `hook` it
 * relays the agent's payload from its stdin). Every other
 * command runs in the person's own process.
 */
export const SERVED_COMMANDS: ReadonlySet<string> = new Set(['run', 'list', 'show', 'diff', 'status', 'config', 'hook']);

/** The variable that turns the server off (`TURNBACK_SERVER=off`): every command runs in its own process. */
export const SERVER_SWITCH = 'TURNBACK_SERVER';

/**
 * The environment a command's outcome can depend on: what turnback reads (its own variables, the
 * XDG folders, HOME, colour, the time zone), what the git it asks reads (GIT_*, PATH, the
 * locale) and what the AWS SDK reads for a store on S3 (AWS_*: its settings and credentials). A
 * server serves only clients whose values of these are its own, so inside it `process.env`
 * answers every command as the person's own process would. TURNBACK_RUN is left out: it marks
 * the processes of a run, and a server must never carry one.
 */
const RELEVANT = /^(HOME|USER|LOGNAME|PATH|TZ|TMPDIR|TERM|NO_COLOR|FORCE_COLOR|NODE_OPTIONS|LANG|LANGUAGE|LC_[A-Z]+|XDG_[A-Z_]+|GIT_[A-Z0-9_]+|AWS_[A-Z0-9_]+|TURNBACK_[A-Z0-9_]+)$/;

/** The environment a server is started with: the client's, without TURNBACK_RUN. */
export function serverEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy.TURNBACK_RUN;
  return copy;
}

/** The part of `env` a server must share with its clients, as sorted `NAME=value` lines. */
export function relevantEnvironment(env: NodeJS.ProcessEnv): string {
  return Object.keys(env)
    .filter((name) => RELEVANT.test(name) && name !== 'TURNBACK_RUN')
    .sort()
    .map((name) => `${name}=${env[name] ?? ''}`)
    .join('\n');
}

/** Where this user's server for this build and environment listens. */
export interface ServerAddress {
  /** The socket's path. */
  socket: string;
  /** The built command file the server runs (`dist/cli/main.cjs`). */
  mainFile: string;
}

/**
 * The folder of this user's sockets: `$XDG_RUNTIME_DIR/turnback`, else `<tmp>/turnback-<uid>`,
 * created owner-only. `undefined` (no server: every command runs in-process) where it cannot be
 * made safe — not a folder, a symlink, another owner, open to others — or on a system without
 * user ids (Windows).
 */
export function socketFolder(env: NodeJS.ProcessEnv): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const runtime = env.XDG_RUNTIME_DIR;
  const folder = runtime !== undefined && path.isAbsolute(runtime) ? path.join(runtime, 'turnback') : path.join(os.tmpdir(), `turnback-${uid}`);
  // Made only when it is missing (every command asks: one lstat, not a mkdir and an lstat).
  let stats;
  try {
    stats = lstatSync(folder, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (stats === undefined) {
    try {
      mkdirSync(folder, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
    }
    try {
      stats = lstatSync(folder);
    } catch {
      return undefined;
    }
  }
  // Another user's folder, or one others can write into, could hold a socket that is not ours.
  if (!stats.isDirectory() || stats.uid !== uid || (stats.mode & 0o077) !== 0) return undefined;
  return folder;
}

/**
 * 20 hex digits naming `text`: three 32-bit FNV-1a lanes with different seeds. Not a
 * cryptographic hash, and it need not be one: the socket folder is the user's own (no one else can
 * place a socket there), so the name only has to keep builds and environments apart; and loading
 * `node:crypto` cost the client about 2.5 ms of every command's start.
 */
export function socketKey(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  let c = 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x01000193) ^ (b >>> 13);
    c = Math.imul((c ^ code) + i, 0x85ebca6b);
  }
  const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');
  return `${hex(a)}${hex(b)}${hex(c)}`.slice(0, 20);
}

/**
 * The server address for the command file `mainFile` and environment `env`, or `undefined` when
 * no server can be used. The socket's name is a hash of the protocol version, the build (the
 * file's device, inode, size and modification time: a rebuilt or upgraded turnback never talks to
 * an old server) and the relevant environment.
 */
export function serverAddress(mainFile: string, env: NodeJS.ProcessEnv): ServerAddress | undefined {
  if (env[SERVER_SWITCH] === 'off') return undefined;
  let build: string;
  try {
    const stats = statSync(mainFile);
    build = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  } catch {
    return undefined;
  }
  const folder = socketFolder(env);
  if (folder === undefined) return undefined;
  const key = socketKey(`${PROTOCOL_VERSION}\0${mainFile}\0${build}\0${relevantEnvironment(env)}`);
  const socket = path.join(folder, `${key}.sock`);
  // A socket path longer than the system's limit (about 107 bytes) cannot be bound.
  if (Buffer.byteLength(socket) > 100) return undefined;
  return { socket, mainFile };
}

/**
 * What stands at the socket path when it is not a socket (`a folder`, `a file`, `a symbolic
 * link`), else `undefined`. No server can listen there, and none removes it (it is not a dead
 * server's socket): commands run in their own process until a person removes it.
 */
export function socketBlocker(socket: string): string | undefined {
  try {
    const stats = lstatSync(socket);
    if (stats.isSocket()) return undefined;
    return stats.isDirectory() ? 'a folder' : stats.isSymbolicLink() ? 'a symbolic link' : 'a file';
  } catch {
    return undefined;
  }
}

/** The line that says what blocks the server (the caller escapes the path for a person). */
export function blockedLine(socket: string, what: string): string {
  return `${socket} is ${what}, not the command server's socket: commands run in their own process until it is removed`;
}

/**
 * True the first time a blocked socket path is reported (a marker beside it), so a person is told
 * once, not on every hook; `serverListening` clears it, so a block that comes back is told again.
 */
export function firstReportOfBlock(socket: string): boolean {
  try {
    writeFileSync(`${socket}.blocked`, '', { flag: 'wx', mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** Forgets that a block at `socket` was reported: a server listens there now. */
export function serverListening(socket: string): void {
  rmSync(`${socket}.blocked`, { force: true });
}
